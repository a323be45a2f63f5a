"""Which keys' state changed between two readings of a job's state (``job.state_changes(from_batch, to_batch)``):
a Spark join of the two ``keyed_state()`` frames, never a collect.

One row per key whose typed state differs: the key columns, ``before`` and ``after`` (each a struct of the
state columns ``keyed_state()`` has; null before: the key was added, null after: it was removed) and
``change`` (``added``, ``removed`` or ``changed``). Two states are the same when their JSON is (Spark's
``to_json`` of the struct: a map compares too, NaN equals NaN, -0.0 differs from 0.0); a key's pending
timers are not part of it (``reader.timers()`` reads them).
"""

from __future__ import annotations

import functools

from pyspark.sql import functions as F

BEFORE, AFTER, CHANGE = "before", "after", "change"
ADDED, REMOVED, CHANGED = "added", "removed", "changed"


def changes(before, after):
    """The keys whose state differs from ``before`` (a ``SavepointReader``) to ``after`` (one of the same job)."""
    keys = before.key_names
    old, new = before.keyed_state(), after.keyed_state()
    values = [c for c in old.columns if c not in keys]
    left = old.select(*[F.col(f"`{k}`").alias(f"__fw_b{i}") for i, k in enumerate(keys)],
                      F.struct(*[F.col(f"`{c}`") for c in values]).alias(BEFORE))
    right = new.select(*[F.col(f"`{k}`").alias(f"__fw_a{i}") for i, k in enumerate(keys)],
                       F.struct(*[F.col(f"`{c}`") for c in values]).alias(AFTER))
    on = functools.reduce(lambda a, b: a & b, [left[f"__fw_b{i}"].eqNullSafe(right[f"__fw_a{i}"])
                                               for i in range(len(keys))])
    joined = left.join(right, on, "full")
    change = (F.when(F.col(BEFORE).isNull(), F.lit(ADDED)).when(F.col(AFTER).isNull(), F.lit(REMOVED))
              .otherwise(F.lit(CHANGED)))
    return joined.where(~F.to_json(F.col(BEFORE)).eqNullSafe(F.to_json(F.col(AFTER)))).select(
        *[F.coalesce(F.col(f"__fw_b{i}"), F.col(f"__fw_a{i}")).alias(k) for i, k in enumerate(keys)],
        F.col(BEFORE), F.col(AFTER), change.alias(CHANGE))
