"""What the full-window operations are given, checked and resolved (keyed and non-keyed alike).

Functions (callable, their names), sort fields and orders, aggregates (Spark Columns or an
fw.AggregateFunction with its columns and result schema) and the writer of each output
schema; ``analysed`` builds a Spark plan without running it, so a bad column fails at once
as one line.
"""

from __future__ import annotations

import datetime as _dt
import decimal
import inspect

from pyspark.sql import Column
from pyspark.sql import functions as F
from pyspark.sql import types as T

from ..api.functions import AggregateFunction, Order
from ..errors import FullWindowError
from ..values.convert import RowWriter
from ..values.records import Record
from ..values.schema import arrow_schema, nullable, parse_schema, require_orderable, resolve_field
from .physical import workers


def writer_for(schema: T.StructType, context: str, declared: T.StructType | None = None) -> RowWriter:
    """A writer of ``schema`` (the nullable output schema Spark is given) that still refuses
    None where ``declared`` (the schema the user wrote) says ``not null``."""
    nulls = None if declared is None else [f.nullable for f in declared.fields]
    return RowWriter(arrow_schema(schema), [f.dataType for f in schema.fields], context, nulls)


#: How each operation calls its function, for the arity check and its message, and with how many arguments.
CALLS = {"map_partition": "fn(records)", "reduce": "fn(a, b) with two records"}
ARITY = {"map_partition": 1, "reduce": 2}


def check_batches(batches) -> bool:
    """map_partition's ``batches`` flag: True or False, nothing else."""
    if not isinstance(batches, bool):
        raise FullWindowError(f"map_partition's batches takes True or False; got {type(batches).__name__} "
                              f"{batches!r:.60}")
    return batches


def check_callable(fn, what: str) -> None:
    """``fn`` is callable, and callable the way ``what`` calls it (when its signature says)."""
    if not callable(fn):
        raise FullWindowError(f"{what} takes a function; got {type(fn).__name__} {fn!r:.60}")
    call = CALLS.get(what)
    if call is None:
        return
    try:
        signature = inspect.signature(fn)
    except (TypeError, ValueError):  # no signature to read (some builtins, C callables): let it run
        return
    try:
        signature.bind(*[None] * ARITY[what])
    except TypeError:
        raise FullWindowError(
            f"{what} function {function_name(fn)!r:.60} takes {str(signature)[:60]}; {what} calls it as {call}"
        ) from None


def function_name(fn) -> str:
    return getattr(fn, "__name__", type(fn).__name__)


def sort_specs(schema: T.StructType, field, order, case_sensitive: bool = False) -> list[tuple[str, Order]]:
    """Resolve one field or a list of fields, with one order or one order per field."""
    fields = list(field) if isinstance(field, (list, tuple)) else [field]
    if not fields:
        raise FullWindowError("sort_partition needs at least one field")
    orders = list(order) if isinstance(order, (list, tuple)) else [order] * len(fields)
    if len(orders) != len(fields):
        raise FullWindowError(f"sort_partition got {len(fields)} fields but {len(orders)} orders")
    specs = []
    for item, direction in zip(fields, orders):
        direction = Order.parse(direction)
        if callable(item):
            raise FullWindowError("a key-selector function must be the only sort field")
        column, dtype = resolve_field(schema, item, case_sensitive=case_sensitive)
        require_orderable(column, dtype)
        specs.append((column, direction))
    return specs


def sort_columns(specs) -> list[Column]:
    """Spark's order: ascending puts nulls first, descending puts them last."""
    return [F.col(c).asc() if o is Order.ASCENDING else F.col(c).desc() for c, o in specs]


def describe_sort(field, order) -> str:
    if callable(field) and not isinstance(field, (list, tuple)):
        return f"{function_name(field)} {Order.parse(order).value}"
    fields = list(field) if isinstance(field, (list, tuple)) else [field]
    orders = list(order) if isinstance(order, (list, tuple)) else [order] * len(fields)
    return ", ".join(f"{f} {Order.parse(o).value}" for f, o in zip(fields, orders))


def with_key_column(schema: T.StructType) -> T.StructType:
    """The schema plus the binary key column a key selector adds."""
    return T.StructType(nullable(schema).fields + [T.StructField(workers.KEY_COLUMN, T.BinaryType())])


def aggregate_columns(agg) -> list[Column] | None:
    """The Spark aggregate Columns in ``agg``, or None when it is not Columns."""
    if isinstance(agg, Column):
        return [agg]
    if isinstance(agg, (list, tuple)) and agg and all(isinstance(c, Column) for c in agg):
        return list(agg)
    return None


def input_columns(agg, schema: T.StructType, keep=(), case_sensitive: bool = False) -> list[Column] | None:
    """The columns an AggregateFunction declared it reads (plus ``keep``), or None for all."""
    if agg.columns is None:
        return None
    names = [agg.columns] if isinstance(agg.columns, str) else list(agg.columns)
    refs = [resolve_field(schema, name, what=f"{type(agg).__name__}.columns", case_sensitive=case_sensitive)[0]
            for name in names]
    return [F.col(c) for c in dict.fromkeys([*keep, *refs])]


def result_schema(agg, schema, spark) -> T.StructType:
    """The result schema as declared (``schema``, ``agg.schema``, or inferred); callers make it nullable."""
    if schema is not None:
        return parse_schema(schema, spark)
    if agg.schema is not None:
        return parse_schema(agg.schema, spark, what=f"{type(agg).__name__}.schema")
    return infer_result_schema(agg)


def analysed(make_frame, what: str):
    """Build and analyse a plan (no job) so a bad column fails now, as one line."""
    try:
        frame = make_frame()
        return frame, frame.schema
    except Exception as error:
        text = str(error).strip()
        first = text.splitlines()[0] if text else type(error).__name__
        raise FullWindowError(f"{what}: {first}") from None


def infer_result_schema(agg: AggregateFunction) -> T.StructType:
    """The result schema from ``get_result(create_accumulator())`` when it has no None."""
    sample = agg.get_result(agg.create_accumulator())
    try:
        if isinstance(sample, Record):
            return T.StructType([T.StructField(n, _infer(v)) for n, v in zip(sample._fields, sample)])
        if isinstance(sample, dict):
            return T.StructType([T.StructField(str(n), _infer(v)) for n, v in sample.items()])
        if isinstance(sample, (tuple, list)):
            return T.StructType([T.StructField(f"_{i + 1}", _infer(v)) for i, v in enumerate(sample)])
        return T.StructType([T.StructField("value", _infer(sample))])
    except _CannotInfer as problem:
        raise FullWindowError(
            f"cannot infer the result schema of {type(agg).__name__}: get_result(create_accumulator()) "
            f"gives {sample!r:.60} ({problem}); pass schema='...' to aggregate or set {type(agg).__name__}.schema"
        ) from None


class _CannotInfer(Exception):
    pass


def _infer(value) -> T.DataType:
    if value is None:
        raise _CannotInfer("a None has no type")
    for python, spark in (
        (bool, T.BooleanType()), (int, T.LongType()), (float, T.DoubleType()), (str, T.StringType()),
        (bytes, T.BinaryType()), (_dt.datetime, T.TimestampType()), (_dt.date, T.DateType()),
        (decimal.Decimal, T.DecimalType(38, 18)),
    ):
        if isinstance(value, python):
            return spark
    if isinstance(value, Record):
        return T.StructType([T.StructField(n, _infer(v)) for n, v in zip(value._fields, value)])
    if isinstance(value, (list, tuple)) and value:
        return T.ArrayType(_infer(value[0]))
    raise _CannotInfer(f"{type(value).__name__} values have no inferable Spark type")
