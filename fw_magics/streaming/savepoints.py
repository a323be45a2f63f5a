"""Savepoints of a running streaming job and restores at another parallelism (FLIP-8), keyed and operator alike.

Taking one (``take(job)``), after the query's last committed micro-batch ``B``:

* **source positions**: the end offset Spark reported for ``B`` (``{"files": n}``: the first
  ``n`` manifest files are read), and the manifest as it is; the source's splits as operator
  state, one ``ListState`` per source subtask (``splits``);
* the job's **state**, by its kind (``KEYED`` or ``OPERATOR``, the job's ``state_kind``):
  a keyed job's state read with Spark's state data source (``spark.read.format("statestore")``
  at ``batchId=B``, the one value state ``fw_state`` per key), joined with the handed-over
  files' state of each key the stream has not touched yet, and each key's latest changelog row
  up to ``B`` (so that a restored job's ``latest()`` lists every key): both written as Parquet
  by a Spark task (``state_files.write_parquet``), never collected; a non-keyed operator's
  snapshot per subtask (value state ``fw_operator``);
* **watermark**: ``max(W, greatest event time read - delay)``: the watermark the query's next
  micro-batch would use (Spark's rule over everything read, the backlog's W included);
* the job graph, its parallelism, the source's description, the key columns.

Restoring (``start(..., from_savepoint=PATH, parallelism=N)``) is a new job (a new job name, a
fresh checkpoint): ``check_restorable`` refuses a savepoint of another graph, source, folder or
key in one line (a savepoint is untrusted: its checksums find damage, not a forgery), and
``prepare_restore`` lays the new job's folder out: the splits redistributed to N source subtasks
(the read files become its backlog, never read again), and the state for the new subtasks -- a
keyed job's re-partitioned to N by one Spark job and handed over lazily as a backlog's is
(``hand_over_saved``: no ``initialState``, nothing per key in Python until a key's first fresh
record) with the latest rows opening its changelog (batch -2), an operator's snapshots
redistributed by each state's mode. Everything public: no private Spark API, no JVM internals.
"""

from __future__ import annotations

import functools
import json
import os
import uuid

import pyarrow as pa
from pyspark.sql import functions as F

from ..errors import FullWindowError, ResumeError
from ..graph import JobGraph
from ..recovery.filesystem import Storage
from ..recovery.paths import CHECKPOINT, RESTORED_LATEST, RESTORED_OPERATOR, SAVEPOINTS
from ..state import operator_state_document, redistribute_snapshots, validate_subtask_snapshot
from . import backlog, files_source
from .changelog import BATCH, STATE, changelog_schema
from .files_source import SUBTASK
from .follower import ran
from .manifest import Manifest
from .operator_query import OPERATOR_VARIABLE
from .query import STATE_VARIABLE
from .savepoint_files import Savepoint, load_savepoint, write_savepoint
from .seed import merged_state
from .sink import latest_rows
from .sources import source_change
from .splits import restored_manifest, source_snapshots
from .state_files import handed_over, partition_states, saved_states, write_parquet

#: The largest restored operator-state file read back.
MAX_RESTORED_BYTES = 256 << 20

__all__ = ["KEYED", "OPERATOR", "Savepoint", "graph_at", "load_savepoint", "take"]


def graph_at(graph: JobGraph, parallelism: int) -> JobGraph:
    """``graph`` with every operator at ``parallelism`` (a streaming job's operators share it)."""
    doc = json.loads(graph.to_json())
    for operator in doc["operators"]:
        operator["parallelism"] = parallelism
    return JobGraph.from_json(json.dumps(doc))


# -- the source's position --------------------------------------------------------------------------


def _last_progress(job):
    reports = [p for p in (job.query.recentProgress or []) if p.sources and ran(p)]
    if not reports:
        raise FullWindowError(f"job {job.job_name!r} has committed no micro-batch yet; call "
                              "job.process_all_available() before job.savepoint()")
    return reports[-1]


def _check_running(job) -> None:
    """Refuse in one line a savepoint of a job without a running query, or with a job directory not local."""
    if job.query is None or job.phase not in ("switching", "stream"):
        raise FullWindowError(f"job.savepoint() needs the job's streaming query; {job.job_name!r} is in phase "
                              f"{job.phase!r} (call job.process_all_available() first)")
    if not job.storage.local:
        raise FullWindowError(f"savepoints are written to a local job directory; {job.root!r} is not local")


def _committed_position(job) -> tuple[int, int, dict]:
    """(the last committed micro-batch, how many manifest files it had read, the manifest)."""
    progress = _last_progress(job)
    end = json.loads(progress.sources[0].endOffset)
    return progress.batchId, int(end["files"]), job.source.manifest(job.root).read()


def _read_files_frame(job, manifest: dict, read: int, scratch: str):
    """A batch DataFrame of the first ``read`` manifest files (for the watermark)."""
    doc = dict(manifest, backlog=read)
    source = job.source
    if source.format == "parquet":
        paths = [os.path.join(doc["directory"], f["name"]) for f in doc["files"][:read]]
        return job.spark.read.schema(source.schema).parquet(*paths)
    Manifest(job.root, scratch).write(doc)
    files_source.register(job.spark)
    return (job.spark.read.format(files_source.NAME).schema(source.schema).option("root", job.root)
            .option("manifest", scratch).option("format", source.format).load())


