"""Savepoints of a running streaming job and restores at another parallelism (FLIP-8), keyed and operator alike.

Taking one (``take(job)``), after the query's last committed micro-batch ``B``:

* **source positions**, as the source keeps them (``saved_position``): from the end offset Spark
  reported for ``B`` -- a folder's ``{"files": n}`` (the first ``n`` manifest files are read) with
  the manifest as it is, a table's ``{"id": n}`` (every row up to that ``order_by`` is read); the
  source's splits as operator state, one ``ListState`` per source subtask (``splits``). A two-input
  job's: each input's, under its own source operator (the carrier rows' offsets left out), and each
  input's greatest event time read (``tops``), which a restore carries into that input's watermark;
* the job's **state**, by its kind (``KEYED`` or ``OPERATOR``, the job's ``state_kind``):
  a keyed job's savepoint is **incremental**: the files its state was handed over in (the
  backlog's committed results, each key's state and outputs, one per partition) are shared as its
  base (hard links), and only what the stream wrote is written: the store's keys, read with Spark's
  state data source (``spark.read.format("statestore")`` at ``batchId=B``, the one value state
  ``fw_state`` per key; a cleared key's tombstone kept), over a restored job's newer layer by a
  Spark join, and each key's latest changelog row since the base up to ``B``: both written as
  Parquet by a Spark task (``state_files.write_parquet``), never collected. A non-keyed
  operator's snapshot per subtask (value state ``fw_operator``);
* **watermark**: ``max(W, greatest event time read - delay)``, the smaller input's for two: the
  watermark the query's next micro-batch would use (Spark's rule over everything read); W covers
  the backlog's files, so only the files the stream read are scanned;
* the job graph, its parallelism, the source's description, the key columns.

Restoring one: ``restore`` (``check_restorable``, ``prepare_restore``); what the restored job reads: ``restored``.
Everything public: no private Spark API, no JVM internals.
"""

from __future__ import annotations

import functools
import json
import os
import time
import uuid
from dataclasses import dataclass

import pyarrow as pa
from pyspark.sql import functions as F

from ....connectors.base import SUBTASK, each_position
from ....connectors.two_inputs.carrier import is_carrier_offset
from ....connectors.two_inputs.source import carried_tops
from ....errors import FullWindowError, ResumeError
from ....graph import JobGraph
from ....recovery.filesystem import Storage
from ....recovery.paths import CHECKPOINT, RESTORED_BASE, RESTORED_LATEST, WATERMARK
from ....state import operator_state_document, redistribute_snapshots, validate_subtask_snapshot
from ....values.event_time import valid_watermark
from ..driver.follower import held, ran
from ..driver.phases import ENDED
from ..driver.sink import changelog_frame, latest_rows
from ..keyed import backlog
from ..keyed.changelog import BATCH, STATE, changelog_schema
from ..keyed.query import STATE_VARIABLE
from ..keyed.seed import Handed, overlaid, read_handover
from ..keyed.state_files import handover_layers, partition_states, saved_states, write_parquet
from ..operator.query import OPERATOR_VARIABLE
from . import batches
from . import declared as states_field
from .checks import state_verdict
from .files import LONGEST, Savepoint, load_savepoint, share, write_savepoint
from .restored import restored_latest, restored_operator_state, write_restored_operator_state
from .rewrite import upgraded_states
from .upgrade import Upgrade

__all__ = ["KEYED", "OPERATOR", "Savepoint", "graph_at", "load_savepoint", "take"]


def graph_at(graph: JobGraph, parallelism: int) -> JobGraph:
    """``graph`` with every operator at ``parallelism`` (a streaming job's operators share it)."""
    doc = json.loads(graph.to_json())
    for operator in doc["operators"]:
        operator["parallelism"] = parallelism
    return JobGraph.from_json(json.dumps(doc))


# -- the source's position --------------------------------------------------------------------------


#: How long a savepoint waits for the query to report where it stands when it has not yet (a restarted query
#: that found nothing new reports it at its first trigger, just after ``process_all_available()`` returns).
REPORT_WAIT_S = 5.0


