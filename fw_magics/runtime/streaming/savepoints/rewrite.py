"""A restore into changed code whose states change form (``upgrade.Upgrade.rewrites``: a state dropped, a
struct's fields added or moved): every key's state rewritten by Spark tasks, none through the driver.

The savepoint's keyed-state file over its base's states (tombstones kept, so a key cleared since the base
stays cleared) is read as one DataFrame and each state document passed through ``Upgrade.upgrade`` in a
``mapInArrow``; the restored job then gets it as its only layer (no base shared: a base file would still
hold the old form, which a later savepoint of the restored job shares and is checked against the new
declarations). The changelog's first part, each key's latest row, is the savepoint's latest rows over its
base's outputs, as ``restored_rows`` layers them for a shared base, written once here.
"""

from __future__ import annotations

import functools
import json
import os

import pyarrow as pa
from pyspark.sql import functions as F

from ....datastream.physical.arrow_calls import map_in_arrow
from ...batch.result_files import read_results
from ..driver.sink import latest_rows
from ..keyed.backlog import backlog_outputs, initial_state
from ..keyed.changelog import BATCH, STATE, TOMBSTONE, backlog_schema, changelog_schema
from ..keyed.seed import overlaid
from ..keyed.state_files import saved_states
from .upgrade import Upgrade


def _upgraded(upgrade: Upgrade, batches):
    for batch in batches:
        texts = batch.column(STATE).to_pylist()
        out = [text if not text or text == TOMBSTONE else
               json.dumps(upgrade.upgrade(json.loads(text)), separators=(",", ":"), allow_nan=False)
               for text in texts]
        index = batch.schema.get_field_index(STATE)
        yield batch.set_column(index, STATE, pa.array(out, pa.string()))


def upgraded_states(spark, savepoint, output, key_names, upgrade: Upgrade):
    """(every key's state in the restoring function's form: the key columns and ``__fw_state``, tombstones
    kept; each key's latest changelog row over the base's outputs, or None)."""
    keys = list(key_names)
    states = saved_states(spark, savepoint.keyed_path, output, keys)
    latest = None if savepoint.latest_path is None else \
        spark.read.schema(changelog_schema(output)).parquet(savepoint.latest_path)
    if savepoint.base:
        names = [os.path.relpath(path, savepoint.path) for path, _ in savepoint.base]
        rows = read_results(spark, savepoint.path, names, backlog_schema(output))
        states = overlaid(states, initial_state(rows, keys), keys)
        outputs = backlog_outputs(rows)
        if latest is not None:
            layered = outputs.withColumn(BATCH, F.lit(0).cast("long")).unionByName(
                latest.withColumn(BATCH, F.lit(1).cast("long")))
            latest = latest_rows(layered, keys).drop(BATCH)
    return map_in_arrow(states, functools.partial(_upgraded, upgrade), states.schema), latest
