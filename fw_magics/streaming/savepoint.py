"""Savepoints of a running keyed streaming job, and what a restore at another parallelism needs (FLIP-8).

Taking one (``StreamingJob.savepoint()``), after the query's last committed micro-batch ``B``:

* **keyed state**: Spark's state data source, ``spark.read.format("statestore")`` at ``batchId=B``,
  the one value state ``fw_state`` per key (the per-key core's JSON, its pending timers
  included), with the backlog's state of each key the stream has not touched yet (the switch
  hands keys over lazily, :mod:`seed`), collected as Arrow and written as Parquet;
* **source positions**: the end offset Spark reported for ``B`` (``{"files": n}``: the first
  ``n`` manifest files are read), and the manifest as it is;
* **operator state**: the source's splits, one ``ListState`` per source subtask (``splits``),
  in fw_magics.state's versioned document;
* **watermark**: ``max(W, greatest event time read - delay)``: the watermark the query's next
  micro-batch would use (Spark's rule over everything read, the backlog's W included);
* **latest rows**: each key's latest changelog row up to ``B`` (the backlog's outputs included),
  so that the restored job's ``latest()`` lists every key, not only those with fresh records;
* the job graph, its parallelism, the source's description, the key columns.

Restoring (``start(..., from_savepoint=PATH, parallelism=N)``) is a new job (a new job name, a
fresh checkpoint): the splits are redistributed to N source subtasks, the read files become its
backlog (never read again), the keyed state is its ``initialState`` at
``spark.sql.shuffle.partitions=N``, so Spark re-splits it by key, W is the savepoint's
watermark, and the latest rows open its changelog (batch -2, ``RESTORED_BATCH``). The
savepoint's manifest must name the job's own source directory (a savepoint is untrusted: its
checksums find damage, not a forgery).
Everything public: no private Spark API, no JVM internals.
"""

from __future__ import annotations

import json
import os
import shutil
import uuid

from pyspark.sql import functions as F

from ..errors import FullWindowError, ResumeError
from ..graph import JobGraph
from ..state import operator_state_document
from . import backlog, files_source
from .changelog import BATCH, STATE
from .manifest import Manifest
from .query import STATE_VARIABLE
from .savepoint_files import Savepoint, list_savepoints, load_savepoint, write_savepoint
from .seed import merged_state
from .sink import latest_rows
from .splits import restored_manifest, source_snapshots

RESTORED = ("restored", "keyed-state.parquet")  # the restored job's copy of its initial keyed state
RESTORED_LATEST = ("restored", "latest.parquet")  # ... and of each key's latest changelog row

__all__ = ["Savepoint", "graph_at", "list_savepoints", "load_savepoint", "take_savepoint"]


def graph_at(graph: JobGraph, parallelism: int) -> JobGraph:
    """``graph`` with every operator at ``parallelism`` (a keyed streaming job's operators share it)."""
    doc = json.loads(graph.to_json())
    for operator in doc["operators"]:
        operator["parallelism"] = parallelism
    return JobGraph.from_json(json.dumps(doc))


def _last_progress(job):
    query = job.query
    # a trigger that found nothing new reports the *next* batch id, not committed: only batches that ran count
    reports = [p for p in (query.recentProgress or []) if p.sources and "addBatch" in (p.durationMs or {})]
    if not reports:
        raise FullWindowError(f"job {job.job_name!r} has committed no micro-batch yet; call "
                              "job.process_all_available() before job.savepoint()")
    return reports[-1]


def _read_files_frame(job, manifest: dict, read: int, scratch: str):
    """A batch DataFrame of the first ``read`` manifest files (for the watermark)."""
    doc = dict(manifest, backlog=read)
    Manifest(scratch).write(doc)
    source = job.source
    if source.format == "parquet":
        paths = [os.path.join(doc["directory"], f["name"]) for f in doc["files"][:read]]
        return job.spark.read.schema(source.schema).parquet(*paths)
    files_source.register(job.spark)
    return (job.spark.read.format(files_source.NAME).schema(source.schema).option("manifest", scratch)
            .option("format", source.format).load())


def _watermark(job, manifest: dict, read: int) -> int | None:
    if job.spec.event_time is None:
        return None
    if read == 0:
        return job.watermark
    scratch = os.path.join(job.root, "savepoints", f".manifest-{uuid.uuid4().hex}.json")
    try:
        w, _ = backlog.switch_watermark(_read_files_frame(job, manifest, read, scratch), job.spec.event_time,
                                        job.source.delay_ms)
    finally:
        if os.path.exists(scratch):
            os.remove(scratch)
    candidates = [x for x in (w, job.watermark) if x is not None]
    return max(candidates) if candidates else None


def keyed_state_frame(spark, checkpoint: str, key_names, batch: int | None = None):
    """Every key's state in ``checkpoint`` (at ``batch``, else the last committed): the key columns and
    ``__fw_state``, through Spark's state data source."""
    reader = spark.read.format("statestore").option("path", checkpoint).option("stateVarName", STATE_VARIABLE)
    if batch is not None:
        reader = reader.option("batchId", batch)
    frame = reader.load()
    return frame.select(*[F.col("key").getField(k).alias(k) for k in key_names],
                        F.col("value").getField("state").alias(STATE))


