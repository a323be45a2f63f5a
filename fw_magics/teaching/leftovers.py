"""What a notebook leaves behind, removed when its kernel ends, however it ends.

A tutorial's scratch server and folders must outlive its clean-up cell (Run All runs that cell
too, and the exercises after it still need them), yet not the kernel: Kernel > Restart gives a
kernel 5 s and then kills it, and a killed kernel runs no ``atexit``. ``Leftovers`` covers both:

    left = Leftovers(folders=[folder], pid=server_pid)   # a watcher process starts
    ...
    left.clean()      # now: stop the process by its PID, remove the folders (also at a normal exit)

    job_dir = scratch_folder("fw-table-")   # a temporary folder that goes with the kernel
    work = scratch_folders("fw-", "readings", "jobs")   # the same, with sub-folders work.readings, ...

The watcher (``python -m fw_magics.teaching.leftovers``) holds the read end of a pipe whose write
end only this process holds: when the kernel exits or is killed the pipe closes, and the watcher
stops the process (SIGINT, then SIGKILL after 30 s) and removes the folders. ``clean()`` does the
same at once and tells the watcher so, so that it never signals a PID the system may have reused.
"""

from __future__ import annotations

import atexit
import json
import os
import shutil
import signal
import subprocess
import sys
import time

_DONE = b"done"


def _stop(pid: int | None, wait: float = 30) -> None:
    """SIGINT ``pid`` (PostgreSQL's fast shutdown), SIGKILL it if still there after ``wait`` s."""
    if pid is None:
        return
    try:
        os.kill(pid, signal.SIGINT)
    except ProcessLookupError:
        return
    deadline = time.monotonic() + wait
    while time.monotonic() < deadline:
        try:
            if os.waitpid(pid, os.WNOHANG)[0]:  # our child: reaped
                return
        except ChildProcessError:  # not our child (the watcher's case): is it still there?
            if not _alive(pid):
                return
        time.sleep(0.05)
    try:
        os.kill(pid, signal.SIGKILL)
    except ProcessLookupError:
        pass


def _alive(pid: int) -> bool:
    """Whether ``pid`` runs (a zombie waiting for its new parent to reap it does not)."""
    try:
        with open(f"/proc/{pid}/stat") as f:
            return f.read().rsplit(")", 1)[1].split()[0] != "Z"
    except OSError:
        try:
            os.kill(pid, 0)
            return True
        except ProcessLookupError:
            return False


def _remove(folders) -> None:
    for folder in folders:
        shutil.rmtree(folder, ignore_errors=True)


class Leftovers:
    """A process to stop and folders to remove when this process ends (see the module docstring)."""

    def __init__(self, folders=(), pid: int | None = None):
        self.folders, self.pid = [os.fspath(f) for f in folders], pid
        self.watcher = subprocess.Popen(
            [sys.executable, "-m", __name__, json.dumps({"pid": pid, "folders": self.folders})],
            stdin=subprocess.PIPE, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
            start_new_session=True)  # not in the kernel's process group: an interrupt does not reach it
        self.cleaned = False
        atexit.register(self.clean)

    def clean(self, stopped: bool = False) -> None:
        """Stop the process (unless the caller ``stopped`` it) and remove the folders now, once; the
        watcher then exits doing nothing."""
        if self.cleaned:
            return
        if not stopped:
            _stop(self.pid)
        _remove(self.folders)
        self.release()

    def release(self) -> None:
        """Leave the process and the folders to the caller from now on: nothing is stopped or removed,
        now or at the end (the watcher exits doing nothing)."""
        if self.cleaned:
            return
        self.cleaned = True
        atexit.unregister(self.clean)
        try:
            self.watcher.stdin.write(_DONE)
            self.watcher.stdin.close()
        except (BrokenPipeError, ValueError):
            pass
        self.watcher.wait()


def scratch_folder(prefix: str = "fw-") -> str:
    """A new temporary folder, removed when this process ends, however it ends."""
    import tempfile

    folder = tempfile.mkdtemp(prefix=prefix)
    Leftovers(folders=[folder])
    return folder


def scratch_folders(prefix: str, *names: str):
    """A :func:`scratch_folder` with a sub-folder per name: ``.root`` and one attribute per name
    (``scratch_folders("fw-backlog-", "readings", "jobs").readings``)."""
    import types

    for name in names:
        if not name.isidentifier():
            raise ValueError(f"folder name {name!r}; accepted: a Python identifier, such as 'readings'")
    folders = types.SimpleNamespace(root=scratch_folder(prefix))
    for name in names:
        os.mkdir(os.path.join(folders.root, name))
        setattr(folders, name, os.path.join(folders.root, name))
    return folders


def main(spec: str) -> None:
    """The watcher: wait for the pipe to close; unless told ``done``, stop the process, remove the folders."""
    told = sys.stdin.buffer.read()
    if told != _DONE:
        job = json.loads(spec)
        _stop(job["pid"])
        _remove(job["folders"])


if __name__ == "__main__":
    main(sys.argv[1])
