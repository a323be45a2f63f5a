"""JobLock: one process runs a job at a time; a lock left by a dead process is taken over.

``job_dir/LOCK`` holds JSON: the holder's pid, host, start time, last heartbeat and a random
token. How it stays exclusive:

* **Never an empty or half-written LOCK.** The content is written to a private temporary file
  (random name, ``O_CREAT|O_EXCL|O_NOFOLLOW``) and ``os.link``-ed into place: an atomic
  create-if-absent that appears with its content.
* **Taking over a stale lock** (its pid is dead on this host, or its heartbeat is older than
  ``stale_after``, or its content is damaged) is an atomic ``os.rename`` of a fresh temporary
  file over LOCK, done only if LOCK is still the file that was judged stale (same inode), then
  read back to check our token won. A plain line (``notices.notice``: no warning, since nothing
  is wrong with the caller's code) names the old holder with local dates and why it was stale.
* **A token checked before every heartbeat and before release.** Each heartbeat (every
  ``stale_after / 3`` s) first reads LOCK: if it no longer carries our token, another process
  took the job over (we were paused or too slow for ``stale_after``), so we stop beating and
  never write or delete its LOCK. The loss is recorded in ``lost``; ``release()`` then raises
  :class:`JobLockLostError` (and ``with JobLock(...)`` raises it when the block ends, or only
  warns when the block is already raising an error of its own, which is not replaced).
* **Check-and-write is atomic among the processes of one machine**: acquire, each heartbeat
  and release hold an ``flock`` on the job directory for the few microseconds between reading
  LOCK and replacing or removing it. Across machines (a shared drive without ``flock``) the
  token check still makes a holder that lost the lock learn it at its next heartbeat.
* **Nothing in the job directory is followed or trusted**: LOCK is opened with ``O_NOFOLLOW``
  and must be a regular file (a symlink, directory or FIFO is refused in one line), at most
  64 KiB is read, and content that is not a JSON object with the expected fields is damaged
  (taken over with a line saying so), never a crash.
"""

from __future__ import annotations

import contextlib
import errno
import glob
import json
import math
import os
import secrets
import socket
import stat
import threading
import time
import warnings

from ..errors import JobLockedError, JobLockLostError
from ..notices import notice
from ..processes import alive
from .filesystem import local_path
from .paths import LOCK

try:
    import fcntl
except ImportError:  # pragma: no cover - not on Windows: no guard, the token check still holds
    fcntl = None


#: The most of LOCK ever read; a real one is about 200 bytes.
MAX_LOCK_BYTES = 65536
#: How long acquire and release wait for another process's check-and-write on the same LOCK.
GUARD_WAIT = 5.0


def _local(moment) -> str:
    try:
        return time.strftime("%Y-%m-%d %H:%M:%S", time.localtime(moment))
    except (OverflowError, OSError, ValueError, TypeError):
        return "an unreadable time"


class _Found:
    """What LOCK holds: a holder (pid, host, times, token) or a damage, and which file it was."""

    def __init__(self, ident: tuple, holder: dict | None, damage: str | None):
        self.ident, self.holder, self.damage = ident, holder, damage

    @property
    def token(self):
        return self.holder.get("token") if self.holder else None