def _last_committed(job) -> tuple[int, list]:
    """(the query's last committed micro-batch, its sources' end offsets as JSON text), from its progress:
    the last micro-batch that ran, else a trigger that found nothing new since -- what a job restarted from
    its checkpoint reports until it reads something new: Spark then reports the *next* batch's id, with
    its sources where the last committed one left them (start and end offsets equal). A query started again
    in the stream phase (a restart, a resumed job) that has reported nothing yet, its first micro-batch still
    running, is read from its checkpoint's logs (``batches.last_in_checkpoint``)."""
    deadline = time.monotonic() + REPORT_WAIT_S
    while True:
        everything = [p for p in (job.query.recentProgress or []) if p.sources]
        reports = [p for p in everything if not held(p)]
        done = [p for p in reports if ran(p)]
        if done:
            return done[-1].batchId, [s.endOffset for s in done[-1].sources]
        quiet = [p for p in reports if p.batchId >= 1 and all(s.startOffset == s.endOffset for s in p.sources)]
        if quiet:
            return quiet[-1].batchId - 1, [s.endOffset for s in quiet[-1].sources]
        if not everything and job.phase == "stream" and job.query.isActive:
            found = batches.last_in_checkpoint(job.storage)
            if found is not None:
                return found
        if time.monotonic() >= deadline or not job.query.isActive:
            raise FullWindowError(f"job {job.job_name!r} has committed no micro-batch yet; call "
                                  "job.process_all_available() before job.savepoint()")
        time.sleep(0.1)


def _check_running(job) -> None:
    """Refuse in one line a savepoint of a job without a running query, or with a job directory not local."""
    if job.query is None or job.phase not in ("switching", "stream"):
        if job.phase in ENDED:
            how = ("a batch job has no stream to savepoint" if job.phase == "finished" else
                   "start() continues it; take the savepoint while it runs")
        else:
            how = "call job.process_all_available() first"
        raise FullWindowError(f"job.savepoint() needs the job's streaming query; {job.job_name!r} is in phase "
                              f"{job.phase!r} ({how})")
    if not job.storage.local:
        raise FullWindowError(f"savepoints are written to a local job directory; {job.root!r} is not local")


def source_inputs(job, position: dict | None = None) -> list[tuple]:
    """Each input as (its source operator's name in the graph, its source, its folder, its part of ``position``)."""
    names = job.graph.source_names()
    return [(name, *each) for name, each in zip(names, job.source.inputs_at(job.root, position), strict=True)]


def _committed_position(job, batch: int | None = None) -> tuple[int, dict]:
    """(the last committed micro-batch, or ``batch`` if still kept (``batches.ends_at``), the source's position
    after it: each input's ``saved_position``)."""
    batch, ends = _last_committed(job) if batch is None else (batch, batches.ends_at(job, batch))
    ends = [json.loads(end) for end in ends]
    ends = [end for end in ends if not is_carrier_offset(end)]  # a carrier row moved a watermark: no position
    inputs = job.source.inputs_at(job.root)
    if len(ends) != len(inputs):
        raise FullWindowError(f"job {job.job_name!r}'s query reported {len(ends)} sources' offsets for its "
                              f"{len(inputs)} inputs; no savepoint was written")
    return batch, job.source.joined(each_position([(source, functools.partial(source.saved_position, root, end))
                                                   for (source, root, _), end in zip(inputs, ends)]))


def _watermark(job, position: dict) -> tuple[int | None, dict, int | None]:
    """(the watermark, each input's greatest event time read, the newest event time read): each input's
    greatest is the greater of its time before the stream (``carried_tops``: a two-input job's backlog's or
    savepoint's) and what the stream read of it; W the smaller of the inputs' watermarks, and never below the
    job's (W over the backlog, or a restored job's savepoint's); the newest, of everything read (the backlog's
    and a restored job's savepoint's included), never before W. Only what the stream read is scanned."""
    if job.spec.event_time is None:
        return None, {}, None
    tops = carried_tops(job.root)
    scratch = f".savepoint-read-{uuid.uuid4().hex}.json"
    inputs = job.source.inputs_at(job.root, position)
    try:
        for tag, (source, root, own) in zip(job.source.delays, inputs):
            read = source.read_since_switch(job.spark, root, own, scratch)
            if read is not None:
                _, top = backlog.switch_watermark(read, source.event_time, {None: 0})
                if top:
                    tops[tag] = max(top[None], tops.get(tag, top[None]))
    finally:
        for _, root, _ in inputs:
            path = Storage(root).path(scratch)
            if os.path.exists(path):
                os.remove(path)
    candidates = [x for x in (backlog.watermark_of(tops, job.source.delays), job.watermark) if x is not None]
    watermark = max(candidates) if candidates else None
    # a job restored from a savepoint that did not record its newest time (before version 4): at least its W
    known = [t for t in (_carried_top(job.storage), *tops.values(), watermark) if t is not None]
    return watermark, tops, (max(known) if known else None)


