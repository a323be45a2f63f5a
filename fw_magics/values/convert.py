"""Python records back to Arrow: the output side of every Python operator.

A user's function may yield tuples, lists, records (positional), dicts (by field name),
or plain values when the output schema has one column. Every path that turns Python
values into Arrow (sources, ``map_partition``, ``reduce``, ``AggregateFunction`` results,
the magics) goes through :class:`RowWriter`, which checks values, not just their types:
pyarrow silently truncates ``29.25`` into an int64 and turns ``1e40`` into a float32 ``inf``,
so a value that would be stored as anything but itself raises ``FullWindowError`` naming the
column (and the nested field), the expected type, the value and why it does not fit.

What each Spark type accepts, and how a value is checked, is in :mod:`value_checks`.

Cost: a column whose values all have the usual Python type (``int`` for bigint, ``float``/
``int`` for double, ``str`` for string...) is checked with one ``set(map(type, values))`` and
converted by Arrow in one call; only other columns (and nested ones) are checked value by
value.
"""

from __future__ import annotations

import itertools
from collections.abc import Iterable, Iterator, Sequence

import pyarrow as pa

from ..errors import FullWindowError
from .check_base import ARROW_ERRORS, Misfit, castable, cut, inf_count, key_problems, short
from .checks import check_for, null_refused

#: Records are converted in chunks of this size, so memory stays bounded by a batch.
CHUNK = 8192


