"""JobLock: one process runs a job at a time; a lock left by a dead process is taken over."""

from __future__ import annotations

import json
import os
import socket
import threading
import time
import warnings

from ..errors import JobLockedError


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    return True


class JobLock:
    """``job_dir/LOCK`` with our pid, host and a heartbeat refreshed every ``stale_after / 3`` s."""

    def __init__(self, job_dir: str, stale_after: float = 30.0):
        self.path = os.path.join(job_dir.replace("file://", ""), "LOCK")
        self.stale_after = stale_after
        self.host = socket.gethostname()
        self._stop = threading.Event()
        self._thread: threading.Thread | None = None
        self._mine = False

    def _content(self) -> bytes:
        return json.dumps({"pid": os.getpid(), "host": self.host, "heartbeat": time.time(),
                           "started": getattr(self, "_started", time.time())}).encode()

    def acquire(self) -> JobLock:
        if "://" in self.path:  # a remote job directory: no atomic create here; document and go on
            return self
        os.makedirs(os.path.dirname(self.path), exist_ok=True)
        self._started = time.time()
        for _ in range(3):
            try:
                fd = os.open(self.path, os.O_CREAT | os.O_EXCL | os.O_WRONLY, 0o644)
            except FileExistsError:
                holder = self.held_by()
                if holder is not None:
                    since = time.strftime("%H:%M:%S", time.localtime(holder.get("started", 0)))
                    raise JobLockedError(
                        f"job in {os.path.dirname(self.path)} is being run by pid {holder.get('pid')} on host "
                        f"{holder.get('host')} since {since}; wait for it, or remove LOCK if that process is gone"
                    ) from None
                warnings.warn(f"taking over a stale lock {self.path} left by {self._holder()}")
                try:
                    os.remove(self.path)
                except FileNotFoundError:
                    pass
                continue
            with os.fdopen(fd, "wb") as f:
                f.write(self._content())
            self._mine = True
            self._thread = threading.Thread(target=self._beat, name="fw-job-lock", daemon=True)
            self._thread.start()
            return self
        raise JobLockedError(f"could not take the lock {self.path}; another process keeps taking it")

    def held_by(self) -> dict | None:
        """The live holder's pid, host and times, or None when the job is not locked (or stale)."""
        holder = self._holder()
        return holder if holder is not None and not self._stale(holder) else None

    def _holder(self) -> dict | None:
        try:
            with open(self.path, "rb") as f:
                return json.loads(f.read() or b"{}")
        except (OSError, ValueError):
            return None

    def _stale(self, holder: dict) -> bool:
        if holder.get("host") == self.host and isinstance(holder.get("pid"), int) and not _alive(holder["pid"]):
            return True
        return time.time() - float(holder.get("heartbeat", 0)) > self.stale_after

    def _beat(self) -> None:
        while not self._stop.wait(self.stale_after / 3):
            tmp = f"{self.path}.{os.getpid()}"
            with open(tmp, "wb") as f:
                f.write(self._content())
            os.replace(tmp, self.path)

    def release(self) -> None:
        self._stop.set()
        if self._thread is not None:
            self._thread.join()
        holder = self._holder()
        if self._mine and holder is not None and holder.get("pid") == os.getpid():
            os.remove(self.path)
        self._mine = False

    def __enter__(self) -> JobLock:
        return self.acquire()

    def __exit__(self, *exc) -> None:
        self.release()
