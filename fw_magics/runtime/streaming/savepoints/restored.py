"""What a restored streaming job finds in its folder: the latest rows its savepoint held and its operator
state, one snapshot per new subtask (``restore.prepare_restore`` lays them out; the running job reads them)."""

from __future__ import annotations

import json

from pyspark.sql import functions as F

from ....recovery.filesystem import Storage
from ....recovery.paths import HANDOVER, RESTORED_LATEST, RESTORED_OPERATOR
from ..driver.sink import latest_rows
from ..keyed.changelog import BATCH, changelog_schema
from ..keyed.seed import read_handover
from ..keyed.state_files import handed_over_outputs

#: The largest restored operator-state file read back.
MAX_RESTORED_BYTES = 256 << 20


def restored_latest(spark, storage: Storage, output):
    """A restored job's latest rows as its savepoint wrote them (over its base's), or None."""
    if storage.size_inside(RESTORED_LATEST) is None:
        return None
    return spark.read.schema(changelog_schema(output)).parquet(storage.path(RESTORED_LATEST))


def restored_rows(spark, storage: Storage, output, key_names):
    """A restored job's first changelog part: each key's latest row in its savepoint (the latest rows
    over the base's outputs), or None for a job not restored."""
    latest = restored_latest(spark, storage, output)
    if latest is None or not storage.present_inside(HANDOVER) or not read_handover(storage.root).base:
        return latest
    base = handed_over_outputs(spark, storage.root, output)  # a backlog's outputs, in its order
    layered = base.withColumn(BATCH, F.lit(0).cast("long")).unionByName(latest.withColumn(BATCH, F.lit(1).cast("long")))
    return latest_rows(layered, key_names).drop(BATCH)


def write_restored_operator_state(storage: Storage, snapshots: list[dict]) -> None:
    """A restored job's operator-state snapshots, one per new subtask (already redistributed)."""
    storage.write_bytes(storage.path(RESTORED_OPERATOR), json.dumps(snapshots).encode())


def restored_operator_state(storage: Storage) -> list[dict] | None:
    """A restored operator job's snapshots, one per subtask, or None for a job not restored."""
    try:
        with storage.open_inside(RESTORED_OPERATOR, MAX_RESTORED_BYTES) as f:
            return json.loads(f.read())
    except FileNotFoundError:
        return None
