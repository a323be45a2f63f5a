"""Python records back to Arrow: the output side of every Python operator.

A user's function may yield tuples, lists, records (positional), dicts (by field name),
or plain values when the output schema has one column. A value that does not fit its
column raises FullWindowError naming the column, the expected and the actual type.
"""

from __future__ import annotations

import itertools
from collections.abc import Iterable, Iterator
from operator import itemgetter

import pyarrow as pa

from .errors import FullWindowError

#: Records are converted in chunks of this size, so memory stays bounded by a batch.
CHUNK = 8192


class RowWriter:
    """Turns an iterable of Python records into Arrow record batches of one schema."""

    def __init__(self, arrow_schema: pa.Schema, spark_types: list, context: str):
        self.schema = arrow_schema
        self.names = list(arrow_schema.names)
        self.name_set = frozenset(self.names)
        self.spark_types = spark_types
        self.context = context

    def batches(self, rows: Iterable) -> Iterator[pa.RecordBatch]:
        rows = iter(rows)
        while chunk := list(itertools.islice(rows, CHUNK)):
            yield self.batch(chunk)

    def batch(self, rows: list) -> pa.RecordBatch:
        columns = self._columns(rows)
        arrays = [self._array(values, i) for i, values in enumerate(columns)]
        return pa.RecordBatch.from_arrays(arrays, schema=self.schema)

    # -- internals ---------------------------------------------------------------

    def _columns(self, rows: list) -> list:
        width = len(self.names)
        kinds = set(map(type, rows))
        if len(kinds) == 1:
            kind = next(iter(kinds))
            if issubclass(kind, (tuple, list)):
                lengths = set(map(len, rows))
                if lengths == {width}:
                    return [list(map(itemgetter(i), rows)) for i in range(width)]
        return list(zip(*map(self._normalize, rows))) if width else []

    def _normalize(self, row):
        width = len(self.names)
        if isinstance(row, (tuple, list)):
            if len(row) != width:
                raise FullWindowError(
                    f"{self.context} produced a record of {len(row)} values {_short(row)}; "
                    f"the schema has {width} columns: {', '.join(self.names)}"
                )
            return row
        if isinstance(row, dict):
            if row.keys() != self.name_set:
                extra = sorted(map(str, row.keys() - self.name_set))
                missing = [n for n in self.names if n not in row]
                parts = []
                if extra:
                    parts.append(f"unknown field(s) {', '.join(extra)}")
                if missing:
                    parts.append(f"missing field(s) {', '.join(missing)}")
                raise FullWindowError(
                    f"{self.context} produced a dict with {' and '.join(parts)}; "
                    f"the schema's columns are: {', '.join(self.names)}"
                )
            return tuple(row[name] for name in self.names)
        if width == 1:
            return (row,)
        raise FullWindowError(
            f"{self.context} produced {type(row).__name__} {_short(row)}; expected a tuple, "
            f"dict or record with the columns: {', '.join(self.names)}"
        )

    def _array(self, values, index: int) -> pa.Array:
        arrow_type = self.schema.field(index).type
        try:
            return pa.array(values, type=arrow_type)
        except (pa.ArrowInvalid, pa.ArrowTypeError, TypeError, ValueError, OverflowError):
            pass
        for value in values:  # find the first value that does not fit, for the message
            try:
                pa.array([value], type=arrow_type)
            except (pa.ArrowInvalid, pa.ArrowTypeError, TypeError, ValueError, OverflowError):
                raise FullWindowError(
                    f"{self.context} produced a value that does not fit column "
                    f"{self.names[index]!r}: expected {self.spark_types[index].simpleString()}, "
                    f"got {type(value).__name__} {_short(value)}"
                ) from None
        raise FullWindowError(  # pragma: no cover - every value fits alone but not together
            f"{self.context} produced values that do not fit column {self.names[index]!r} "
            f"({self.spark_types[index].simpleString()})"
        )


def _short(value, limit: int = 60) -> str:
    text = repr(value)
    return text if len(text) <= limit else text[: limit - 3] + "..."