class JobLock:
    """``job_dir/LOCK`` with our pid, host, token and a heartbeat refreshed every ``stale_after / 3`` s."""

    def __init__(self, job_dir: str, stale_after: float = 30.0):
        self.dir = local_path(job_dir)  # file:/p, file:///p and file://localhost/p are all /p
        self.path = os.path.join(self.dir, LOCK)
        self.stale_after = stale_after
        self.host = socket.gethostname()
        self.lost: str | None = None  # why this process lost the lock, once it has
        self._token = secrets.token_hex(16)
        self._started = time.time()
        self._stop = threading.Event()
        self._thread: threading.Thread | None = None
        self._mine = False

    # -- the public interface -----------------------------------------------------------

    def acquire(self) -> JobLock:
        if "://" in self.path:  # a remote job directory: no atomic create here; document and go on
            return self
        os.makedirs(self.dir, exist_ok=True)
        self._started = time.time()
        for _ in range(5):
            with self._guard(GUARD_WAIT, "take"):
                self._remove_old_temporaries()
                if self._take():
                    self._mine = True
                    self._thread = threading.Thread(target=self._beat, name="fw-job-lock", daemon=True)
                    self._thread.start()
                    return self
        raise JobLockedError(f"could not take the lock {self.path}; other processes keep taking it")

    def held_by(self) -> dict | None:
        """The live holder's pid, host and times, or None when the job is not locked (or stale, damaged)."""
        try:
            found = self._read()
        except JobLockedError:
            return None
        if found is None or found.holder is None or self._stale(found.holder):
            return None
        return found.holder

    def release(self) -> None:
        """Stop the heartbeat and remove LOCK if it is still ours; raise JobLockLostError if it was not."""
        self._stop.set()
        if self._thread is not None and self._thread is not threading.current_thread():
            self._thread.join()
        if self._mine and self.lost is None:
            try:
                with self._guard(GUARD_WAIT, "release"):
                    found = self._read_quietly()
                    if found is not None and found.token == self._token:
                        os.remove(self.path)
                    else:
                        self._note_lost(found)
            except JobLockedError as busy:  # leave LOCK: it goes stale and is taken over, said in a line
                warnings.warn(f"{busy}; leaving {self.path} behind", stacklevel=2)
        self._mine = False
        if self.lost is not None:
            raise JobLockLostError(self.lost)

    def __enter__(self) -> JobLock:
        return self.acquire()

    def __exit__(self, kind, error, traceback) -> None:
        try:
            self.release()
        except JobLockLostError as lost:
            if kind is None:
                raise
            warnings.warn(str(lost), stacklevel=2)  # the block's own error says more: keep it

    # -- taking the lock ------------------------------------------------------------------

    def _take(self) -> bool:
        """One attempt: create LOCK, or replace a stale one; True when it is ours."""
        temporary = self._write_temporary()
        try:
            try:
                os.link(temporary, self.path)
            except FileExistsError:
                found = self._read()
                if found is None:
                    return False  # removed meanwhile: try again
                if found.holder is not None and not self._stale(found.holder):
                    raise JobLockedError(self._busy_message(found.holder)) from None
                notice(self._stale_message(found))  # a note, not a warning: nothing for the caller to change
                try:
                    if self._ident(os.lstat(self.path)) != found.ident:
                        return False  # not the file judged stale any more
                except FileNotFoundError:
                    return False
                os.rename(temporary, self.path)
            mine = self._read_quietly()
            return mine is not None and mine.token == self._token
        finally:
            with contextlib.suppress(FileNotFoundError):
                os.remove(temporary)

    def _content(self) -> bytes:
        return json.dumps({"pid": os.getpid(), "host": self.host, "heartbeat": time.time(),
                           "started": self._started, "token": self._token}).encode()

    def _write_temporary(self) -> str:
        """Our content in a new private file beside LOCK (never an existing file or a link)."""
        path = f"{self.path}.{secrets.token_hex(8)}.tmp"
        fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL | getattr(os, "O_NOFOLLOW", 0), 0o644)
        try:
            os.write(fd, self._content())
        except BaseException:
            os.close(fd)
            os.remove(path)
            raise
        os.close(fd)
        return path

    def _remove_old_temporaries(self) -> None:
        """Temporary files of processes killed while writing one (older than ``stale_after``)."""
        for path in glob.glob(glob.escape(self.path) + ".*.tmp"):
            with contextlib.suppress(OSError):
                info = os.lstat(path)
                if stat.S_ISREG(info.st_mode) and time.time() - info.st_mtime > max(self.stale_after, 60):
                    os.remove(path)

    # -- reading LOCK ---------------------------------------------------------------------

    def _read(self) -> _Found | None:
        """LOCK's holder (or damage), None when there is no LOCK; JobLockedError when it is no file to read."""
        try:
            fd = os.open(self.path, os.O_RDONLY | getattr(os, "O_NOFOLLOW", 0) | getattr(os, "O_NONBLOCK", 0))
        except FileNotFoundError:
            return None
        except OSError as error:
            with contextlib.suppress(OSError):
                if stat.S_ISLNK(os.lstat(self.path).st_mode):
                    raise JobLockedError(
                        f"{self.path} is a symbolic link; fw-magics never follows links in a job directory: "
                        "remove it if no job is running"
                    ) from None
            raise JobLockedError(f"cannot read {self.path}: {error.strerror or error}") from None
        try:
            info = os.fstat(fd)
            if not stat.S_ISREG(info.st_mode):
                raise JobLockedError(
                    f"{self.path} is not a regular file; remove it if no job is running"
                )
            data = os.read(fd, MAX_LOCK_BYTES + 1)
        finally:
            os.close(fd)
        holder, damage = _parse(data)
        return _Found(self._ident(info), holder, damage)

    def _read_quietly(self) -> _Found | None:
        try:
            return self._read()
        except JobLockedError:
            return None

    @staticmethod
    def _ident(info: os.stat_result) -> tuple:
        return (info.st_dev, info.st_ino)

    def _stale(self, holder: dict) -> bool:
        if holder["host"] == self.host and not alive(holder["pid"]):
            return True
        return time.time() - holder["heartbeat"] > self.stale_after

    def _busy_message(self, holder: dict) -> str:
        return (f"job in {self.dir} is being run by pid {holder['pid']} on host {holder['host']} since "
                f"{_local(holder.get('started', holder['heartbeat']))}; wait for it, or remove LOCK if that "
                "process is gone")

    def _stale_message(self, found: _Found) -> str:
        if found.holder is None:
            return f"taking over a damaged lock {self.path} ({found.damage})"
        holder = found.holder
        started = f"started {_local(holder['started'])}, " if "started" in holder else ""
        why = ("that process is gone" if holder["host"] == self.host and not alive(holder["pid"])
               else f"no heartbeat for {time.time() - holder['heartbeat']:,.0f} s")
        return (f"taking over a stale lock {self.path} left by pid {holder['pid']} on host {holder['host']} "
                f"({started}last heartbeat {_local(holder['heartbeat'])}, local time): {why}")

    # -- heartbeat and loss ------------------------------------------------------------------

    def _beat(self) -> None:
        period = self.stale_after / 3
        while not self._stop.wait(period):
            try:
                with self._guard(min(period, 1.0), "beat"):
                    found = self._read_quietly()
                    if found is None or found.token != self._token:
                        self._note_lost(found)
                        return
                    temporary = self._write_temporary()
                    try:
                        os.rename(temporary, self.path)
                    except OSError:
                        os.remove(temporary)
                        raise
            except (JobLockedError, OSError):
                continue  # busy or a passing error (a full disk): try again at the next beat

    def _note_lost(self, found: _Found | None) -> None:
        if self.lost is not None:
            return
        if found is None:
            how = "its LOCK was removed"
        elif found.holder is None:
            how = f"its LOCK was replaced by a damaged one ({found.damage})"
        else:
            taker = found.holder
            how = (f"pid {taker['pid']} on host {taker['host']} took over at "
                   f"{_local(taker.get('started', taker['heartbeat']))}")
        self.lost = (
            f"this process lost the lock of the job in {self.dir} while running it: {how} (this process "
            f"was paused or too slow for more than {self.stale_after:g} s); the job's results may mix two "
            "runs: run it again, or resume it once the other run has finished"
        )

    # -- the guard ----------------------------------------------------------------------------

    @contextlib.contextmanager
    def _guard(self, wait: float, what: str):
        """Hold an flock on the job directory (when the file system has them) for one check-and-write."""
        if fcntl is None:
            yield
            return
        try:
            fd = os.open(self.dir, os.O_RDONLY | getattr(os, "O_DIRECTORY", 0))
        except OSError:
            yield
            return
        try:
            deadline = time.monotonic() + wait
            while True:
                try:
                    fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
                    break
                except BlockingIOError:
                    if time.monotonic() >= deadline:
                        raise JobLockedError(
                            f"another process has been using the lock of {self.dir} for {wait:g} s "
                            f"(could not {what} it); try again"
                        ) from None
                    time.sleep(0.002)
                except OSError as error:
                    if error.errno in (errno.ENOLCK, errno.EINVAL, errno.EOPNOTSUPP, errno.EBADF):
                        break  # no flock on this file system: the token check still holds
                    raise
            yield
        finally:
            os.close(fd)  # releases the flock


