"""One job's folder as every kind of job keeps it: the lock, the event log, the index, the last word. No Spark.

``execute()`` (``fw_magics.runtime``) and every streaming job (``fw_magics.runtime.streaming``) open their
job through a ``JobLog``, so a guarantee one kind of job has, the other has too:

* the folder is checked (never a symbolic link), the job's ``LOCK`` is taken (one live process
  per job; a dead holder's lock is taken over), and the job is registered in the per-user
  index, so that ``%fw_recover`` finds it from any kernel;
* the event log is read back (``read()``) and then written (``begin()``, ``emit()``): every
  event also goes to the ``event_written`` hooks (the widgets), and ``submitted()`` records the
  graph, its fingerprint, the content fingerprint and the notebook cell that submitted the job;
* the job's last word is written once (``end()``): finished, failed, or cancelled, the event
  an interruption leaves (Kernel > Interrupt, a Stop button, or the Python process exiting under
  a running job: a kernel restart). A second last word is dropped, so a failure that follows
  an interruption (the session went away) never replaces it, and nothing is written once the
  log is closed;
* a kernel asked to shut down (Kernel > Restart or Shut Down: ipykernel's ``do_shutdown`` sets
  the shell's ``exit_now``) records every running job's interruption at that moment, on disk
  before ipykernel terminates Spark's JVM: Jupyter kills a kernel that has not exited 5 s after
  the request, and what the job's own threads see of the JVM going (and the exit handlers)
  may come later than that on a busy machine;
* ``close()`` flushes, stops the writer and releases the lock, once, whoever calls it.

A process killed outright (``kill -9``) writes nothing: its log ends without a last word, which
replay reads as an interruption (``JobState.status == "running"`` with no live holder).
"""

from __future__ import annotations

import atexit
import os
import stat
import sys
import threading
import warnings
import weakref

from .. import hooks
from ..errors import JobLockLostError, JobStorageError, error_summary, hinted
from . import events, index
from .event_store import JobEventStore
from .filesystem import Storage
from .lock import JobLock
from .paths import EVENTS

#: The cause an interruption by the process exiting records (a kernel restart or shutdown).
EXITING = "interrupted: the Python process exited (a kernel restart or shutdown) while the job ran"
#: The cause a kernel's shutdown request records (Kernel > Restart or Shut Down), before anything stops.
SHUTDOWN = "interrupted: the kernel was asked to shut down (a kernel restart or shutdown) while the job ran"

_open_logs: set[JobLog] = set()
_open_lock = threading.Lock()
_watched_shells: weakref.WeakSet = weakref.WeakSet()  # the IPython shells whose exit_now is observed


def current_cell() -> str | None:
    """The source of the notebook cell running now, when inside IPython."""
    try:
        from IPython import get_ipython
    except ImportError:
        return None
    shell = get_ipython()
    history = shell.user_ns.get("_ih") if shell is not None else None
    return history[-1] if history else None


def refuse_linked_folder(storage: Storage) -> None:
    """A job folder that is a symbolic link or not a folder is refused in one line."""
    if not storage.local:
        return
    try:
        mode = os.lstat(storage.base).st_mode
    except OSError:
        return
    if stat.S_ISLNK(mode) or not stat.S_ISDIR(mode):
        what = "a symbolic link" if stat.S_ISLNK(mode) else "not a folder"
        raise JobStorageError(f"the job folder {storage.base} is {what}; fw-magics never follows links in a job "
                              "directory: remove it, or choose another job_name")