def _carried_top(storage: Storage) -> int | None:
    """The newest event time read before the job's stream, as recorded beside its W (``max_event_time``: its
    backlog's, or a restored job's savepoint's ``top``); None where none is recorded."""
    try:
        with storage.open_inside(WATERMARK, 1 << 16) as f:
            doc = json.loads(f.read())
    except FileNotFoundError:
        return None
    except (OSError, ValueError, UnicodeDecodeError):
        return None  # a damaged file fails the job where its W is read back (backlog_run.Backlog.watermark)
    top = doc.get("max_event_time") if isinstance(doc, dict) else None
    return top if type(top) is int and valid_watermark(top) else None


# -- the state, by kind -----------------------------------------------------------------------------


def _state_reader(spark, checkpoint: str, variable: str, batch: int | None):
    """Spark's state data source over one value state of ``checkpoint`` (at ``batch``, else the last committed)."""
    reader = spark.read.format("statestore").option("path", checkpoint).option("stateVarName", variable)
    return reader if batch is None else reader.option("batchId", batch)


def keyed_state_frame(spark, checkpoint: str, key_names, batch: int | None = None):
    """Every key's state in ``checkpoint`` (at ``batch``, else the last committed): the key columns and
    ``__fw_state``, through Spark's state data source."""
    frame = _state_reader(spark, checkpoint, STATE_VARIABLE, batch).load()
    return frame.select(*[F.col("key").getField(k).alias(k) for k in key_names],
                        F.col("value").getField("state").alias(STATE))


def operator_snapshots(spark, checkpoint: str, parallelism: int, batch: int | None = None) -> list[dict]:
    """Each subtask's operator-state snapshot in ``checkpoint`` (at ``batch``, else the last committed)."""
    frame = _state_reader(spark, checkpoint, OPERATOR_VARIABLE, batch).load()
    frame = frame.select(F.col("key").getField(SUBTASK).alias("subtask"), F.col("value").getField("state").alias("state"))
    found = {int(row["subtask"]): json.loads(row["state"]) for row in frame.collect()}
    missing = [i for i in range(parallelism) if i not in found]
    if missing or len(found) != parallelism:
        raise ResumeError(f"the operator state in {checkpoint} has subtasks {sorted(found)}; expected 0 to "
                          f"{parallelism - 1} (every subtask is initialized in the first micro-batch)")
    return _checked([found[i] for i in range(parallelism)])


def partition_snapshots(spark, checkpoint: str, parallelism: int, batch: int, restored: list | None) -> list[dict]:
    """Each state partition's operator-state snapshot of a keyed operator (``keyed_operator_state``), in
    ``checkpoint`` at ``batch``: a partition that has not run its function since the start has the
    restore's share (``restored``), else an empty snapshot."""
    frame = _state_reader(spark, checkpoint, OPERATOR_VARIABLE, batch).load()
    rows = frame.select(F.col("partition_id"), F.col("value").getField("state").alias("state")).collect()
    found = {int(row["partition_id"]): json.loads(row["state"]) for row in rows}
    stray = sorted(p for p in found if not 0 <= p < parallelism)
    if stray or len(found) != len(rows):
        raise ResumeError(f"the operator state in {checkpoint} has partitions {sorted(found)} in {len(rows)} rows; "
                          f"expected at most one each of 0 to {parallelism - 1}")
    return _checked([found.get(i, {} if restored is None else restored[i]) for i in range(parallelism)])


def _checked(snapshots: list[dict]) -> list[dict]:
    for i, snapshot in enumerate(snapshots):
        validate_subtask_snapshot(snapshot, f"subtask {i}'s operator state")
    return snapshots


@dataclass(frozen=True)
class Snapshot:
    """What a savepoint takes of a job's state: operator snapshots by operator name; the keyed state
    and the latest rows (each a pyarrow Table, None, or ``write(path)`` for a Spark task to write
    it); whether W applies; the committed state files shared as the savepoint's base."""

    operators: dict
    keyed: object
    latest: object
    timed: bool
    base: tuple = ()
    states: object = None  # a keyed job's states as a DataFrame (key columns, ``__fw_state``) over ``base``