def _parse(data: bytes) -> tuple[dict | None, str | None]:
    """(holder, None) for a well-formed LOCK, else (None, what is wrong with it)."""
    if len(data) > MAX_LOCK_BYTES:
        return None, f"more than {MAX_LOCK_BYTES} bytes"
    if not data.strip():
        return None, "empty"
    try:
        value = json.loads(data.decode("utf-8"))
    except (ValueError, RecursionError):
        return None, "not JSON"
    if not isinstance(value, dict):
        return None, f"a JSON {type(value).__name__}, not an object"
    pid, host, heartbeat = value.get("pid"), value.get("host"), value.get("heartbeat")
    if isinstance(pid, bool) or not isinstance(pid, int) or pid <= 0:
        return None, f"pid {pid!r:.40} is not a process id"
    if not isinstance(host, str):
        return None, "host is not a string"
    if isinstance(heartbeat, bool) or not isinstance(heartbeat, (int, float)) or not math.isfinite(heartbeat):
        return None, "heartbeat is not a time"
    if heartbeat > time.time() + 24 * 3600:
        return None, f"heartbeat {_local(heartbeat)} is in the future"
    started = value.get("started")
    holder = {"pid": pid, "host": host, "heartbeat": float(heartbeat)}
    if isinstance(started, (int, float)) and not isinstance(started, bool) and math.isfinite(started):
        holder["started"] = float(started)
    if isinstance(value.get("token"), str):
        holder["token"] = value["token"]
    return holder, None


