"""Fault injection for tests and tutorials: failing subtasks, killing the driver, counting calls.

Wrap a user function before handing it to an operation::

    flaky = fw.testing.fail_on_attempts(my_fn, subtask=0, attempts={1, 2}, state_dir=tmp)
    ds.full_window_partition().map_partition(flaky, schema)...execute(restart=FixedDelayRestart(3))

An *attempt* is one Spark job running the operator (one region attempt of the runtime);
Spark's own task retries inside that job count as the same attempt.
"""

from __future__ import annotations

import functools
import os
import signal
import time
import uuid


class InjectedFailure(RuntimeError):
    """The failure fail_on_attempts raises on purpose.

    It stands for a failure of the user's own function, so it is deliberately not an
    ``fw_magics.errors.FwMagicsError``: it keeps its traceback and goes through failover
    like any error of user code.
    """


def _task():
    from pyspark import TaskContext

    return TaskContext.get()


def fail_on_attempts(fn, subtask: int, attempts, state_dir: str):
    """``fn``, except that in partition ``subtask`` it raises on the given attempts (1-based)."""
    attempts = frozenset(attempts)
    name = getattr(fn, "__name__", "fn")

    @functools.wraps(fn)
    def wrapper(*args, **kwargs):
        context = _task()
        if context is not None and context.partitionId() == subtask:
            os.makedirs(state_dir, exist_ok=True)
            ledger = os.path.join(state_dir, f"{name}-{subtask}.stages")
            seen = open(ledger).read().split() if os.path.exists(ledger) else []
            stage = str(context.stageId())
            if stage not in seen:
                seen.append(stage)
                with open(ledger, "w") as f:
                    f.write(" ".join(seen))
            attempt = seen.index(stage) + 1
            if attempt in attempts:
                raise InjectedFailure(f"injected failure in {name} subtask {subtask}, attempt {attempt}")
        return fn(*args, **kwargs)

    return wrapper


def count_calls(fn, marker_dir: str):
    """``fn``, leaving one marker file per call (named after the function and the partition)."""
    name = getattr(fn, "__name__", "fn")

    @functools.wraps(fn)
    def wrapper(*args, **kwargs):
        context = _task()
        pid = context.partitionId() if context is not None else -1
        os.makedirs(marker_dir, exist_ok=True)
        open(os.path.join(marker_dir, f"{name}.{pid}.{uuid.uuid4().hex}"), "w").close()
        return fn(*args, **kwargs)

    return wrapper


def calls(marker_dir: str, name: str | None = None) -> list[tuple[str, int]]:
    """The (function name, partition) of every call count_calls recorded."""
    if not os.path.isdir(marker_dir):
        return []
    found = []
    for entry in os.listdir(marker_dir):
        fn_name, pid, _ = entry.rsplit(".", 2)
        if name is None or fn_name == name:
            found.append((fn_name, int(pid)))
    return sorted(found)


def kill_driver_during(fn, subtask: int = 0, driver_pid: int | None = None):
    """``fn``, except that in partition ``subtask`` it kills the driver process with SIGKILL.

    The driver (and with it its Spark JVM, which exits when its parent dies) is gone while
    this operator's region runs, as when a kernel dies or a laptop sleeps mid-job.
    """
    driver = os.getpid() if driver_pid is None else driver_pid

    @functools.wraps(fn)
    def wrapper(*args, **kwargs):
        context = _task()
        if context is not None and context.partitionId() == subtask:
            os.kill(driver, signal.SIGKILL)
            time.sleep(60)  # never finish this task: the driver is dead
        return fn(*args, **kwargs)

    return wrapper


def kill_when_armed(fn, arm_file: str, subtask: int = 0):
    """``fn``, except that while ``arm_file`` exists, partition ``subtask`` kills the process
    whose PID the file holds (SIGKILL), once: the file is removed first.

    Unlike :func:`kill_driver_during`, the function is the same in the run that is killed and
    in the run that resumes (the PID is read from the file, not kept in the closure), so a
    resume finds the job's content unchanged even where a sibling subtask committed before the
    kill. Arm it with :func:`arm`.
    """

    @functools.wraps(fn)
    def wrapper(*args, **kwargs):
        context = _task()
        if context is not None and context.partitionId() == subtask:
            try:
                with open(arm_file) as f:
                    pid = int(f.read())
                os.remove(arm_file)
            except FileNotFoundError:
                pid = None
            if pid is not None:
                os.kill(pid, signal.SIGKILL)
                time.sleep(60)  # never finish this task: its driver is dead
        return fn(*args, **kwargs)

    return wrapper


def arm(arm_file: str, pid: int | None = None) -> None:
    """Arm :func:`kill_when_armed`: the next call in its subtask kills ``pid`` (default: this process)."""
    os.makedirs(os.path.dirname(os.path.abspath(arm_file)), exist_ok=True)
    with open(arm_file, "w") as f:
        f.write(str(os.getpid() if pid is None else pid))


def kill_driver_on_event(event_type: str, **match):
    """Kill this process with SIGKILL right after an event of ``event_type`` is durable.

    ``match`` narrows it (e.g. ``vertex="v1"``). Returns the hook's handle
    (``fw_magics.hooks``): ``handle.unregister()`` removes it.
    """
    from .. import hooks

    def hook(store, event):
        if event.get("type") == event_type and all(event.get(k) == v for k, v in match.items()):
            store.flush()
            os.kill(os.getpid(), signal.SIGKILL)

    return hooks.register("event_written", hook)


_SESSION_VARIABLES = ("SPARK_REMOTE", "SPARK_LOCAL_REMOTE", "SPARK_CONNECT_MODE_ENABLED",
                      "SPARK_CONNECT_AUTHENTICATE_TOKEN", "PYSPARK_REMOTE_INIT_CONF")


def embedded_spark_env() -> dict:
    """This process's environment for a child Python that must start its own embedded Spark.

    Under Spark Connect, PySpark leaves variables in ``os.environ`` (the remote, the local
    server's token, its settings) that would make a child try to start a second server on
    the same port; they are left out.
    """
    return {k: v for k, v in os.environ.items() if not k.startswith(_SESSION_VARIABLES)}
