"""Keyed state values as JSON: plain JSON values, or values of a declared type in a JSON form.

Nothing in a key's state is ever pickled. A state declared without a type holds JSON values
(checked with ``fw_magics.values.json_values``); one declared with a DDL type holds values of that
type, checked by the same :class:`~fw_magics.values.convert.RowWriter` as every output, and stored in
a JSON form chosen by the Arrow type:

==================  ==========================================================================
Arrow type          JSON form
==================  ==========================================================================
int, bool, string   as is
float, double       the number; ``"NaN"``, ``"Infinity"``, ``"-Infinity"`` for the others
decimal             its digits as a string ("12.50")
binary              base64 text
date                ISO text ("2024-01-31")
timestamp           integer microseconds since 1970-01-01 UTC (naive for timestamp_ntz)
duration, time      integer microseconds (since midnight for a time)
list                a list; map: a list of [key, value] pairs; struct: a list of field values
==================  ==========================================================================

Decoding gives what a record read from Arrow holds (aware UTC datetimes, ``Decimal``,
records for structs, ``(key, value)`` tuples for maps), so a value looks the same whether it
came from the data or from the state. Every read decodes afresh: changing a value obtained from
a state changes nothing until it is written back (Flink's RocksDB backend behaves alike).

Pure Python: pyarrow and the converter, no Spark session.
"""

from __future__ import annotations

import base64
import datetime as _dt
import decimal
import functools
import math

import pyarrow as pa

from ..errors import FullWindowError
from .convert import RowWriter
from .json_values import ACCEPTED, json_problem
from .records import record_type

EPOCH = _dt.datetime(1970, 1, 1, tzinfo=_dt.timezone.utc)
EPOCH_NAIVE = _dt.datetime(1970, 1, 1)
MICROSECOND = _dt.timedelta(microseconds=1)
_SPECIAL_FLOATS = {"NaN": math.nan, "Infinity": math.inf, "-Infinity": -math.inf}


def copy_json(value):
    """A deep copy of a JSON value (lists and dicts copied, scalars shared)."""
    kind = type(value)
    if kind is list:
        return [copy_json(v) for v in value]
    if kind is dict:
        return {k: copy_json(v) for k, v in value.items()}
    return value


class JsonCodec:
    """Untyped state: JSON values, stored as they are (copied in and out)."""

    typed = False

    def __init__(self, label: str):
        self.label = label

    def encode(self, value):
        problem = json_problem(value)
        if problem is not None:
            where, culprit = problem
            at = f" at {where}" if where else ""
            raise FullWindowError(
                f"{self.label} got {culprit}{at}; an untyped state holds {ACCEPTED} "
                "(declare a DDL type on its descriptor for other values)"
            )
        return copy_json(value)

    def decode(self, data):
        return copy_json(data)

    def encode_all(self, values) -> list:
        return [self.encode(value) for value in values]


class TypedCodec:
    """State of a declared type: checked by a RowWriter, stored in the JSON form of its Arrow type.

    ``record``: the type is a list of fields and a value is a record (tuple, dict or record);
    otherwise a value is one value of the single field's type.
    """

    typed = True

    def __init__(self, label: str, arrow_schema: pa.Schema, spark_types: list, record: bool):
        self.label = label
        self.record = record
        self.schema = arrow_schema
        self.writer = RowWriter(arrow_schema, spark_types, label)
        if record:
            self.arrow_type = pa.struct(list(arrow_schema))
        else:
            self.arrow_type = arrow_schema.field(0).type
        _check_storable(self.arrow_type, label)
        self._decode = decoder(self.arrow_type)

    def encode(self, value):
        return None if value is None else self.encode_all([value])[0]

    def encode_all(self, values) -> list:
        """Each of ``values`` (none None) checked and stored, in one batch: one Arrow round trip for all."""
        rows = values if self.record else [(value,) for value in values]
        canonical = self.writer.batch(rows).to_pylist()  # checked, then as Arrow gives it back
        if self.record:
            parts = [(f.name, encoder(f.type)) for f in self.schema]
            return [[part(row[name]) for name, part in parts] for row in canonical]
        name, part = self.schema.names[0], encoder(self.arrow_type)
        return [part(row[name]) for row in canonical]

    def decode(self, data):
        return self._decode(data)


def _check_storable(arrow_type: pa.DataType, label: str) -> None:
    t = pa.types
    if t.is_list(arrow_type) or t.is_large_list(arrow_type):
        return _check_storable(arrow_type.value_type, label)
    if t.is_map(arrow_type):
        _check_storable(arrow_type.key_type, label)
        return _check_storable(arrow_type.item_type, label)
    if t.is_struct(arrow_type):
        for i in range(arrow_type.num_fields):
            _check_storable(arrow_type.field(i).type, label)
        return None
    simple = (t.is_null, t.is_boolean, t.is_integer, t.is_floating, t.is_string, t.is_large_string, t.is_binary,
              t.is_large_binary, t.is_decimal, t.is_date32, t.is_timestamp, t.is_duration, t.is_time64)
    if not any(check(arrow_type) for check in simple):
        raise FullWindowError(
            f"{label} has type {arrow_type}, which keyed state cannot store; accepted: atomic types, "
            "arrays, maps and structs of them"
        )
    return None


