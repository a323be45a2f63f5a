"""A driver process for the kill tests: python -m tests.streaming.driver SOURCE JOBS POINT ["URL TABLE"].

It runs a keyed count-and-sum (order-insensitive: a lost record lowers a sum, a duplicate raises a
count; POINT "two-...": each input's, of SOURCE connected with SOURCE-b) over SOURCE in mixed mode with one file per micro-batch (or over the PostgreSQL TABLE at URL,
every new row per micro-batch), and kills itself with SIGKILL at
POINT: "backlog" (inside a backlog task of subtask 1), "switch" (in the sink of the first
micro-batch after the switch, before its commit: the query warmed up during the backlog, so
this is the first batch its held source let through), "stream" (in the sink of micro-batch 2).
POINT "cdc-...": the same kills of KillingChangeCount over the table's changes (TABLE: ``url table``, its
columns CHANGES_SCHEMA); "cdc-stream" kills in the first micro-batch with a change of a key >= 100 (not the
one "cdc-switch" killed, which its restart runs again first). The test finishes the job in its own process.
POINT "exit" is no kill: the interpreter exits normally while the backlog runs (a kernel restart).
"""

from __future__ import annotations

import os
import signal
import sys
import time

import fw_magics as fw
from tests.streaming import functions


def kill_if_armed(kill_file: str) -> None:
    """Kill the driver (its pid in ``kill_file``) from inside a task of partition 1 while the file exists."""
    from pyspark import TaskContext

    context = TaskContext.get()
    if context is not None and context.partitionId() == 1 and os.path.exists(kill_file):
        with open(kill_file) as f:
            os.kill(int(f.read()), signal.SIGKILL)
        os._exit(1)  # this worker too: nothing may hold the test's pipes open


class KillingCountSum(functions.CountSum):
    """CountSum whose add() kills the driver from inside backlog subtask 1 while ``kill_file`` (holding
    the driver's pid) exists. Every run of the job uses it, the test's last one too (without the
    file): the same code each time, so a restart finds the content the job was recorded with."""

    def __init__(self, kill_file: str):
        self.kill_file = kill_file

    def add(self, value, accumulator):
        kill_if_armed(self.kill_file)
        return super().add(value, accumulator)


class KillingCoCounts(fw.KeyedCoProcessFunction):
    """Two inputs' count and sum of v per key, each input's apart (order-insensitive, as CountSum), with
    KillingCountSum's kill."""

    schema = "n1 long, s1 long, n2 long, s2 long"

    def __init__(self, kill_file: str):
        self.kill_file = kill_file

    def open(self, ctx):
        self.totals = ctx.get_state(fw.ValueStateDescriptor("totals"))

    def _add(self, side: int, record):
        kill_if_armed(self.kill_file)
        totals = self.totals.value() or [0, 0, 0, 0]
        totals[2 * side] += 1
        totals[2 * side + 1] += record.v
        self.totals.update(totals)
        yield tuple(totals)

    def process_element1(self, record, ctx):
        yield from self._add(0, record)

    def process_element2(self, record, ctx):
        yield from self._add(1, record)


class KillingChangeCount(fw.KeyedProcessFunction):
    """A table's changes (``fw.from_table(..., changes=True)``) counted per key, with the key's last change, and
    KillingCountSum's kill: a lost change lowers a count, one read twice raises it."""

    schema = "n long, op string, amount double"

    def __init__(self, kill_file: str):
        self.kill_file = kill_file

    def open(self, ctx):
        self.count = ctx.get_state(fw.ValueStateDescriptor("n", "long"))

    def process_element(self, record, ctx):
        kill_if_armed(self.kill_file)
        n = (self.count.value() or 0) + 1
        self.count.update(n)
        yield n, record.op, record.amount


CHANGES_SCHEMA = "id bigint, customer string, amount double"


def changes_counted(url: str, table: str, armed: str):
    """The CDC kill tests' job: each key's changes counted (KillingChangeCount) over ``table``'s changes."""
    return fw.from_table(url, table, CHANGES_SCHEMA, changes=True).key_by("id").process(KillingChangeCount(armed))


