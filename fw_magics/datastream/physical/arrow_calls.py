"""``mapInArrow`` and grouped ``applyInArrow`` for frames with any column names.

PySpark's classic DataFrame passes its columns to an Arrow UDF as ``df[name]``, which reads
a dot as a nested field: a top-level column named ``"a.b"`` fails with UNRESOLVED_COLUMN
before anything runs. Such columns go in under positional stand-in names, and the Python
side gets its batches back with the real names, so records and user functions never see
the difference.

Every function goes to Spark inside ``cancel_marks.watched_call``: if its action is cancelled,
a worker that Spark's own kill missed ends itself.
"""

from __future__ import annotations

import functools

from pyspark.sql import functions as F

from ...spark.cancel_marks import watched_call
from ...spark.shipping import ship_code
from . import workers


def _needs_stand_in(name: str) -> bool:
    return "." in name or "`" in name


def _stand_ins(frame):
    """``frame`` with awkward top-level names replaced, and the real names (None if none were)."""
    names = frame.columns
    if not any(map(_needs_stand_in, names)):
        return frame, None
    return frame.toDF(*[f"__fw_col{i}" if _needs_stand_in(n) else n for i, n in enumerate(names)]), names


def map_in_arrow(frame, fn, schema):
    """``frame.mapInArrow(fn, schema)``, whatever the frame's column names; the user's own
    modules ``fn`` reaches travel with it (``fw_magics.spark.shipping``)."""
    ship_code(fn)
    frame, names = _stand_ins(frame)
    if names is not None:
        fn = functools.partial(workers.with_names, names, fn)
    return frame.mapInArrow(functools.partial(watched_call, fn), schema)


def apply_in_arrow(frame, key_columns, op, with_key: bool, schema):
    """``frame.groupBy(*key_columns).applyInArrow(workers.grouped(op, ...), schema)``.

    ``key_columns`` are Spark references (backticks where needed, ``a.b`` for a nested
    field), as ``schema.resolve_field`` gives them.
    """
    ship_code(op)
    frame, names = _stand_ins(frame)
    if names is not None:
        renames = dict(zip(names, frame.columns))
        key_columns = [_renamed_reference(column, renames) for column in key_columns]
    per_key = workers.grouped(functools.partial(watched_call, op), with_key, names)
    return frame.groupBy(*[F.col(c) for c in key_columns]).applyInArrow(per_key, schema)


def _renamed_reference(reference: str, renames: dict[str, str]) -> str:
    """``reference`` with its top-level column replaced by that column's stand-in."""
    if reference.startswith("`"):
        end = 1
        while True:
            end = reference.index("`", end)
            if reference[end + 1:end + 2] != "`":
                break
            end += 2
        top, rest = reference[1:end].replace("``", "`"), reference[end + 1:]
    else:
        top, _, rest = reference.partition(".")
        rest = "." + rest if rest else ""
    return renames[top] + rest if top in renames else reference