def _float(value):
    value = float(value)
    if math.isfinite(value):
        return value
    return "NaN" if math.isnan(value) else ("Infinity" if value > 0 else "-Infinity")


def _binary(value):
    return base64.b64encode(bytes(value)).decode("ascii")


def _timestamp(value):
    return (value - (EPOCH_NAIVE if value.tzinfo is None else EPOCH)) // MICROSECOND


def _time(value):
    return ((value.hour * 60 + value.minute) * 60 + value.second) * 1_000_000 + value.microsecond


@functools.lru_cache(maxsize=256)
def encoder(arrow_type: pa.DataType):
    """The JSON form of a value of ``arrow_type`` (as Arrow's ``to_pylist`` gives it): a function of the value
    (None -> None), built once per type, so the type's tests are not run again for every value."""
    t = pa.types
    if t.is_boolean(arrow_type) or t.is_integer(arrow_type) or t.is_string(arrow_type) or t.is_large_string(arrow_type):
        return _as_is
    if t.is_floating(arrow_type):
        one = _float
    elif t.is_decimal(arrow_type):
        one = str
    elif t.is_binary(arrow_type) or t.is_large_binary(arrow_type):
        one = _binary
    elif t.is_date32(arrow_type):
        one = _dt.date.isoformat
    elif t.is_timestamp(arrow_type):
        one = _timestamp
    elif t.is_duration(arrow_type):
        def one(value):
            return value // MICROSECOND
    elif t.is_time64(arrow_type):
        one = _time
    elif t.is_list(arrow_type) or t.is_large_list(arrow_type):
        item = encoder(arrow_type.value_type)

        def one(value):
            return [item(v) for v in value]
    elif t.is_map(arrow_type):
        key, entry = encoder(arrow_type.key_type), encoder(arrow_type.item_type)

        def one(value):
            return [[key(k), entry(v)] for k, v in value]
    elif t.is_struct(arrow_type):
        fields = [arrow_type.field(i) for i in range(arrow_type.num_fields)]
        names, parts = [f.name for f in fields], [encoder(f.type) for f in fields]

        def one(value):
            if isinstance(value, dict):  # what to_pylist gives
                return [part(value.get(name)) for name, part in zip(names, parts)]
            return [part(v) for part, v in zip(parts, value)]
    else:
        return _as_is

    def encode(value):
        return None if value is None else one(value)

    return encode


@functools.lru_cache(maxsize=256)
def decoder(arrow_type: pa.DataType):
    """The value ``encoder(arrow_type)`` stored, as a record read from Arrow holds it: a function of the stored
    JSON (None -> None), built once per type."""
    t = pa.types
    if t.is_floating(arrow_type):
        def one(data):
            return _SPECIAL_FLOATS[data] if isinstance(data, str) else float(data)
    elif t.is_decimal(arrow_type):
        one = decimal.Decimal
    elif t.is_binary(arrow_type) or t.is_large_binary(arrow_type):
        one = base64.b64decode
    elif t.is_date32(arrow_type):
        one = _dt.date.fromisoformat
    elif t.is_timestamp(arrow_type):
        epoch = EPOCH if arrow_type.tz is not None else EPOCH_NAIVE

        def one(data):
            return epoch + data * MICROSECOND
    elif t.is_duration(arrow_type):
        def one(data):
            return data * MICROSECOND
    elif t.is_time64(arrow_type):
        def one(data):
            seconds, micros = divmod(data, 1_000_000)
            minutes, second = divmod(seconds, 60)
            hour, minute = divmod(minutes, 60)
            return _dt.time(hour, minute, second, micros)
    elif t.is_list(arrow_type) or t.is_large_list(arrow_type):
        item = decoder(arrow_type.value_type)

        def one(data):
            return [item(v) for v in data]
    elif t.is_map(arrow_type):
        key, value = decoder(arrow_type.key_type), decoder(arrow_type.item_type)

        def one(data):
            return [(key(k), value(v)) for k, v in data]
    elif t.is_struct(arrow_type):
        fields = [arrow_type.field(i) for i in range(arrow_type.num_fields)]
        cls, parts = record_type(tuple(f.name for f in fields)), [decoder(f.type) for f in fields]

        def one(data):
            return tuple.__new__(cls, [part(v) for part, v in zip(parts, data)])
    else:  # int, bool, string: as stored
        return _as_is

    def decode(data):
        return None if data is None else one(data)

    return decode


def _as_is(data):
    return data
