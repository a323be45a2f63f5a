"""A cancelled action's Python workers end themselves, where Spark's own kill misses them.

Spark kills the Python worker of a cancelled task from a monitor thread, but only if the task
has not completed by the time the monitor looks (``PythonRunner.MonitorThread``, whose own
comment calls this a race). A task interrupted while it is still feeding its worker input
completes at once (the input iterator throws ``TaskKilledException``), the monitor sees a
completed task and leaves the worker alone, and the worker runs the user's function to its
end for nothing: a function that sleeps, or reads a service, or works through a 10,000-record
batch, goes on for minutes after *Kernel > Interrupt* said it stopped.

So fw-magics closes the gap itself, for executors on the driver's machine (``local[*]``,
a local Spark Connect server): ``mark(tag)`` leaves a file named for the cancelled action's
job tag in a folder of the machine's temp directory, and every user function fw-magics hands
to Spark runs inside ``watched_call(...)``, which reads the task's job tags (the ``spark.job.tags``
local property) and, while the function runs, has a thread look for a mark of one of them
every ``POLL`` seconds. A marked worker kills itself with SIGKILL, as Spark's monitor would.
On executors elsewhere the marks are not seen, and Spark's monitor is all there is.
"""

from __future__ import annotations

import contextlib
import os
import re
import signal
import tempfile
import threading
import time

#: The job tag of an action (``fw_magics.spark.actions``): also found inside Spark Connect's tags.
TAG = re.compile(r"fw-magics-[0-9a-f]{12}")
POLL = 0.5  # seconds between a watched worker's looks for a mark
KEEP = 3600.0  # seconds a mark is kept (longer than any task outlives its cancel)

_lock = threading.Lock()
_watched: dict[object, frozenset[str]] = {}  # a token per running call -> its task's job tags
_watcher: threading.Thread | None = None


def marks_dir() -> str:
    """The folder of marks: one per user on this machine, shared by the driver and local workers."""
    uid = os.getuid() if hasattr(os, "getuid") else "user"
    return os.path.join(tempfile.gettempdir(), f"fw-magics-cancelled-{uid}")


def mark(tag: str) -> None:
    """Mark the action tagged ``tag`` as cancelled (and drop marks older than ``KEEP``)."""
    folder = marks_dir()
    try:
        os.makedirs(folder, exist_ok=True)
        open(os.path.join(folder, tag), "w").close()
        old = time.time() - KEEP
        for entry in os.scandir(folder):
            if entry.stat().st_mtime < old:
                os.unlink(entry.path)
    except OSError:  # a read-only or full temp directory: Spark's monitor still does its part
        pass


def cancelled() -> bool:
    """Whether this task's action is marked cancelled: a commit that sees it does not commit (a
    worker between two of the watcher's looks would otherwise commit after its job's stop returned)."""
    folder = marks_dir()
    return any(os.path.exists(os.path.join(folder, tag)) for tag in _task_tags())


def watched_call(fn, *args):
    """Iterate ``fn(*args)`` in a Python worker, killing the worker if its action is cancelled."""
    with _watching():
        yield from fn(*args)


@contextlib.contextmanager
def _watching():
    tags = _task_tags()
    if not tags:
        yield
        return
    token = object()
    with _lock:
        _watched[token] = tags
        _start_watcher()
    try:
        yield
    finally:
        with _lock:
            del _watched[token]


def _task_tags() -> frozenset[str]:
    try:
        from pyspark import TaskContext
    except ImportError:
        return frozenset()
    context = TaskContext.get()
    if context is None:  # not in a Spark task (a function called on the driver)
        return frozenset()
    return frozenset(TAG.findall(context.getLocalProperty("spark.job.tags") or ""))


def _start_watcher() -> None:
    global _watcher
    if _watcher is None or not _watcher.is_alive():
        _watcher = threading.Thread(target=_watch, name="fw-magics cancel watch", daemon=True)
        _watcher.start()


def _watch() -> None:
    global _watcher
    folder = marks_dir()
    while True:
        time.sleep(POLL)
        with _lock:
            if not _watched:  # the worker went back to Spark's pool: look again when it runs one
                _watcher = None
                return
            tags = set().union(*_watched.values())
        if any(os.path.exists(os.path.join(folder, tag)) for tag in tags):
            os.kill(os.getpid(), signal.SIGKILL)