def _watermark(job, manifest: dict, read: int) -> int | None:
    if job.spec.event_time is None:
        return None
    if read == 0:
        return job.watermark
    scratch = f"{SAVEPOINTS}/.manifest-{uuid.uuid4().hex}.json"
    try:
        w, _ = backlog.switch_watermark(_read_files_frame(job, manifest, read, scratch), job.spec.event_time,
                                        job.source.delay_ms)
    finally:
        path = job.storage.path(scratch)
        if os.path.exists(path):
            os.remove(path)
    candidates = [x for x in (w, job.watermark) if x is not None]
    return max(candidates) if candidates else None


# -- the state, by kind -----------------------------------------------------------------------------


def keyed_state_frame(spark, checkpoint: str, key_names, batch: int | None = None):
    """Every key's state in ``checkpoint`` (at ``batch``, else the last committed): the key columns and
    ``__fw_state``, through Spark's state data source."""
    reader = spark.read.format("statestore").option("path", checkpoint).option("stateVarName", STATE_VARIABLE)
    if batch is not None:
        reader = reader.option("batchId", batch)
    frame = reader.load()
    return frame.select(*[F.col("key").getField(k).alias(k) for k in key_names],
                        F.col("value").getField("state").alias(STATE))


def operator_snapshots(spark, checkpoint: str, parallelism: int, batch: int | None = None) -> list[dict]:
    """Each subtask's operator-state snapshot in ``checkpoint`` (at ``batch``, else the last committed)."""
    reader = spark.read.format("statestore").option("path", checkpoint).option("stateVarName", OPERATOR_VARIABLE)
    if batch is not None:
        reader = reader.option("batchId", batch)
    frame = reader.load().select(F.col("key").getField(SUBTASK).alias("subtask"),
                                 F.col("value").getField("state").alias("state"))
    found = {int(row["subtask"]): json.loads(row["state"]) for row in frame.collect()}
    missing = [i for i in range(parallelism) if i not in found]
    if missing or len(found) != parallelism:
        raise ResumeError(f"the operator state in {checkpoint} has subtasks {sorted(found)}; expected 0 to "
                          f"{parallelism - 1} (every subtask is initialized in the first micro-batch)")
    snapshots = [found[i] for i in range(parallelism)]
    for i, snapshot in enumerate(snapshots):
        validate_subtask_snapshot(snapshot, f"subtask {i}'s operator state")
    return snapshots


class StateKind:
    """What a job's state is, and how a savepoint takes it and a restore lays it out (keyed or operator)."""

    name = "?"

    def snapshot(self, job, batch: int) -> tuple[dict, object, object, bool]:
        """(operator snapshots by operator name, the keyed state, the latest rows, whether W applies):
        each of the two tables a pyarrow Table, None, or ``write(path)`` for a Spark task to write it."""
        raise NotImplementedError

    def restore(self, savepoint: Savepoint, storage: Storage, job) -> None:
        """Lay out the restored job's state in its folder (besides the manifest)."""
        raise NotImplementedError


class _Keyed(StateKind):
    name = "keyed"

    def snapshot(self, job, batch):
        keys = job.spec.key_names
        keyed = keyed_state_frame(job.spark, job.storage.path(CHECKPOINT), keys, batch)
        if job.plan.handover.lazy:  # keys the stream has not touched are still only in the handed-over files
            keyed = merged_state(keyed, handed_over(job.spark, job.root, job.output, keys), keys)
        latest = latest_rows(job.changelog_frame().where(F.col(BATCH) <= batch), keys).drop(BATCH)
        return {}, functools.partial(write_parquet, keyed), functools.partial(write_parquet, latest), True

    def restore(self, savepoint, storage, job):
        hand_over_saved(job, saved_states(job.spark, savepoint.keyed_path, job.output, job.spec.key_names))
        if savepoint.latest_path is not None:
            _copy(savepoint.latest_path, storage.path(RESTORED_LATEST))


class _Operator(StateKind):
    name = "operator"

    def snapshot(self, job, batch):
        snapshots = operator_snapshots(job.spark, job.storage.path(CHECKPOINT), job.parallelism, batch)
        return {job.stateful.step.name: snapshots}, pa.table({}), None, False

    def restore(self, savepoint, storage, job):
        operator = job.stateful.step.name
        snapshots = savepoint.operator_state.get(operator)
        if snapshots is None:
            raise ResumeError(f"savepoint {savepoint.path} has no state for the operator {operator!r}")
        restored = redistribute_snapshots(snapshots, job.parallelism)
        storage.write_bytes(storage.path(RESTORED_OPERATOR), json.dumps(restored).encode())


KEYED, OPERATOR = _Keyed(), _Operator()


# -- taking and restoring ---------------------------------------------------------------------------


