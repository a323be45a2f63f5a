"""What ``fw.write_savepoint`` checks of its DataFrame's rows before anything is written: one Spark aggregation.

Each refusal is one line naming a key and what is wrong, raised before the savepoint's ``.tmp-`` folder exists:

* a key written twice (one row per key);
* a null in a key column the stream's input schema says is never null (a table's primary key, say);
* a JSON state's text (a JSON list state's element) that is not JSON: Spark's ``try_parse_json``, which also
  refuses NaN, an object with a key twice and nesting deeper than Spark's limit;
* a date or a time (at any depth: in a record, a list, a map) outside years 1 to 9999, which Spark holds and
  Python's ``datetime`` does not: the codec would fail in a task.

The frame is grouped by key (the count, and per state the first offending value), then reduced to one row; only
that row reaches the driver.
"""

from __future__ import annotations

from pyspark.sql import functions as F
from pyspark.sql import types as T

from ....errors import FullWindowError
from ....spark.actions import run_action

#: What a refused JSON text is told it may be.
JSON_ACCEPTED = "JSON text as json.dumps writes it (numbers, strings, true, false, null, lists, objects)"


def _column(name: str):
    return F.col(f"`{name}`")


def _not_json(column):
    return column.isNull() | F.try_parse_json(column).isNull()


def out_of_range(column, dtype):
    """A boolean Column: whether ``column`` (of Spark type ``dtype``) holds a date or time outside years 1 to
    9999 anywhere inside it; None when its type holds none."""
    if isinstance(dtype, (T.DateType, T.TimestampType, T.TimestampNTZType)):
        return F.coalesce((F.year(column) < 1) | (F.year(column) > 9999), F.lit(False))
    if isinstance(dtype, T.StructType):
        parts = [p for p in (out_of_range(column.getField(f.name), f.dataType) for f in dtype.fields) if p is not None]
        return None if not parts else F.coalesce(_any(parts), F.lit(False))
    if isinstance(dtype, T.ArrayType):
        inner = out_of_range(F.lit(None).cast(dtype.elementType), dtype.elementType)
        return None if inner is None else F.coalesce(
            F.exists(column, lambda x: out_of_range(x, dtype.elementType)), F.lit(False))
    if isinstance(dtype, T.MapType):
        keys, values = (out_of_range(F.lit(None).cast(t), t) for t in (dtype.keyType, dtype.valueType))
        parts = ([F.exists(F.map_keys(column), lambda x: out_of_range(x, dtype.keyType))] if keys is not None else []) \
            + ([F.exists(F.map_values(column), lambda x: out_of_range(x, dtype.valueType))] if values is not None else [])
        return None if not parts else F.coalesce(_any(parts), F.lit(False))
    return None


def _any(parts):
    out = parts[0]
    for part in parts[1:]:
        out = out | part
    return out


def precheck(frame, keys: list, json_columns: list, state_columns: list, required) -> None:
    """Refuse in one line (``FullWindowError``) what the module lists; ``json_columns``: the JSON states' columns
    (text, or a list of texts), ``state_columns``: every state column, ``required``: the key columns never null."""
    per_key, checks = [F.count(F.lit(1)).alias("__fw_n")], []
    for i, name in enumerate(json_columns):
        listed = isinstance(frame.schema[name].dataType, T.ArrayType)
        offending = F.filter(_column(name), _not_json)[0] if listed else \
            F.when(_not_json(_column(name)), _column(name))
        per_key.append(F.first(F.when(_column(name).isNotNull(), offending), ignorenulls=True).alias(f"__fw_j{i}"))
        checks.append((f"__fw_j{i}", F.col(f"__fw_j{i}").isNotNull(), lambda v, name=name: (
            f"whose JSON state {name!r} holds {v!r:.60}, which is not JSON text; accepted: {JSON_ACCEPTED}")))
    for i, name in enumerate(state_columns):
        outside = out_of_range(_column(name), frame.schema[name].dataType)
        if outside is not None:
            per_key.append(F.max(outside).alias(f"__fw_t{i}"))
            checks.append((f"__fw_t{i}", F.col(f"__fw_t{i}"), lambda v, name=name: (
                f"whose state column {name!r} holds a date or time outside years 1 to 9999; accepted: a date or time "
                "from year 1 to 9999 (what a state holds, as Python's datetime)")))
    grouped = frame.groupBy(*[_column(k) for k in keys]).agg(*per_key)
    key = F.struct(*[_column(k) for k in keys])

    def first_key(condition, value=None):
        found = key.alias("key") if value is None else F.struct(key.alias("key"), value.alias("v"))
        return F.first(F.when(condition, found), ignorenulls=True)

    worst = grouped.agg(first_key(F.col("__fw_n") > 1, F.col("__fw_n")).alias("twice"),
                        *[first_key(_column(k).isNull()).alias(f"null{i}") for i, k in enumerate(required)],
                        *[first_key(condition, F.col(c)).alias(c) for c, condition, _ in checks])
    row = run_action(lambda: worst.collect(), frame.sparkSession)[0]

    def named(found) -> str:
        return ", ".join(f"{k}={found[k]!r:.40}" for k in keys)

    where = "write_savepoint's keyed_state holds key"
    if row["twice"] is not None:
        raise FullWindowError(f"{where} {named(row['twice']['key'])} {row['twice']['v']} times; accepted: one row "
                              "per key")
    for i, k in enumerate(required):
        if row[f"null{i}"] is not None:
            raise FullWindowError(f"{where} {named(row[f'null{i}'])}: key column {k!r} is null, which the stream's "
                                  f"schema does not allow; accepted: a {k} in every row")
    for column, _, say in checks:
        if row[column] is not None:
            raise FullWindowError(f"{where} {named(row[column]['key'])} {say(row[column]['v'])}")