class StateKind:
    """What a job's state is, and how a savepoint takes it and a restore lays it out (keyed or operator)."""

    name = "?"

    def snapshot(self, job, batch: int) -> Snapshot:
        raise NotImplementedError

    def declared(self, job):
        """The states its function declares, recorded in the savepoint for a reader's typed columns (None: none)."""
        return None

    def check(self, savepoint: Savepoint, job, where: str, allow_non_restored_state: bool) -> Upgrade | None:
        """Refuse in one line (``where``: the savepoint named) a savepoint whose state this job cannot take; the
        verdict on a keyed savepoint's states against the restoring function's (``state_verdict``), or None."""
        raise NotImplementedError

    def restore(self, savepoint: Savepoint, storage: Storage, job, upgrade=None) -> dict:
        """Lay out the restored job's state in its folder (besides the manifest); ``upgrade``: what ``check``
        returned. Returns what the switch event tells of it."""
        raise NotImplementedError


def keyed_states(job, batch: int) -> tuple:
    """A keyed job's states at ``batch`` (one still kept): (the store's keys, over a lazily handed-over layer:
    the key columns and ``__fw_state``, tombstones kept; the handed-over base files as (path, sha256)), lazily:
    what a savepoint after ``batch`` holds of its keyed state, nothing read yet."""
    keys = job.spec.key_names
    keyed = keyed_state_frame(job.spark, job.storage.path(CHECKPOINT), keys, batch)
    if not job.plan.handover.lazy:
        return keyed, ()
    # keys the stream has not touched are still only in the handed-over files
    _, over = handover_layers(job.spark, job.root, job.output, keys)
    keyed = keyed if over is None else overlaid(keyed, over, keys)
    return keyed, tuple((job.storage.path(path), sha) for path, sha in read_handover(job.root).base)


class _Keyed(StateKind):
    """A keyed job's savepoint is incremental over the files its state was handed over in (a backlog's
    results): those are shared as its base, and only what the stream wrote since -- the store's keys
    over the handover's newer layer, each key's latest changelog row since the base -- is written."""

    name = "keyed"

    def snapshot(self, job, batch):
        keys = job.spec.key_names
        keyed, base = keyed_states(job, batch)
        restored = restored_latest(job.spark, job.storage, job.output)
        # the base files hold the backlog's outputs when the state was handed over lazily
        backlog_outputs = None if job.backlog is None or job.plan.handover.lazy else job.backlog.outputs()
        changelog = changelog_frame(job.spark, job.root, job.output, backlog_outputs, restored)
        latest = latest_rows(changelog.where(F.col(BATCH) <= batch), keys).drop(BATCH)
        operators = {}
        if job.spec.checkpointed:  # the function's operator state, one snapshot per state partition
            operators[job.stateful.step.name] = partition_snapshots(
                job.spark, job.storage.path(CHECKPOINT), job.parallelism, batch, restored_operator_state(job.storage))
        return Snapshot(operators, functools.partial(write_parquet, keyed), functools.partial(write_parquet, latest),
                        True, base, keyed)

    def declared(self, job):
        return job.spec.kind.declared_states(job.spec)

    def check(self, savepoint, job, where, allow_non_restored_state):
        keys = list(job.spec.key_names)
        if list(savepoint.document["key_names"]) != keys:
            raise ResumeError(f"{where} is keyed by {savepoint.document['key_names']!r:.100}, the job by {keys}")
        types = list(job.spec.key.arrow_schema.types)
        if savepoint.key_types != types:
            raise ResumeError(f"{where} holds keys of types {[str(t) for t in savepoint.key_types]}, the job's are "
                              f"{[str(t) for t in types]}; restore it with the job it was taken of")
        upgrade = state_verdict(savepoint, job.spec, allow_non_restored_state, job.stateful.step.name)
        if upgrade is not None and upgrade.refusal is not None:
            raise ResumeError(f"{where} {upgrade.refusal}")
        if savepoint.latest_path is not None:
            import pyarrow.parquet as pq

            columns, want = pq.read_schema(savepoint.latest_path).names, changelog_schema(job.output).names
            if columns != want:
                raise ResumeError(f"{where} holds latest rows with columns {columns!r:.120}, the job's output is "
                                  f"{want!r:.120}; restore it with the job it was taken of")
        return upgrade

    def restore(self, savepoint, storage, job, upgrade=None):
        if upgrade is not None and upgrade.rewrites:  # states change form: every key rewritten, no base shared
            base, (states, latest) = [], upgraded_states(job.spark, savepoint, job.output, job.spec.key_names, upgrade)
        else:
            base, states = [(f"{RESTORED_BASE}/{i:04d}.arrow", sha) for i, (_, sha) in enumerate(savepoint.base)], \
                saved_states(job.spark, savepoint.keyed_path, job.output, job.spec.key_names)
            latest = None
            for (path, _), (inside, _) in zip(savepoint.base, base):
                share(path, storage.path(inside))
        over = partition_states(states, job.spec.key_names, job.output, job.parallelism, job.root)
        aligned = job.plan.flavour.sets_state_partitions
        job.plan.handover.hand_over(storage, Handed(base, aligned and len(base) == job.parallelism,
                                                    [(f["path"], f["sha256"]) for f in over], aligned))
        if latest is not None:
            write_parquet(latest, storage.path(RESTORED_LATEST))
        elif savepoint.latest_path is not None:
            share(savepoint.latest_path, storage.path(RESTORED_LATEST))
        if job.spec.checkpointed:  # a savepoint of the function before it kept operator state: empty, restored
            snapshots = savepoint.operator_state.get(job.stateful.step.name) or [{}]
            write_restored_operator_state(storage, redistribute_snapshots(snapshots, job.parallelism))
        return {} if savepoint.base else {"keys": savepoint.document["files"]["keyed-state.parquet"].get("rows")}


