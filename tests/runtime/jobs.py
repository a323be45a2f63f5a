"""The jobs the runtime tests run, in this process or in a subprocess (python -m tests.runtime.jobs).

A three-vertex job: source -> key_by(k).reduce -> key_by(g).map_partition. Every user
function is wrapped with count_calls so a test can see which ones ran again.
"""

from __future__ import annotations

import json
import os
import sys

import fw_magics as fw
from fw_magics.teaching import testing

SCHEMA = "id long, k long, g long, v double"
RECORDS = [(i, i % 5, i % 3, float(i)) for i in range(60)]


def add(a, b):
    return (a.id + b.id, a.k, a.g, a.v + b.v)


def summarize(records):
    rows = list(records)
    yield (rows[0].g, len(rows), sum(r.v for r in rows))


def kill_arm(markers: str) -> str:
    """The file that arms the last vertex's kill (``fw_magics.teaching.testing.arm``): while it exists,
    the last vertex's subtask 0 kills the process whose PID it holds, once."""
    return markers.rstrip(os.sep) + ".arm"


def three_vertex_job(markers: str, fail=None, state_dir: str | None = None,
                     siblings_first: str | None = None, hold: str | None = None):
    """The stream; ``fail`` = (subtask, attempts) injects failures into the last vertex.

    Its last vertex can kill a driver: arm ``kill_arm(markers)``. The function is the same armed
    or not, so the run that resumes builds the very job that was killed.

    ``siblings_first`` (a job directory): the failing subtask fails only once the last vertex's
    other subtasks have committed there. Without it, a failure can come before they start, and
    Spark then stops the whole job with them in it: they are not committed and run again.
    ``hold`` (a folder): the last vertex's subtask 0 waits there (see ``_held``).
    """
    source = fw.from_records(RECORDS, SCHEMA, partitions=4, name="sales")
    reduced = source.key_by("k").full_window_partition().reduce(testing.count_calls(add, markers))
    last = testing.count_calls(summarize, markers)
    if fail is not None:
        last = testing.fail_on_attempts(last, subtask=fail[0], attempts=fail[1], state_dir=state_dir)
        if siblings_first is not None:
            results = os.path.join(siblings_first, "sales", "results", "v2")
            last = _after_siblings_committed(last, fail[0], [i for i in range(4) if i != fail[0]], results)
    last = testing.kill_when_armed(last, kill_arm(markers), subtask=0)
    if hold is not None:
        last = _held(last, 0, hold)
    return reduced.key_by("g").full_window_partition().map_partition(last, "g long, n long, total double")


def _after_siblings_committed(fn, subtask: int, siblings: list[int], results: str, timeout: float = 60.0):
    """``fn``, except that partition ``subtask`` first waits until the sidecars of ``siblings`` are
    in ``results`` (the other tasks get the free cores meanwhile)."""
    import functools
    import time

    @functools.wraps(fn)
    def wrapper(*args, **kwargs):
        from pyspark import TaskContext

        context = TaskContext.get()
        if context is not None and context.partitionId() == subtask:
            others = [os.path.join(results, f"{i}.json") for i in siblings]
            deadline = time.monotonic() + timeout
            while not all(os.path.exists(p) for p in others) and time.monotonic() < deadline:
                time.sleep(0.05)
        return fn(*args, **kwargs)

    return wrapper


def _held(fn, subtask: int, folder: str, timeout: float = 600.0):
    """``fn``, except that each attempt of partition ``subtask`` first writes ``folder/started-<attempt id>``
    (holding its working directory: which executor, so which worker, runs it) and waits for ``folder/go``."""
    import functools
    import time

    @functools.wraps(fn)
    def wrapper(*args, **kwargs):
        from pyspark import TaskContext

        context = TaskContext.get()
        if context is not None and context.partitionId() == subtask:
            path = os.path.join(folder, f"started-{context.taskAttemptId()}")
            with open(path + ".tmp", "w") as f:
                f.write(os.getcwd())
            os.replace(path + ".tmp", path)
            deadline = time.monotonic() + timeout
            while not os.path.exists(os.path.join(folder, "go")) and time.monotonic() < deadline:
                time.sleep(0.05)
        return fn(*args, **kwargs)

    return wrapper


def expected() -> list[tuple]:
    """The clean result, computed in plain Python."""
    by_k: dict = {}
    for r in RECORDS:
        by_k.setdefault(r[1], []).append(r)
    reduced = []
    for rows in by_k.values():
        acc = rows[0]
        for r in rows[1:]:
            acc = (acc[0] + r[0], acc[1], acc[2], acc[3] + r[3])
        reduced.append(acc)
    by_g: dict = {}
    for r in reduced:
        by_g.setdefault(r[2], []).append(r)
    return sorted((g, len(rows), sum(r[3] for r in rows)) for g, rows in by_g.items())


def main() -> None:
    """argv: job_dir markers mode [event_type nth | hold_folder]; prints the sorted result as JSON."""
    job_dir, markers, mode = sys.argv[1:4]
    fw.get_spark({"spark.ui.enabled": "false", "spark.sql.shuffle.partitions": "4"})
    if mode == "kill-event":
        event_type, nth = sys.argv[4], int(sys.argv[5])
        seen = []

        def counting(store, event):
            if event.get("type") == event_type:
                seen.append(event)
                if len(seen) == nth:
                    store.flush()
                    os.kill(os.getpid(), 9)

        from fw_magics import hooks

        hooks.register("event_written", counting)
    if mode == "kill-last":
        testing.arm(kill_arm(markers))
    stream = three_vertex_job(markers,
                              hold=sys.argv[4] if mode == "hold-last" else None)
    result = fw.execute(stream, job_dir=job_dir, job_name="sales")
    print(json.dumps({
        "rows": sorted(tuple(r) for r in result.collect()),
        "ran": sorted(result.ran), "recovered": sorted(result.recovered),
    }))


if __name__ == "__main__":
    main()
