"""User-facing function types: AggregateFunction and Order."""

from __future__ import annotations

import datetime as _dt
import decimal
import enum

from pyspark.sql import types as T

from ..errors import FullWindowError
from ..values.records import Record


class Order(str, enum.Enum):
    """Sort order; the plain strings "asc" and "desc" are accepted wherever an Order is."""

    ASCENDING = "asc"
    DESCENDING = "desc"

    @classmethod
    def parse(cls, order) -> Order:
        if isinstance(order, Order):
            return order
        if isinstance(order, str):
            lowered = order.strip().lower()
            for member in cls:
                if lowered in (member.value, member.name.lower()):
                    return member
        raise FullWindowError(
            f"unknown order {order!r}; accepted: fw.Order.ASCENDING, fw.Order.DESCENDING, 'asc', 'desc'"
        )


class AggregateFunction:
    """Incremental aggregation over a full window, as Flink's AggregateFunction.

    Override ``create_accumulator``, ``add`` (or the vectorized ``add_batch``),
    ``get_result`` and, for completeness, ``merge``. ``get_result`` returns a tuple, dict
    or record matching ``schema``, or a plain value when the schema has one column.
    ``schema`` (a DDL string) can be set on the class, passed to ``aggregate``, or left
    out when ``get_result(create_accumulator())`` has no None in it to infer from.

    ``add_batch(batch, accumulator)`` receives a ``pyarrow.RecordBatch`` and is used
    instead of ``add`` when defined: the fast path.

    ``columns`` (a tuple of column names) declares which input columns ``add``/``add_batch``
    read; only those are sent to Python, which saves most of the cost on wide inputs.

    A running aggregate on a stream (``key_by(...).aggregate(agg)``, no full window) keeps
    each key's accumulator as keyed state, never pickled: a JSON value (lists, dicts, numbers,
    strings) unless ``accumulator_schema`` declares its DDL type ("total double, n long" makes
    it a record, "double" one value).
    """

    schema: str | None = None
    columns: tuple[str, ...] | None = None
    accumulator_schema: str | None = None
    add_batch = None  # define ``add_batch(self, batch, accumulator)`` for the vectorized path

    def create_accumulator(self):
        raise NotImplementedError

    def add(self, value, accumulator):
        raise NotImplementedError

    def get_result(self, accumulator):
        raise NotImplementedError

    def merge(self, a, b):
        raise NotImplementedError


def as_aggregate_function(agg) -> AggregateFunction:
    """Accept an AggregateFunction instance or subclass; check it is usable."""
    if isinstance(agg, type) and issubclass(agg, AggregateFunction):
        agg = agg()
    if not isinstance(agg, AggregateFunction):
        raise FullWindowError(
            f"aggregate takes an fw.AggregateFunction or Spark aggregate Columns (F.sum('x'), ...); "
            f"got {type(agg).__name__} {agg!r:.60}"
        )
    cls = type(agg)
    missing = [
        name for name in ("create_accumulator", "get_result")
        if getattr(cls, name) is getattr(AggregateFunction, name)
    ]
    if cls.add is AggregateFunction.add and cls.add_batch is None:
        missing.append("add (or add_batch)")
    if missing:
        raise FullWindowError(f"{cls.__name__} must define {', '.join(missing)}")
    return agg


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