class _Operator(StateKind):
    name = "operator"

    def snapshot(self, job, batch):
        snapshots = operator_snapshots(job.spark, job.storage.path(CHECKPOINT), job.parallelism, batch)
        return Snapshot({job.stateful.step.name: snapshots}, pa.table({}), None, False)

    def check(self, savepoint, job, where, allow_non_restored_state):
        return None  # its operator state is held by check_restorable, as every job's

    def restore(self, savepoint, storage, job, upgrade=None):
        operator = job.stateful.step.name
        snapshots = savepoint.operator_state.get(operator)
        if snapshots is None:
            raise ResumeError(f"savepoint {savepoint.path} has no state for the operator {operator!r}")
        if not job.spec.checkpointed:  # what it held is dropped (check_restorable allowed it): its function keeps none
            snapshots = [{}]
        write_restored_operator_state(storage, redistribute_snapshots(snapshots, job.parallelism))
        return {}


KEYED, OPERATOR = _Keyed(), _Operator()


# -- taking and restoring ---------------------------------------------------------------------------


def take(job) -> str:
    """Write a savepoint of the running ``job`` after its last committed micro-batch; returns its path. What its
    position made on a server (a copy of a replication slot) is dropped if the savepoint is not written."""
    _check_running(job)
    batch, position = _committed_position(job)
    with job.source.discarding(position):
        document, operators, snap = _contents_at(job, batch, position)
        return write_savepoint(job.storage.base, document, operators, position, snap.keyed, snap.latest, snap.base)


def contents(job, batch: int | None = None) -> tuple:
    """What a savepoint of the running ``job`` after its last committed micro-batch (or ``batch``, one still
    kept) would hold, not written: (its document, operator-state document, source position, ``Snapshot``), which
    ``job.state()`` reads as a savepoint reader does. Nothing is kept on a server for it: what its position made
    there (a slot's copy) is discarded at once (the position names it still)."""
    _check_running(job)
    batch, position = _committed_position(job, batch)
    job.source.discard_position(position)
    document, operators, snap = _contents_at(job, batch, position)
    return document, operators, position, snap


def _contents_at(job, batch: int, position: dict) -> tuple:
    """(the document, the operator-state document, the ``Snapshot``) of a savepoint after ``batch`` at ``position``."""
    snap = job.state_kind.snapshot(job, batch)
    operators = operator_state_document({**{name: source.position_snapshots(own, job.parallelism)
                                            for name, source, _, own in source_inputs(job, position)},
                                         **snap.operators})
    watermark, tops, top = _watermark(job, position) if snap.timed else (None, {}, None)
    document = {
        "job": job.job_name, "batch": batch, "parallelism": job.parallelism, "graph": job.graph.to_json(),
        "source": job.source.describe(), "watermark": watermark, "top": top,
        "key_names": list(job.spec.key_names) if snap.timed else [], "kind": job.spec.kind.name,
        LONGEST: None if job.stall.longest_s is None else round(job.stall.longest_s * 1000),
        **job.source.position_fields(position),
    }
    declared = job.state_kind.declared(job)
    if declared is not None:  # what its function declared: a reader's typed columns, without the function
        document[states_field.FIELD] = states_field.record(declared)
    if tops and None not in tops:  # two inputs: each one's time, carried into a restored job's stream
        document["tops"] = {str(tag): top for tag, top in sorted(tops.items())}
    return document, operators, snap
