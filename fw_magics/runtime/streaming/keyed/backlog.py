"""The backlog engine: the backlog as one sorted batch job, one state write per key (FLIP-327).

While a source is in backlog, nothing is late and no checkpoint is taken, so the backlog runs
as batch does: ``repartition(n, key)`` (the same hash partitioning as the stream's state),
``sortWithinPartitions(key, event time)`` in Spark's external sorter, then ``mapInArrow`` over
each partition's key-contiguous runs. For each run the per-key core applies the key's records
in event-time order (the watermark is ``MIN_WATERMARK`` throughout), then fires the key's
timers up to W, the backlog's greatest watermark (FLIP-327: at the switch the timers up to the
watermark fire), and writes the key's state once: a row of JSON text, with the timers after W
still in it. The outputs emitted during the backlog (a reduce's or aggregate's running result
at the end of the backlog, a process function's rows) go into the same committed file.

Each subtask (partition) commits its file with the runtime's machinery (``write_partition``:
atomic, with a checksummed sidecar); the job records a ``subtask_finished`` event for it. A
failure or a kill keeps every committed subtask: the next run filters the others' partitions
out before the sort and runs only them.
"""

from __future__ import annotations

import functools
from dataclasses import dataclass

import numpy as np
import pyarrow as pa
from pyspark.sql import functions as F

from ....datastream.physical.arrow_calls import map_in_arrow
from ....operators.spec import INPUT, KeyedOperatorSpec
from ....spark import progress
from ....spark.actions import run_action
from ....values.records import batch_records
from ....values.schema import arrow_schema
from ...batch.result_files import META_SCHEMA, read_results, write_partition
from .changelog import OUT, ROW, STATE, STATE_ROW, ChangelogWriter, backlog_schema
from .core import KeyedCore
from .key_frame import normalized_keys
from .keys import normal, plain

#: Outputs or state rows gathered before they are handed to Spark as one Arrow batch.
CHUNK = 8192


@dataclass(frozen=True)
class BacklogPlan:
    """What each backlog task needs (pickled into the tasks)."""

    spec: KeyedOperatorSpec
    output: object  # the changelog's output StructType
    watermark: int | None  # W; None: no event time, no timers to fire
    root: str
    vertex: str
    attempt: int
    only: frozenset | None  # the subtasks to run; None: all


