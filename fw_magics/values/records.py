"""Records: what a user's function sees, built cheaply from Arrow batches.

A record is a tuple subclass with field access by name (``r.price``, or ``r.get("a b")``
for names that are not identifiers) and position (``r[2]``); ``tuple(r)`` gives its values
and ``r == (1, "a")`` compares by value. Indexing stays tuple's own C code and each field
is the C descriptor ``collections.namedtuple`` uses (an ``itemgetter`` property where that is
missing), so reading a field costs what it costs on a namedtuple. One record class is made
per schema (cached), and a batch's records are built by calling that class on each row of
``zip`` over its columns, all in C: no pyspark ``Row`` and no Python frame per record
(``cls(values)`` reaches tuple's own constructor directly; ``tuple.__new__(cls, values)`` goes
through a wrapper that copies its arguments, about 40 ns a record more).
"""

from __future__ import annotations

import datetime as _dt
import functools
import itertools
import keyword
from collections import namedtuple
from collections.abc import Iterator, Sequence
from operator import itemgetter, methodcaller

import pyarrow as pa


def _field_descriptor():
    """The field descriptor ``collections.namedtuple`` gives its fields, taken from a namedtuple:
    CPython's is written in C and called as ``(index, doc)``; elsewhere an itemgetter property."""
    kind = type(namedtuple("Probe", "a").__dict__["a"])
    if kind is property:  # pragma: no cover - other interpreters
        return lambda index, doc: property(itemgetter(index), doc=doc)
    return kind


_tuplegetter = _field_descriptor()


class Record(tuple):
    """Base class of every record; subclasses carry ``_fields`` and ``_index``."""

    __slots__ = ()
    _fields: tuple[str, ...] = ()
    _index: dict[str, int] = {}

    def __getattr__(self, name: str):
        # Reached only for names that are not plain identifiers (properties cover those).
        index = type(self)._index.get(name)
        if index is None:
            raise AttributeError(
                f"record has no field {name!r}; fields are: {', '.join(self._fields)}"
            )
        return tuple.__getitem__(self, index)

    def get(self, name: str, *default):
        """The field called ``name`` (any string, e.g. "sum(price)"); ``default`` if absent."""
        index = type(self)._index.get(name)
        if index is None:
            if default:
                return default[0]
            raise KeyError(f"record has no field {name!r}; fields are: {', '.join(self._fields)}")
        return tuple.__getitem__(self, index)

    def as_dict(self) -> dict:
        """The record as ``{field: value}``, nested records included."""
        return {
            name: value.as_dict() if isinstance(value, Record) else value
            for name, value in zip(self._fields, self)
        }

    def __repr__(self) -> str:
        inner = ", ".join(f"{name}={value!r}" for name, value in zip(self._fields, self))
        return f"Record({inner})"

    def __reduce__(self):
        return (make_record, (self._fields, tuple(self)))


_TUPLE_NAMES = set(dir(tuple)) | {"as_dict", "get", "_fields", "_index"}


@functools.lru_cache(maxsize=1024)
def record_type(fields: tuple[str, ...]) -> type[Record]:
    """The record class for these field names (one class per distinct schema)."""
    namespace: dict = {"__slots__": (), "_fields": fields, "_index": {}}
    for position, name in enumerate(fields):
        namespace["_index"].setdefault(name, position)
        if name.isidentifier() and not keyword.iskeyword(name) and name not in _TUPLE_NAMES:
            namespace.setdefault(name, _tuplegetter(position, None))
    return type("Record", (Record,), namespace)


def make_record(fields: Sequence[str], values: Sequence) -> Record:
    """Build one record (used for unpickling and by callers outside hot loops)."""
    return tuple.__new__(record_type(tuple(fields)), values)


def _column_values(array: pa.Array) -> list:
    """Python values of one Arrow column; structs become records, recursively."""
    if isinstance(array, pa.ChunkedArray):
        array = array.combine_chunks()
    kind = array.type
    if pa.types.is_struct(kind):
        fields = tuple(kind.field(i).name for i in range(kind.num_fields))
        cls = record_type(fields)
        children = [_column_values(child) for child in array.flatten()]
        values = list(map(cls, zip(*children))) if children else [cls()] * len(array)
        if array.null_count:
            valid = array.is_valid().to_pylist()
            values = [v if ok else None for v, ok in zip(values, valid)]
        return values
    if (pa.types.is_list(kind) or pa.types.is_large_list(kind)) and pa.types.is_struct(kind.value_type):
        flat = _column_values(array.flatten())
        offsets = array.offsets.to_pylist()
        valid = array.is_valid().to_pylist()
        return [
            flat[offsets[i] - offsets[0] : offsets[i + 1] - offsets[0]] if valid[i] else None
            for i in range(len(array))
        ]
    if array.null_count == 0 and (pa.types.is_integer(kind) or pa.types.is_floating(kind)):
        return array.to_numpy().tolist()  # numpy's tolist builds Python numbers faster than Arrow's
    if pa.types.is_timestamp(kind) or pa.types.is_date32(kind):
        values = _times(array)
        if values is not None:
            return values
    return array.to_pylist()