def take(job) -> str:
    """Write a savepoint of the running ``job`` after its last committed micro-batch; returns its path."""
    _check_running(job)
    batch, read, manifest = _committed_position(job)
    source_name = job.graph.operators[0].name
    states, keyed, latest, timed = job.state_kind.snapshot(job, batch)
    operators = operator_state_document({source_name: source_snapshots(manifest["files"], read, job.parallelism),
                                         **states})
    document = {
        "job": job.job_name, "batch": batch, "parallelism": job.parallelism, "graph": job.graph.to_json(),
        "source": job.source.describe(), "watermark": _watermark(job, manifest, read) if timed else None,
        "key_names": list(job.spec.key_names) if timed else [], "kind": job.spec.kind, "read_files": read,
    }
    return write_savepoint(job.storage.base, document, operators, dict(manifest, backlog=read), keyed, latest)


def check_restorable(savepoint: Savepoint, job) -> None:
    """Refuse in one line a savepoint taken of another graph, source, folder, key or output (the
    restart's rule, parallelism aside): whatever it names is compared with the job it restores."""
    where = f"savepoint {savepoint.path}"
    try:
        old = graph_at(JobGraph.from_json(savepoint.document["graph"]), job.parallelism)
    except FullWindowError as error:
        raise ResumeError(f"{where} has an unreadable job graph ({error})") from None
    changes = old.diff(job.graph)
    if changes:
        raise ResumeError(f"{where} was taken of a different graph ({'; '.join(changes)}); restore it with the "
                          "job it was taken of")
    source = job.source.describe()
    change = source_change(savepoint.document["source"], source)
    if change is not None:
        raise ResumeError(f"{where} was taken of another source: {change}")
    directory = savepoint.manifest["directory"]
    if directory != source.get("path"):
        raise ResumeError(f"{where} lists the files of {directory!r:.200}, not of the job's source "
                          f"{source.get('path')!r:.200}; restore it with the job it was taken of")
    if job.state_kind is not KEYED:
        return
    keys = list(job.spec.key_names)
    if list(savepoint.document["key_names"]) != keys:
        raise ResumeError(f"{where} is keyed by {savepoint.document['key_names']!r:.100}, the job by {keys}")
    types = list(job.spec.key.arrow_schema.types)
    if savepoint.key_types != types:
        raise ResumeError(f"{where} holds keys of types {[str(t) for t in savepoint.key_types]}, the job's are "
                          f"{[str(t) for t in types]}; restore it with the job it was taken of")
    if savepoint.latest_path is not None:
        import pyarrow.parquet as pq

        columns, want = pq.read_schema(savepoint.latest_path).names, changelog_schema(job.output).names
        if columns != want:
            raise ResumeError(f"{where} holds latest rows with columns {columns!r:.120}, the job's output is "
                              f"{want!r:.120}; restore it with the job it was taken of")


def prepare_restore(savepoint: Savepoint, job) -> dict:
    """Lay out the fresh folder of ``job`` restored at its parallelism: the manifest with the splits
    redistributed, and its state. Returns the switch event's details."""
    source_operator = job.graph.operators[0].name
    snapshots = savepoint.operator_state.get(source_operator)
    if snapshots is None:
        raise ResumeError(f"savepoint {savepoint.path} has no state for the source {source_operator!r}")
    manifest = restored_manifest(snapshots, savepoint.manifest, job.parallelism)
    job.source.manifest(job.root).write(manifest)
    job.state_kind.restore(savepoint, job.storage, job)
    detail = {"restored_from": savepoint.path, "restored_parallelism": savepoint.parallelism,
              "read_files": manifest["backlog"]}
    if job.state_kind is KEYED:
        detail["keys"] = savepoint.document["files"]["keyed-state.parquet"].get("rows")
    return detail


def _copy(source: str, target: str) -> None:
    import shutil

    os.makedirs(os.path.dirname(target), exist_ok=True)
    tmp = f"{target}.tmp-{uuid.uuid4().hex}"
    shutil.copyfile(source, tmp)
    os.replace(tmp, target)


def hand_over_saved(job, states) -> None:
    """A restored job's handover: ``states`` (a savepoint's keyed state) re-partitioned to the job's
    parallelism by one Spark job and recorded as the files its stream's lazy seed searches."""
    files = partition_states(states, job.spec.key_names, job.output, job.parallelism, job.root)
    job.plan.handover.hand_over(job.storage, files, aligned=job.plan.flavour.sets_state_partitions)


def restored_latest(spark, storage: Storage, output):
    """A restored job's first changelog part (each key's latest row in the savepoint), or None."""
    if storage.size_inside(RESTORED_LATEST) is None:
        return None
    return spark.read.schema(changelog_schema(output)).parquet(storage.path(RESTORED_LATEST))


def restored_operator_state(storage: Storage) -> list[dict] | None:
    """A restored operator job's snapshots, one per subtask, or None for a job not restored."""
    try:
        with storage.open_inside(RESTORED_OPERATOR, MAX_RESTORED_BYTES) as f:
            return json.loads(f.read())
    except FileNotFoundError:
        return None