def kill_file(jobs: str) -> str:
    """Where the backlog's kill is armed (the driver's pid), beside the job's folder."""
    return os.path.join(jobs, ".kill-in-backlog")


def killing_sink(batch_to_kill: int | None):
    """A sink that kills the driver in micro-batch ``batch_to_kill`` (None: the first micro-batch it gets)."""
    def sink(df, batch_id):
        if batch_id == batch_to_kill or (batch_to_kill is None and batch_id >= 0):
            os.kill(os.getpid(), signal.SIGKILL)  # classic: foreachBatch runs in the driver process
    return sink


def killing_sink_at_key(key: int):
    """A sink that kills the driver in the first micro-batch holding a change of a key >= ``key``."""
    def sink(df, batch_id):
        if df.filter(f"id >= {key}").limit(1).count():
            os.kill(os.getpid(), signal.SIGKILL)
    return sink


class SlowCountSum(functions.CountSum):
    """CountSum taking 0.2 s a record: a backlog that is still running a second after it started."""

    def add(self, value, accumulator):
        time.sleep(0.2)
        return super().add(value, accumulator)


def exit_during_the_backlog(source: str, jobs: str) -> None:
    """Start a job and let the interpreter exit normally while its backlog runs (what a kernel
    restart does to a running job): its log must say interrupted, not failed."""
    import threading

    from fw_magics import hooks

    running = threading.Event()
    hooks.register("backlog_progress", lambda job, done, total: running.set() if done < total else None)
    stream = fw.from_files(source, "parquet", functions.SCHEMA, event_time="ts", watermark_delay="1 second")
    stream.key_by("k").aggregate(SlowCountSum()).start(job_dir=jobs, job_name="exiting")
    assert running.wait(120), "the backlog never started"
    time.sleep(1)
    sys.exit(0)


def source_stream(source: str, table: str | None):
    """The driver's stream: the folder SOURCE, or (TABLE given: ``url table``) that PostgreSQL table."""
    if table is None:
        return fw.from_files(source, "parquet", functions.SCHEMA, event_time="ts", watermark_delay="1 second")
    url, name = table.split(" ")
    return fw.from_table(url, name, functions.SCHEMA, event_time="ts", watermark_delay="1 second")


def operator(source: str, table: str | None, armed: str, two: bool):
    """The job's operator: KillingCountSum over the source, or (``two``) KillingCoCounts over it connected
    with the folder SOURCE-b."""
    first = source_stream(source, table)
    if not two:
        return first.key_by("k").aggregate(KillingCountSum(armed))
    return first.connect(source_stream(source + "-b", None)).key_by("k", "k").process(KillingCoCounts(armed))


def main() -> None:
    source, jobs, point = sys.argv[1:4]
    table = sys.argv[4] if len(sys.argv) > 4 else None
    two, point = point.startswith("two-"), point.removeprefix("two-")
    cdc, point = point.startswith("cdc-"), point.removeprefix("cdc-")
    fw.get_spark({"spark.ui.enabled": "false", "spark.sql.shuffle.partitions": "2"})
    if point == "exit":
        exit_during_the_backlog(source, jobs)
    armed = kill_file(jobs)
    if point == "backlog":
        os.makedirs(jobs, exist_ok=True)
        with open(armed, "w") as f:
            f.write(str(os.getpid()))
    elif os.path.exists(armed):
        os.remove(armed)
    op = changes_counted(*table.split(" "), armed) if cdc else operator(source, table, armed, two)
    sink = {"switch": killing_sink(None), "stream": killing_sink_at_key(100) if cdc else killing_sink(2)}.get(point)
    job = op.start(job_dir=jobs, job_name="counts", sink=sink, max_files_per_trigger=None if table else 1,
                   trigger="100 milliseconds")
    job.process_all_available()
    time.sleep(120)  # the kill comes first
    raise SystemExit("no kill happened")


if __name__ == "__main__":
    main()
