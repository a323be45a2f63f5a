"""Where jobs were run: this process's jobs, and a small per-user index of jobs. No Spark.

``execute()`` registers every job it runs, so that ``%fw_recover`` finds it again after a
kernel restart, whatever directory it was run in:

* in memory, for the jobs this process ran (``ran_here()``);
* in the user's job index (``index_path()``): ``$FW_JOB_INDEX``, else
  ``$XDG_DATA_HOME/fw-magics/jobs.json``, else ``~/.local/share/fw-magics/jobs.json``. It is
  JSON (``{"version": 1, "jobs": [{"root", "name", "registered"}, ...]}``), newest last,
  at most ``MAX_ENTRIES`` of them, written atomically (a temporary file renamed into
  place) under an exclusive ``flock`` where the system has one.

Both ``execute()`` and every streaming job register (``recovery.JobLog.acquire``). Reading is
tolerant: a missing, unreadable or damaged index reads as empty (the next registration writes a
good one), malformed entries are skipped, and entries whose job folder is gone or cannot be read
(no event log any more: a deleted temporary folder, say) are pruned from the index quietly, with
no warning. The index only points at job folders; everything about a job is read from its own
event log.
"""

from __future__ import annotations

import contextlib
import json
import os
import tempfile
import time

from .filesystem import Storage, is_local
from .paths import EVENTS

MAX_ENTRIES = 200
_here: dict[str, str] = {}  # root -> job name, in the order this process ran them


def index_path() -> str:
    """The per-user job index: ``$FW_JOB_INDEX``, else under ``$XDG_DATA_HOME``, else ``~/.local/share``."""
    explicit = os.environ.get("FW_JOB_INDEX")
    if explicit:
        return os.path.abspath(os.path.expanduser(explicit))
    data = os.environ.get("XDG_DATA_HOME") or os.path.join(os.path.expanduser("~"), ".local", "share")
    return os.path.join(os.path.abspath(data), "fw-magics", "jobs.json")


def normalized_root(root: str) -> str:
    """A job folder as the index keeps it: an absolute path, or the URI as given."""
    return os.path.abspath(root) if is_local(root) and "://" not in root else root.rstrip("/")


def has_event_log(root: str) -> bool:
    """Whether ``root`` still holds a job: a non-empty event-log folder."""
    try:
        storage = Storage(root)
        return bool(storage.listdir(storage.path(EVENTS)))
    except Exception:  # an unreachable file system: nothing to show from here
        return False


def register(root: str, name: str) -> None:
    """Remember a job this process runs, here and in the user's index (never fails the job)."""
    root = normalized_root(root)
    _here.pop(root, None)
    _here[root] = name
    path = index_path()
    try:
        os.makedirs(os.path.dirname(path), exist_ok=True)
        with _exclusive(path):
            entries = [e for e in _read(path) if e["root"] != root]
            entries.append({"root": root, "name": name, "registered": round(time.time(), 3)})
            _write(path, entries[-MAX_ENTRIES:])
    except OSError:  # a read-only home, a full disk: the job runs anyway, it is just not indexed
        pass


def ran_here() -> list[tuple[str, str]]:
    """(root, name) of the jobs this process ran whose folders still exist, oldest first."""
    return [(root, name) for root, name in _here.items() if has_event_log(root)]


def registered() -> list[tuple[str, str]]:
    """(root, name) of the jobs in the user's index whose folders still exist, oldest first; the
    others are pruned from the index."""
    path = index_path()
    entries = _read(path)
    live = [e for e in entries if has_event_log(e["root"])]
    if len(live) < len(entries):
        _prune(path, {e["root"] for e in entries} - {e["root"] for e in live})
    return [(e["root"], e["name"]) for e in live]


def _prune(path: str, dead: set[str]) -> None:
    """Remove the entries of ``dead`` job folders from the index (never fails: it is only tidying)."""
    try:
        with _exclusive(path):
            entries = _read(path)  # again, under the lock: a job registered meanwhile stays
            kept = [e for e in entries if e["root"] not in dead]
            if len(kept) < len(entries):
                _write(path, kept)
    except OSError:
        pass


def _read(path: str) -> list[dict]:
    try:
        with open(path, encoding="utf-8") as f:
            data = json.load(f)
    except (OSError, ValueError):
        return []
    jobs = data.get("jobs") if isinstance(data, dict) else None
    if not isinstance(jobs, list):
        return []
    return [{"root": e["root"], "name": e["name"], "registered": e.get("registered")} for e in jobs
            if isinstance(e, dict) and isinstance(e.get("root"), str) and isinstance(e.get("name"), str)]


def _write(path: str, entries: list[dict]) -> None:
    folder = os.path.dirname(path)
    fd, tmp = tempfile.mkstemp(prefix=".jobs-", suffix=".tmp", dir=folder)
    try:
        with os.fdopen(fd, "w", encoding="utf-8") as f:
            json.dump({"version": 1, "jobs": entries}, f, indent=1)
            f.flush()
            os.fsync(f.fileno())
        os.replace(tmp, path)
    except BaseException:
        with contextlib.suppress(OSError):
            os.remove(tmp)
        raise


@contextlib.contextmanager
def _exclusive(path: str):
    """Hold an exclusive lock on ``path``'s lock file while reading and rewriting the index."""
    try:
        import fcntl
    except ImportError:  # no flock (Windows): the atomic rename still keeps the file whole
        yield
        return
    with open(path + ".lock", "a") as lock:
        fcntl.flock(lock.fileno(), fcntl.LOCK_EX)
        try:
            yield
        finally:
            fcntl.flock(lock.fileno(), fcntl.LOCK_UN)