def check_running(job) -> None:
    """Refuse in one line a savepoint of a job without a running query, or with a job directory not local."""
    if job.query is None or job.phase not in ("switching", "stream"):
        raise FullWindowError(f"job.savepoint() needs the job's streaming query; {job.job_name!r} is in phase "
                              f"{job.phase!r} (call job.process_all_available() first)")
    if not job.storage.local:
        raise FullWindowError(f"savepoints are written to a local job directory; {job.root!r} is not local")


def committed_position(job) -> tuple[int, int, dict]:
    """(the last committed micro-batch, how many manifest files it had read, the manifest)."""
    progress = _last_progress(job)
    end = json.loads(progress.sources[0].endOffset)
    return progress.batchId, int(end["files"]), Manifest(job.storage.path("source", "manifest.json")).read()


def take_savepoint(job) -> str:
    """Write a savepoint of the running ``job`` after its last committed micro-batch; returns its path."""
    if job.mode != "mixed":
        raise FullWindowError(f"job.savepoint() needs a job started in mode 'mixed' (its source positions are "
                              f"the manifest's); {job.job_name!r} runs in mode {job.mode!r}")
    check_running(job)
    batch, read, manifest = committed_position(job)
    keyed = keyed_state_frame(job.spark, job.storage.path("checkpoint"), job.spec.key_names, batch)
    if job.backlog_seed() is not None:  # keys the stream has not touched are still only in the backlog's files
        keyed = merged_state(keyed, job.backlog_states(), job.spec.key_names)
    table = keyed.toArrow()
    latest = latest_rows(job.changelog_frame().where(F.col(BATCH) <= batch), job.spec.key_names).drop(BATCH)
    source_name = job.graph.operators[0].name
    operators = operator_state_document({source_name: source_snapshots(manifest["files"], read, job.parallelism)})
    document = {
        "job": job.job_name, "batch": batch, "parallelism": job.parallelism, "graph": job.graph.to_json(),
        "source": job.source.describe(), "watermark": _watermark(job, manifest, read),
        "key_names": list(job.spec.key_names), "kind": job.spec.kind, "read_files": read,
    }
    return write_savepoint(job.storage.base, document, operators, dict(manifest, backlog=read), table,
                           latest.toArrow())


def check_restorable(savepoint: Savepoint, graph: JobGraph, source: dict, key_names, parallelism: int) -> None:
    """Refuse in one line a savepoint taken of another graph, source or key (the same rule as a restart)."""
    where = f"savepoint {savepoint.path}"
    try:
        old = graph_at(JobGraph.from_json(savepoint.document["graph"]), parallelism)
    except FullWindowError as error:
        raise ResumeError(f"{where} has an unreadable job graph ({error})") from None
    changes = old.diff(graph)
    if changes:
        raise ResumeError(f"{where} was taken of a different graph ({'; '.join(changes)}); restore it with the "
                          "job it was taken of")
    recorded = savepoint.document["source"] if isinstance(savepoint.document["source"], dict) else {}
    changed = [k for k in source if recorded.get(k) != source[k]]
    if changed:
        k = changed[0]
        raise ResumeError(f"{where} was taken of another source: its {k} was {recorded.get(k)!r}, now {source[k]!r}")
    directory = savepoint.manifest["directory"]
    if directory != source.get("path"):
        raise ResumeError(f"{where} lists the files of {directory!r:.200}, not of the job's source "
                          f"{source.get('path')!r:.200}; restore it with the job it was taken of")
    if list(savepoint.document["key_names"]) != list(key_names):
        raise ResumeError(f"{where} is keyed by {savepoint.document['key_names']}, the job by {list(key_names)}")


def prepare_restore(savepoint: Savepoint, storage, source_operator: str, parallelism: int) -> dict:
    """Lay out a fresh job directory for a restore at ``parallelism``: the manifest with the splits
    redistributed, and a copy of the keyed state. Returns the switch event's details."""
    snapshots = savepoint.operator_state.get(source_operator)
    if snapshots is None:
        raise ResumeError(f"savepoint {savepoint.path} has no state for the source {source_operator!r}")
    manifest = restored_manifest(snapshots, savepoint.manifest, parallelism)
    Manifest(storage.path("source", "manifest.json")).write(manifest)
    _copy(savepoint.keyed_path, storage.path(*RESTORED))
    if savepoint.latest_path is not None:
        _copy(savepoint.latest_path, storage.path(*RESTORED_LATEST))
    return {"restored_from": savepoint.path, "restored_parallelism": savepoint.parallelism,
            "read_files": manifest["backlog"], "keys": savepoint.document["files"]["keyed-state.parquet"].get("rows")}


def _copy(source: str, target: str) -> None:
    os.makedirs(os.path.dirname(target), exist_ok=True)
    tmp = f"{target}.tmp-{uuid.uuid4().hex}"
    shutil.copyfile(source, tmp)
    os.replace(tmp, target)


def restored_latest(spark, storage, schema):
    """A restored job's first changelog part (each key's latest row in the savepoint), or None."""
    path = storage.path(*RESTORED_LATEST)
    if not os.path.exists(path):
        return None
    return spark.read.schema(schema).parquet(path)


def restored_initial_state(spark, storage):
    """The restored job's initialState (key columns, ``__fw_state``), or None for a job not restored."""
    path = storage.path(*RESTORED)
    if not os.path.exists(path):
        return None
    return spark.read.parquet(path)
