"""User-facing function types: AggregateFunction and Order."""

from __future__ import annotations

import abc
import enum

from ..errors import FullWindowError
from .function import Function, check_function


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


class AggregateFunction(Function):
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
    _instead = {"add": "add_batch"}  # a full window's aggregate may define add_batch alone

    @abc.abstractmethod
    def create_accumulator(self):
        raise NotImplementedError

    @abc.abstractmethod
    def add(self, value, accumulator):
        raise NotImplementedError

    @abc.abstractmethod
    def get_result(self, accumulator):
        raise NotImplementedError

    def merge(self, a, b):
        raise NotImplementedError


def as_aggregate_function(agg) -> AggregateFunction:
    """Accept an AggregateFunction instance or subclass that defines what it must (``check_function``)."""
    return check_function(agg, AggregateFunction,
                          "aggregate takes an fw.AggregateFunction or Spark aggregate Columns (F.sum('x'), ...)")[0]