def switch_watermark(frame, event_time: str | None, delays: dict) -> tuple[int | None, dict]:
    """(W, each input's greatest event time in ms) of the backlog: one aggregate in the JVM.

    ``delays``: the watermark delay of each input (``{None: d}``: one input; ``{1: d1, 2: d2}``: the
    tagged rows of two, W the smaller of their watermarks). An input without records has no watermark
    and holds the other's back (no W), as Spark's ``min`` policy counts a watermark that has seen no
    row and as Flink's two-input operators do. The greatest event times are keyed as ``delays`` is;
    an input without records has none."""
    if event_time is None:
        return None, {}
    # Spark's watermark takes event times in whole milliseconds (microseconds // 1000)
    top = F.max(F.unix_micros(F.col(event_time))).alias("m")
    if None in delays:
        rows = [(None, run_action(lambda: frame.select(top).first(), frame.sparkSession)["m"])]
    else:
        rows = [(r[INPUT], r["m"]) for r in run_action(lambda: frame.groupBy(INPUT).agg(top).collect(),
                                                       frame.sparkSession)]
    tops = {tag: int(m) // 1000 for tag, m in rows if m is not None}
    return watermark_of(tops, delays), tops


def watermark_of(tops: dict, delays: dict) -> int | None:
    """W from each input's greatest event time (``tops``, keyed as ``delays``): the smaller of the inputs'
    watermarks; None while an input has no records (or none has)."""
    if not tops or len(tops) < len(delays):
        return None
    return min(t - delays[tag] for tag, t in tops.items())


def engine_frame(frame, spec: KeyedOperatorSpec, parallelism: int, pending: set[int] | None):
    """The backlog, hash-partitioned on the key into ``parallelism`` and sorted by key and event time."""
    keys = [F.col(k) for k in spec.key_names]  # a record without an event time is counted and dropped (engine)
    frame = normalized_keys(frame, spec.key_names).repartition(parallelism, *keys)
    if pending is not None and len(pending) < parallelism:  # finished subtasks: nothing to sort or run
        frame = frame.where(F.spark_partition_id().isin(sorted(pending)))
    order = keys + [F.col(c) for c in spec.order]  # event time, then (two inputs) the input
    return frame.sortWithinPartitions(*order)


def run(frame, plan: BacklogPlan, parallelism: int):
    """Run the engine's Spark job; each finished subtask's (subtask, path, size, sha256, records, duration).

    Spark runs no task at all over a backlog it knows is empty (an empty folder or table: the optimizer,
    or adaptive execution after the shuffle, drops the plan), so the subtasks it did not run commit their
    empty result in a second, tiny job: one partition of ``range`` per such subtask, its rows ignored."""
    spark = frame.sparkSession
    task = functools.partial(backlog_task, plan, arrow_schema(backlog_schema(plan.output)))
    with progress.reporting(spark, plan.vertex):
        done = run_action(lambda: map_in_arrow(frame, task, META_SCHEMA).collect(), spark)
        skipped = set(range(parallelism) if plan.only is None else plan.only) - {row["subtask"] for row in done}
        if skipped:
            nothing = spark.range(0, parallelism, 1, parallelism).where(F.spark_partition_id().isin(sorted(skipped)))
            done += run_action(lambda: nothing.mapInArrow(functools.partial(_no_records, task), META_SCHEMA).collect(),
                               spark)
    return done


def _no_records(task, batches):
    """``task`` over no records (its partition's rows of ``range`` are not the backlog's)."""
    for _ in batches:
        pass
    yield from task(iter(()))


def backlog_frame_of_results(spark, root: str, paths: list[str], output):
    """The committed backlog results (one partition per subtask) as a DataFrame of the backlog schema."""
    return read_results(spark, root, paths, backlog_schema(output))


def initial_state(results, key_names):
    """The stream's initialState: the key columns and the state text of every key with state."""
    return results.where(F.col(ROW) == STATE_ROW).select(*[F.col(k) for k in key_names], F.col(STATE))


def backlog_outputs(results):
    """The changelog rows emitted during the backlog."""
    return results.where(F.col(ROW) == OUT).drop(ROW, STATE)


# -- inside the tasks ---------------------------------------------------------------------------------


def _partition_id() -> int:
    from pyspark import TaskContext

    context = TaskContext.get()
    return context.partitionId() if context is not None else 0


def backlog_task(plan: BacklogPlan, empty_schema: pa.Schema, batches):
    """One subtask: run the engine over its sorted partition and commit what it produced."""
    counters: dict = {}
    produced = engine(plan, counters, batches)
    yield from write_partition(plan.root, plan.vertex, plan.attempt, plan.only, empty_schema, produced,
                               counters=counters)


def _event_times(column: pa.Array) -> list:
    """Epoch milliseconds (floored) of a timestamp column in microseconds; None where it is null."""
    micros = column.cast(pa.int64())
    if micros.null_count:
        return [None if m is None else m // 1000 for m in micros.to_pylist()]
    return np.floor_divide(micros.to_numpy(), 1000).tolist()


def engine(plan: BacklogPlan, counters: dict, batches):
    """The per-key core over key-contiguous runs; yields backlog-schema batches (outputs, then states)."""
    spec = plan.spec
    core = KeyedCore(spec, subtask=_partition_id())
    writer = ChangelogWriter(spec, plan.output)
    names = list(spec.record.names)
    key_index = [names.index(k) for k in spec.key_names]
    time_index = names.index(spec.event_time) if spec.event_time is not None else None
    outputs, states = [], []
    seq = 0
    count = {"records": 0, "keys": 0, "state_writes": 0, "outputs": 0, "timers_fired": 0, "undated": 0}
    current = current_normal = None
    same = (lambda key: key) if plain(spec.key.arrow_schema) else normal  # NaN is one key, -0.0 is 0.0

    def finish(key):
        if plan.watermark is not None:
            core.fire(plan.watermark)
        result = core.end()
        count["keys"] += 1
        count["timers_fired"] += result.timers_fired
        if result.state is not None:
            states.append((key, result.state, result.doc))
            count["state_writes"] += 1
        outputs.extend(result.outputs)

    for batch in batches:
        if batch.num_rows == 0:
            continue
        batch = batch.select(names) if batch.schema.names != names else batch
        keys = list(zip(*(batch.column(i).to_pylist() for i in key_index)))
        times = _event_times(batch.column(time_index)) if time_index is not None else [None] * batch.num_rows
        for key, record, event_time in zip(keys, batch_records(batch), times):
            if time_index is not None and event_time is None:  # no event time: counted, dropped
                count["undated"] += 1
                continue
            key_normal = same(key)
            if current is None or key_normal != current_normal:
                if current is not None:
                    finish(current)
                core.begin(key, None)
                current, current_normal = key, key_normal
            core.element(record, event_time)
        count["records"] += batch.num_rows
        outputs.extend(core.take_outputs())
        if len(outputs) >= CHUNK:
            yield writer.backlog_outputs(outputs, seq)
            seq, count["outputs"], outputs = seq + len(outputs), count["outputs"] + len(outputs), []
        if len(states) >= CHUNK:
            yield writer.backlog_states(states)
            states = []
    if current is not None:
        finish(current)
    if outputs:
        yield writer.backlog_outputs(outputs, seq)
        count["outputs"] += len(outputs)
    if states:
        yield writer.backlog_states(states)
    counters.update(count)