class JobLog:
    """The folder, lock, event log and index entry of the job ``job_name`` at ``root``."""

    def __init__(self, root: str, job_name: str):
        self.root, self.job_name = root, job_name
        self.storage = Storage(root)
        self.store = JobEventStore(self.storage.path(EVENTS))
        self.lock = JobLock(root)
        self.ended: dict | None = None  # the last word, once written
        self._writing = False
        self._locked = False
        self._guard = threading.Lock()

    @property
    def where(self) -> str:
        return f"job {self.job_name!r} in {self.root}"

    # -- opening ------------------------------------------------------------------------------

    def acquire(self) -> None:
        """Check the folder, take the lock (``OSError`` where the folder cannot be written) and
        register the job in the per-user index."""
        refuse_linked_folder(self.storage)
        try:
            self.lock.acquire()
        except (NotADirectoryError, FileExistsError) as error:  # a file where a folder must be
            raise JobStorageError(f"{self.where} cannot be made: {error.filename or self.root} is a file, not a "
                                  "folder; accepted for job_dir: a folder (or where one can be made)") from None
        self._locked = True
        index.register(self.root, self.job_name)

    def read(self) -> list[dict]:
        """The events recorded so far, in write order (unreadable records skipped with a warning)."""
        return self.store.read_events()

    def clear(self, *names: str) -> None:
        """Remove the named folders of the job (its recorded run, set aside before a run afresh)."""
        for name in names:
            self.storage.remove_tree(self.storage.path(name))

    def begin(self) -> None:
        """Start writing events (after ``read()``); the log is closed by ``close()`` or at exit."""
        self.store.start()
        with self._guard:
            self._writing = True
        with _open_lock:
            _open_logs.add(self)
            # last registered, first called: before the exit handlers of the Spark session it runs on
            atexit.unregister(_interrupt_open_logs)
            atexit.register(_interrupt_open_logs)
        watch_shell_exit()

    # -- writing --------------------------------------------------------------------------------

    def emit(self, event: dict) -> None:
        """Write one event (and tell the hooks); nothing once the log is closed."""
        with self._guard:
            if not self._writing:
                return
            self.store.write_event(event)
        hooks.event_written(self.store, event)

    def submitted(self, graph, content: dict | None, **detail) -> None:
        """The job's first event: its graph, fingerprints and the cell that submitted it."""
        self.emit(events.job_submitted(self.job_name, graph.to_json(), graph.fingerprint(), cell=current_cell(),
                                       content=content, **detail))

    def flush(self) -> None:
        with self._guard:
            writing = self._writing
        if writing:
            self.store.flush()

    def end(self, event: dict) -> bool:
        """Write the job's last word (``job_finished``, ``job_failed``, ``job_cancelled``) unless one
        was written already; True when this one was."""
        with self._guard:
            if self.ended is not None or not self._writing:
                return False
            self.ended = event
        self.emit(event)
        return True

    def failed(self, error: BaseException) -> bool:
        return self.end(events.job_failed(hinted(error_summary(error))))

    def cancelled(self, cause: str) -> bool:
        return self.end(events.job_cancelled(cause))

    # -- closing --------------------------------------------------------------------------------

    def close(self, failure: BaseException | None = None) -> None:
        """Flush and stop the event log, then release the lock; once (later calls do nothing).

        With ``failure`` (the job's own error, being raised), a storage error or a lost lock
        only warns: the job's own error says more.
        """
        with _open_lock:
            _open_logs.discard(self)
        with self._guard:
            writing, self._writing = self._writing, False
            locked, self._locked = self._locked, False
        try:
            if writing:
                try:
                    self.store.stop()
                except JobStorageError:
                    if failure is None:
                        raise
        finally:
            if locked:
                try:
                    self.lock.release()
                except JobLockLostError as lost:
                    if failure is None:
                        raise
                    warnings.warn(str(lost), stacklevel=2)

    def interrupt_now(self, cause: str) -> None:
        """Record the interruption ``cause`` as the last word (unless there is one) and put it on
        disk now; the log stays open for whatever the job writes while it stops."""
        self.cancelled(cause)
        try:
            self.flush()
        except Exception:  # the process is going: nothing more can be done
            pass

    def interrupt_at_exit(self) -> None:
        """The process is exiting under this running job: record the interruption, then close."""
        self.cancelled(EXITING)
        try:
            self.close(failure=RuntimeError(EXITING))
        except Exception:  # the process is going: nothing more can be done
            pass


def _interrupt_open_logs() -> None:
    """At interpreter exit (a kernel restart), every job still running is recorded as interrupted
    before Spark's own exit handlers take the session away from under its threads."""
    with _open_lock:
        logs = list(_open_logs)
    for log in logs:
        log.interrupt_at_exit()


def _record_shutdown(change) -> None:
    """The shell is to exit (``exit_now`` set: a kernel's shutdown request): every running job's
    interruption goes on disk now, before the kernel stops Spark's JVM and before it is killed."""
    if not change["new"]:
        return
    with _open_lock:
        logs = list(_open_logs)
    for log in logs:
        log.interrupt_now(SHUTDOWN)


def watch_shell_exit(shell=None) -> None:
    """Observe the IPython shell's ``exit_now`` (the one running here, when IPython is), once a shell."""
    if shell is None:
        if "IPython" not in sys.modules:  # no IPython imported: no shell to watch
            return
        shell = sys.modules["IPython"].get_ipython()
    if shell is None or not shell.has_trait("exit_now"):
        return
    with _open_lock:
        if shell in _watched_shells:
            return
        _watched_shells.add(shell)
    shell.observe(_record_shutdown, names="exit_now")