class RowWriter:
    """Turns an iterable of Python records into Arrow record batches of one schema.

    ``nullable``: per column, whether ``None`` is accepted (default: the Arrow schema's
    fields). The runtime declares its output columns nullable to Spark and passes the
    user's declared nullability here, so a declared ``not null`` is still enforced.
    """

    def __init__(self, arrow_schema: pa.Schema, spark_types: list, context: str,
                 nullable: Sequence[bool] | None = None):
        self.schema = arrow_schema
        self.names = list(arrow_schema.names)
        self.name_set = frozenset(self.names)
        self.spark_types = spark_types
        self.context = context
        if nullable is None:
            nullable = [field.nullable for field in arrow_schema]
        self.checks = [
            check_for(spark_type, field.type, bool(null), field.name)
            for spark_type, field, null in zip(spark_types, arrow_schema, nullable)
        ]

    def batches(self, rows: Iterable) -> Iterator[pa.RecordBatch]:
        rows = iter(rows)
        while chunk := list(itertools.islice(rows, CHUNK)):
            yield self.batch(chunk)

    def batch(self, rows: list) -> pa.RecordBatch:
        columns = self._columns(rows)
        arrays = [self._array(values, i) for i, values in enumerate(columns)]
        return pa.RecordBatch.from_arrays(arrays, schema=self.schema)

    def conform(self, result) -> Iterator[pa.RecordBatch]:
        """A ``pyarrow.RecordBatch`` or ``Table`` a function returned, as batches of this schema.

        Columns are matched by name (any order, each exactly once); a column of another
        type is cast only within its family (integers and floats, decimals, timestamps,
        dates, strings, binaries, and lists, structs and maps of those) and only when
        nothing is lost: Arrow's safe cast refuses a fractional part, nan or an out-of-range
        value for an integer column and an integer a double cannot hold exactly, and a
        finite value that would become inf in a float column is refused here. A bool is
        not a number, nor a string a number. ``None`` where ``not null`` was declared is
        refused too. Each refusal is one line naming the column.
        """
        if isinstance(result, pa.Table):
            table_columns = result.column_names
            if len(set(table_columns)) == len(table_columns):
                result = result.select(self._order(table_columns))
            for batch in result.to_batches():
                yield self._conformed(batch)
            return
        if not isinstance(result, pa.RecordBatch):
            raise FullWindowError(
                f"{self.context} yielded {type(result).__name__} {short(result)}; with batches=True it must "
                "yield pyarrow.RecordBatch or pyarrow.Table objects"
            )
        yield self._conformed(result)

    def _order(self, names: list[str]) -> list[int]:
        """Positions of the schema's columns in ``names``; one line when they are not the same set."""
        if names == self.names:
            return list(range(len(names)))
        if len(set(names)) != len(names) or set(names) != self.name_set:
            extra = [n for n in dict.fromkeys(names) if n not in self.name_set]
            missing = [n for n in self.names if n not in names]
            twice = sorted({n for n in names if names.count(n) > 1})
            problems = ([f"unknown column(s) {', '.join(map(repr, extra))}"] if extra else []) + (
                [f"missing column(s) {', '.join(map(repr, missing))}"] if missing else []) + (
                [f"column(s) given twice {', '.join(map(repr, twice))}"] if twice else [])
            raise FullWindowError(f"{self.context} yielded a batch with {' and '.join(problems)}; the schema's "
                                  f"columns are: {', '.join(self.names)}")
        position = {name: i for i, name in enumerate(names)}
        return [position[name] for name in self.names]

    def _conformed(self, batch: pa.RecordBatch) -> pa.RecordBatch:
        order = self._order(batch.schema.names)
        arrays = []
        for index, source in enumerate(order):
            array = batch.column(source)
            field = self.schema.field(index)
            if not array.type.equals(field.type):
                array = self._cast(array, index)
            refused = null_refused(array, self.checks[index])
            if refused is not None:
                where = "" if refused.path == field.name else f" at {refused.path}"
                raise FullWindowError(f"{self.context} yielded a batch with null(s) in column {field.name!r}{where}, "
                                      f"declared {refused.expected} not null")
            arrays.append(array)
        return pa.RecordBatch.from_arrays(arrays, schema=self.schema)

    def _cast(self, array: pa.Array, index: int) -> pa.Array:
        field = self.schema.field(index)
        expected = self.checks[index].expected
        if not castable(array.type, field.type):
            raise FullWindowError(f"{self.context} yielded a batch whose column {field.name!r} is {array.type}; "
                                  f"the schema says {expected}")
        try:
            cast = array.cast(field.type, safe=True)
        except ARROW_ERRORS as error:
            first = (str(error).strip().splitlines() or [type(error).__name__])[0]
            raise FullWindowError(f"{self.context} yielded values that do not fit column {field.name!r} "
                                  f"({expected}): {cut(first, 200)}") from None
        if pa.types.is_float32(field.type) and inf_count(cast) > inf_count(array):
            raise FullWindowError(f"{self.context} yielded values that do not fit column {field.name!r} "
                                  f"({expected}): too large for {expected}, they would become inf")
        return cast

    # -- internals ---------------------------------------------------------------

    def _columns(self, rows: list) -> list:
        width = len(self.names)
        kinds = set(map(type, rows))
        if len(kinds) == 1 and issubclass(next(iter(kinds)), (tuple, list)):
            try:  # transposed in one C pass; rows of unequal lengths stop it
                columns = list(zip(*rows, strict=True))
            except ValueError:
                columns = None
            if columns is not None and len(columns) == width:
                return columns
        return [list(column) for column in zip(*map(self.normalize, rows))] if width else []

    def normalize(self, row):
        """``row`` (a tuple, list, dict or, for one column, a bare value) as a sequence in the schema's column
        order; a record that does not fit the schema's width or names is a one-line FullWindowError."""
        width = len(self.names)
        if isinstance(row, (tuple, list)):
            if len(row) != width:
                raise FullWindowError(
                    f"{self.context} produced a record of {len(row)} values {short(row)}; "
                    f"the schema has {width} columns: {', '.join(self.names)}"
                )
            return row
        if isinstance(row, dict):
            if row.keys() != self.name_set:
                raise FullWindowError(
                    f"{self.context} produced a dict with {key_problems(row, self.names)}; "
                    f"the schema's columns are: {', '.join(self.names)}"
                )
            return tuple(row[name] for name in self.names)
        if width == 1:
            return (row,)
        raise FullWindowError(
            f"{self.context} produced {type(row).__name__} {short(row)}; expected a tuple, "
            f"dict or record with the columns: {', '.join(self.names)}"
        )

    def _array(self, values: list, index: int) -> pa.Array:
        check = self.checks[index]
        arrow_type = self.schema.field(index).type
        try:
            try:
                return check.array(values, arrow_type)
            except ARROW_ERRORS as error:
                check.verify(values, strict=True)  # name the value Arrow refused, when it is ours to name
                try:
                    return pa.array(check.normalized(values), type=arrow_type)
                except ARROW_ERRORS:
                    pass
                first = (str(error).strip().splitlines() or [type(error).__name__])[0]
                raise FullWindowError(
                    f"{self.context} produced values that do not fit column {self.names[index]!r} "
                    f"({check.expected}): {cut(first, 200)}"
                ) from None
        except Misfit as misfit:
            raise FullWindowError(self._message(index, misfit)) from None

    def _message(self, index: int, misfit: Misfit) -> str:
        column = self.names[index]
        where = "" if misfit.path == column else f" at {misfit.path}"
        got = "None" if misfit.value is None else f"{type(misfit.value).__name__} {short(misfit.value)}"
        reason = f" ({misfit.reason})" if misfit.reason else ""
        return (f"{self.context} produced a value that does not fit column {column!r}{where}: "
                f"expected {misfit.expected}, got {got}{reason}")
