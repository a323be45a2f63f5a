"""Whether a process still runs, for the files that name their holder by pid (a job's lock, the
shared Spark's server and leases)."""

from __future__ import annotations

import os


def alive(pid: int | None) -> bool:
    """Whether process ``pid`` runs on this machine; a zombie (ended, not yet reaped) does not. A
    process of another user that runs counts as running."""
    if pid is None:
        return False
    try:
        with open(f"/proc/{pid}/stat") as f:
            return f.read().rsplit(")", 1)[1].split()[0] != "Z"
    except FileNotFoundError:
        return False
    except (OSError, IndexError):  # no /proc here: ask the kernel
        pass
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except OSError:
        return True
    return True