# -- dates and timestamps -------------------------------------------------------------------------
# pyarrow's to_pylist builds each timestamp through Python's time-zone machinery (about 2.4 µs a value with a
# zone, 0.8 µs without; a date 0.6 µs). numpy builds the naive values in C (about 35 ns), and a zone is set
# the way pyarrow sets it: a UTC zone's datetimes made with it directly, any other's by ``astimezone`` from
# UTC (what pyarrow calls too: the same wall time, ``fold`` and tzinfo). The values equal pyarrow's, tested
# against them (tests/test_records.py).

#: Python's datetime range (years 1 to 9999) in microseconds and days from the epoch, a day inside each end
#: so that a wall time in any zone stays in it; a column reaching outside is left to pyarrow.
_MICROS = (-62_135_596_800_000_000 + 86_400_000_000, 253_402_300_799_999_999 - 86_400_000_000)
_DAYS = (-719_162, 2_932_896)
#: Zone names whose wall time is UTC's at every instant.
_UTC_NAMES = frozenset({"UTC", "Etc/UTC", "UCT", "Etc/UCT", "Universal", "Etc/Universal", "Zulu", "Etc/Zulu",
                        "GMT", "Etc/GMT", "GMT0", "Etc/GMT0", "GMT+0", "Etc/GMT+0", "GMT-0", "Etc/GMT-0",
                        "Greenwich", "Etc/Greenwich"})


@functools.lru_cache(maxsize=64)
def _zone(tz: str):
    """The tzinfo pyarrow gives a timestamp of zone ``tz`` (its own object: records hold the same); None when
    pyarrow refuses the zone (its own conversion then says why)."""
    try:
        return pa.scalar(0, type=pa.timestamp("us", tz=tz)).as_py().tzinfo
    except (pa.ArrowException, ValueError, KeyError):
        return None


def _times(array: pa.Array) -> list | None:
    """A date32 or timestamp (s, ms, us) column's Python values, as ``to_pylist`` gives them, built through
    numpy; None where that is not this (nanoseconds, an unknown zone, a value near Python's range's ends)."""
    kind = array.type
    if pa.types.is_date32(kind):
        numbers, unit, bounds = array.cast(pa.int32()), "datetime64[D]", _DAYS
    else:
        if kind.unit == "ns":
            return None
        zone = None if kind.tz is None else _zone(kind.tz)
        if kind.tz is not None and zone is None:
            return None
        if kind.unit != "us":
            try:
                array = array.cast(pa.timestamp("us", tz=kind.tz))  # exact: whole seconds or milliseconds
            except pa.ArrowInvalid:  # beyond int64's microseconds, far outside Python's range
                return None
        numbers, unit, bounds = array.cast(pa.int64()), "datetime64[us]", _MICROS
    nulls = numbers.null_count
    values = numbers.fill_null(0).to_numpy() if nulls else numbers.to_numpy()
    if len(values) and (values.min() < bounds[0] or values.max() > bounds[1]):
        return None
    result = values.astype(unit).astype(object).tolist()
    if pa.types.is_timestamp(kind) and kind.tz is not None:
        if zone is _dt.timezone.utc or getattr(zone, "key", None) in _UTC_NAMES:
            result = list(map(_dt.datetime.combine, result, map(_dt.datetime.time, result), itertools.repeat(zone)))
        else:
            utc = map(_dt.datetime.combine, result, map(_dt.datetime.time, result), itertools.repeat(_dt.timezone.utc))
            result = list(map(methodcaller("astimezone", zone), utc))
    if nulls:
        result = [value if valid else None for value, valid in zip(result, array.is_valid().to_pylist())]
    return result


def batch_records(batch: pa.RecordBatch | pa.Table) -> Iterator[Record]:
    """The records of one Arrow batch, in order."""
    cls = record_type(tuple(batch.schema.names))
    columns = [_column_values(column) for column in batch.columns]
    if not columns:
        return iter([cls()] * batch.num_rows)
    return map(cls, zip(*columns))  # one C call per record


def batches_records(batches) -> Iterator[Record]:
    """The records of a stream of Arrow batches, read lazily one batch at a time."""
    return itertools.chain.from_iterable(map(batch_records, batches))
