"""Savepoints of a non-keyed operator job, and restoring one at another parallelism (FLIP-8).

The same self-describing, atomic savepoint directory as a keyed job's (``savepoint_files``), with
``kind: "operator"`` in its document and two operators in ``operator-state.json``:

* the source's splits (one ``ListState`` ``splits`` per source subtask, as for a keyed job);
* the user's operator: one snapshot per subtask, read with Spark's state data source
  (``spark.read.format("statestore")``, value state ``fw_operator``) at the last committed
  micro-batch ``B``: exactly what ``snapshot_state`` left at the end of the subtask's last run.

The keyed-state file is there, empty (no columns, no rows): the job has no keyed state.

Restoring at ``N``: the splits are redistributed as for a keyed job (the read files are never
read again, the unread ones by their new owner), and the operator's snapshots with
``fw_magics.state.redistribute_snapshots`` (split, union and broadcast by each state's mode);
the result is written to ``restored/operator-state.json`` in the new job's directory, one
snapshot per new subtask, and handed to the subtasks as ``initialState``.
"""

from __future__ import annotations

import json
import os

from pyspark.sql import functions as F

from ..errors import ResumeError
from ..recovery.filesystem import Storage
from ..state import operator_state_document, redistribute_snapshots, validate_subtask_snapshot
from .files_source import SUBTASK
from .manifest import Manifest
from .operator_query import OPERATOR_VARIABLE
from .savepoint import check_running, committed_position
from .savepoint_files import write_savepoint
from .splits import restored_manifest, source_snapshots

RESTORED_OPERATOR = ("restored", "operator-state.json")


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


def take_operator_savepoint(job) -> str:
    """Write a savepoint of the running operator ``job`` after its last committed micro-batch; returns its path."""
    import pyarrow as pa

    check_running(job)
    batch, read, manifest = committed_position(job)
    snapshots = operator_snapshots(job.spark, job.storage.path("checkpoint"), job.parallelism, batch)
    source, operator = job.graph.operators[0].name, job.stateful.step.name
    operators = operator_state_document({source: source_snapshots(manifest["files"], read, job.parallelism),
                                         operator: snapshots})
    document = {
        "job": job.job_name, "batch": batch, "parallelism": job.parallelism, "graph": job.graph.to_json(),
        "source": job.source.describe(), "watermark": None, "key_names": [], "kind": job.spec.kind,
        "read_files": read,
    }
    return write_savepoint(job.storage.base, document, operators, dict(manifest, backlog=read), pa.table({}))


def prepare_operator_restore(savepoint, storage: Storage, source: str, operator: str, parallelism: int) -> dict:
    """Lay out a fresh job directory for a restore at ``parallelism``: the manifest with the splits
    redistributed, and each new subtask's operator state. Returns the switch event's details."""
    snapshots = {name: savepoint.operator_state.get(name) for name in (source, operator)}
    lacking = [name for name, found in snapshots.items() if found is None]
    if lacking:
        raise ResumeError(f"savepoint {savepoint.path} has no state for the operator {lacking[0]!r}")
    manifest = restored_manifest(snapshots[source], savepoint.manifest, parallelism)
    Manifest(storage.path("source", "manifest.json")).write(manifest)
    restored = redistribute_snapshots(snapshots[operator], parallelism)
    storage.write_bytes(storage.path(*RESTORED_OPERATOR), json.dumps(restored).encode())
    return {"restored_from": savepoint.path, "restored_parallelism": savepoint.parallelism,
            "read_files": manifest["backlog"]}


def restored_operator_state(storage: Storage) -> list[dict] | None:
    """The restored job's snapshots, one per subtask (written by :func:`prepare_operator_restore`), or None."""
    path = storage.path(*RESTORED_OPERATOR)
    if not os.path.exists(path):
        return None
    with open(path, "rb") as f:
        return json.loads(f.read())
