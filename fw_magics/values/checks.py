"""The value checks behind ``convert.RowWriter``: one check per Spark type, naming a value that does not fit.

What each Spark type accepts (close to PySpark's ``verifySchema``, friendlier where nothing
is lost):

=====================  ======================================================================
integral types         ``int`` (numpy integers too) within the type's range; a ``float`` or
(tinyint..bigint)      ``Decimal`` with no fractional part (``3.0``) within range, stored as
                       its integer. Refused: a fractional part, nan/inf, out of range, bool.
float, double          ``float`` (numpy floats too); ``int`` while exactly representable
                       (|n| <= 2**24 for float, 2**53 for double). A finite value that would
                       become inf in a float is refused; ``inf``/``nan`` given as such stay.
                       Rounding to float's precision (and underflow to 0) is not refused.
decimal(p,s)           ``Decimal`` or ``int`` with at most ``s`` digits after the point (after
                       dropping trailing zeros) and ``p - s`` before it. Refused: float,
                       nan/inf, anything that would lose digits.
string                 ``str`` only (not bytes, not numbers).
binary                 ``bytes``, ``bytearray``, ``memoryview`` (not str).
boolean                ``bool`` (numpy bools too), not 0/1.
date                   ``date``; a ``datetime`` only at midnight (its time of day would be lost).
timestamp(_ntz)        ``datetime`` (naive ones are taken as UTC for timestamp); not dates or numbers,
                       not pandas' NaT (use None) nor a Timestamp with nanoseconds.
interval day to second ``timedelta``; time: ``datetime.time``; void: ``None``.
array                  ``list``, ``tuple`` or numpy array; every element checked.
map                    ``dict`` or a list of ``(key, value)`` pairs (what records hold); keys
                       and values checked, keys never None.
struct                 a tuple or record with one value per field, or a dict with exactly the
                       field names (not a list: Arrow would read it as pairs); every field checked.
=====================  ======================================================================

``None`` is refused where the declared schema says ``not null``, at any depth. Other types
(variant, geometry, ...) are left to Arrow.
"""

from __future__ import annotations

import datetime as _dt
import decimal
import itertools
import math
import numbers
import struct
from operator import itemgetter

import pyarrow as pa
import pyarrow.compute as pc

from .check_base import Check, key_problems


class _Anything(Check):
    """Types left to Arrow (variant, geometry, ...)."""

    def verify(self, values: list, strict: bool = False) -> None:
        pass


class _Boolean(Check):
    fast = frozenset({bool})

    def fits(self, value):
        return None if _is_bool(value) else ""


def _is_bool(value) -> bool:
    """A Python or numpy bool (numpy's is not a subclass of bool, nor of int)."""
    return isinstance(value, bool) or (type(value).__module__ == "numpy" and type(value).__name__ in ("bool", "bool_"))


class _Integer(Check):
    fast = frozenset({int})

    def __init__(self, expected: str, nullable: bool, path: str, bits: int):
        super().__init__(expected, nullable, path)
        self.low, self.high = -(2 ** (bits - 1)), 2 ** (bits - 1) - 1

    def fits(self, value):
        if _is_bool(value):
            return ""
        if isinstance(value, numbers.Integral):
            number = int(value)
        elif isinstance(value, decimal.Decimal):
            if not value.is_finite():
                return "not a finite number"
            if value != value.to_integral_value():
                return "its fractional part would be lost"
            if value.adjusted() > 40:  # far out of range: do not build a huge int to say so
                return f"out of range for {self.expected}: {self.low}..{self.high}"
            number = int(value)
        elif isinstance(value, numbers.Real):
            real = float(value)
            if not math.isfinite(real):
                return "not a finite number"
            if not real.is_integer():
                return "its fractional part would be lost"
            number = int(real)
        else:
            return ""
        if not self.low <= number <= self.high:
            return f"out of range for {self.expected}: {self.low}..{self.high}"
        return None


class _Floating(Check):
    fast = frozenset({float, int})

    def __init__(self, expected: str, nullable: bool, path: str, bits: int):
        super().__init__(expected, nullable, path)
        self.single = bits == 32
        self.exact = 2**24 if self.single else 2**53  # Arrow refuses integers beyond these

    def array(self, values: list, arrow_type: pa.DataType) -> pa.Array:
        if not set(map(type, values)) <= self.fast:
            self.each(values)
            return pa.array(values, type=arrow_type)
        result = pa.array(values, type=arrow_type)
        if self.single and _has_inf(result):
            self.each(values)  # a finite value became inf (inf given as such is fine)
        return result

    def verify(self, values: list, strict: bool = False) -> None:
        if strict or not set(map(type, values)) <= self.fast:
            self.each(values)
        elif self.single and _has_inf(pa.array(values, type=pa.float32())):
            self.each(values)

    def fits(self, value):
        if _is_bool(value):
            return ""
        if isinstance(value, numbers.Integral):
            if abs(int(value)) > self.exact:
                return f"too large to be stored exactly in {self.expected}"
            return None
        if isinstance(value, numbers.Real) and not isinstance(value, decimal.Decimal):
            if self.single:
                real = float(value)
                if math.isfinite(real):
                    try:
                        struct.pack("<f", real)
                    except OverflowError:
                        return f"too large for {self.expected}: it would become inf"
            return None
        return ""


def _has_inf(array: pa.Array) -> bool:
    return bool(array.null_count < len(array) and pc.any(pc.is_inf(array)).as_py())


class _Decimal(Check):
    fast = frozenset({decimal.Decimal, int})

    def __init__(self, expected: str, nullable: bool, path: str, precision: int, scale: int):
        super().__init__(expected, nullable, path)
        self.precision, self.scale = precision, scale
        self.quantum = decimal.Decimal(1).scaleb(-scale)

    def fits(self, value):
        if _is_bool(value):
            return ""
        if isinstance(value, numbers.Integral):
            value = decimal.Decimal(int(value))
        elif not isinstance(value, decimal.Decimal):
            return ""
        if not value.is_finite():
            return "not a finite number"
        _, digits, exponent = value.as_tuple()
        digits = list(digits)
        while exponent < 0 and len(digits) > 1 and digits[-1] == 0:  # trailing zeros after the point
            digits.pop()
            exponent += 1
        if not any(digits):
            return None  # zero, whatever its exponent
        if -exponent > self.scale:
            return f"it has more than {self.scale} digits after the point"
        if len(digits) + exponent > self.precision - self.scale:
            return f"it has more than {self.precision - self.scale} digits before the point"
        return None

    def normal(self, value):
        if isinstance(value, numbers.Integral):
            return int(value)
        return value.quantize(self.quantum, context=decimal.Context(prec=self.precision + 2))


class _OfTypes(Check):
    """Values of one of ``accepted`` (isinstance), nothing else."""

    accepted: tuple = ()

    def fits(self, value):
        return None if isinstance(value, self.accepted) else ""


class _String(_OfTypes):
    fast = frozenset({str})
    accepted = (str,)


class _Binary(_OfTypes):
    fast = frozenset({bytes})
    accepted = (bytes, bytearray, memoryview)


class _Timestamp(Check):
    fast = frozenset({_dt.datetime})

    def fits(self, value):
        if not isinstance(value, _dt.datetime):
            return ""
        if type(value).__name__ == "NaTType":
            return "NaT is not a time; use None for a missing one"
        if getattr(value, "nanosecond", 0):
            return "Spark keeps microseconds: its nanoseconds would be lost"
        return None


class _Duration(_OfTypes):
    fast = frozenset({_dt.timedelta})
    accepted = (_dt.timedelta,)


class _Time(_OfTypes):
    fast = frozenset({_dt.time})
    accepted = (_dt.time,)


class _Void(_OfTypes):
    accepted = ()


class _Date(Check):
    fast = frozenset({_dt.date})

    def fits(self, value):
        if isinstance(value, _dt.datetime):
            if type(value).__name__ == "NaTType":
                return "NaT is not a date; use None for a missing one"
            if value.hour or value.minute or value.second or value.microsecond or getattr(value, "nanosecond", 0):
                return "its time of day would be lost"
            return None
        return None if isinstance(value, _dt.date) else ""


class _Array(Check):
    fast = frozenset({list, tuple})

    def __init__(self, expected: str, nullable: bool, path: str, element: Check):
        super().__init__(expected, nullable, path)
        self.element = element

    def fits(self, value):
        return None if isinstance(value, (list, tuple)) or type(value).__name__ == "ndarray" else ""

    def children(self, values: list, strict: bool) -> None:
        self.element.verify(list(itertools.chain.from_iterable(v for v in values if v is not None)), strict)

    def normal(self, value):
        normal = self.element.normal
        return [None if v is None else normal(v) for v in value]


class _Map(Check):
    fast = frozenset({dict})

    def __init__(self, expected: str, nullable: bool, path: str, key: Check, value: Check):
        super().__init__(expected, nullable, path)
        self.key, self.value = key, value

    def fits(self, value):
        if isinstance(value, dict):
            return None
        if isinstance(value, (list, tuple)):
            if all(isinstance(pair, (list, tuple)) and len(pair) == 2 for pair in value):
                return None
            return "a map is a dict or a list of (key, value) pairs"
        return ""

    def children(self, values: list, strict: bool) -> None:
        keys: list = []
        items: list = []
        for mapping in values:
            if mapping is None:
                continue
            if isinstance(mapping, dict):
                keys.extend(mapping.keys())
                items.extend(mapping.values())
            else:
                keys.extend(map(itemgetter(0), mapping))
                items.extend(map(itemgetter(1), mapping))
        self.key.verify(keys, strict)
        self.value.verify(items, strict)

    def normal(self, value):
        pairs = value.items() if isinstance(value, dict) else value
        key, item = self.key.normal, self.value.normal
        return [(key(k), None if v is None else item(v)) for k, v in pairs]


class _Struct(Check):
    def __init__(self, expected: str, nullable: bool, path: str, names: list, fields: list):
        super().__init__(expected, nullable, path)
        self.names, self.fields, self.name_set = names, fields, frozenset(names)

    def verify(self, values: list, strict: bool = False) -> None:
        self.each(values)  # a struct's shape is always looked at: its width, or its dict's keys
        self.children(values, strict)

    def fits(self, value):
        if isinstance(value, tuple):  # records and Rows too; Arrow reads a list as (key, value) pairs
            if len(value) == len(self.names):
                return None
            count = len(value)
            return (f"it has {count} value{'' if count == 1 else 's'}; the struct has "
                    f"{len(self.names)} fields: {', '.join(self.names)}")
        if isinstance(value, dict):
            return None if value.keys() == self.name_set else key_problems(value, self.names)
        return ""

    def children(self, values: list, strict: bool) -> None:
        names = self.names
        rows = [tuple(v[n] for n in names) if isinstance(v, dict) else v for v in values if v is not None]
        for i, field in enumerate(self.fields):
            field.verify(list(map(itemgetter(i), rows)), strict)

    def normal(self, value):
        if isinstance(value, dict):
            value = [value[n] for n in self.names]
        return tuple(None if v is None else field.normal(v) for field, v in zip(self.fields, value))


def check_for(spark_type, arrow_type: pa.DataType, nullable: bool, path: str) -> Check:
    """The check for one column (or nested field) of ``arrow_type``, named by ``spark_type``."""
    expected = _type_name(spark_type, arrow_type)
    types = pa.types
    if getattr(spark_type, "typeName", lambda: "")() in ("variant", "geometry", "geography", "udt"):
        return _Anything(expected, nullable, path)
    if types.is_boolean(arrow_type):
        return _Boolean(expected, nullable, path)
    if types.is_signed_integer(arrow_type):
        return _Integer(expected, nullable, path, arrow_type.bit_width)
    if types.is_float32(arrow_type) or types.is_float64(arrow_type):
        return _Floating(expected, nullable, path, arrow_type.bit_width)
    if types.is_decimal(arrow_type):
        return _Decimal(expected, nullable, path, arrow_type.precision, arrow_type.scale)
    if types.is_string(arrow_type) or types.is_large_string(arrow_type):
        return _String(expected, nullable, path)
    if types.is_binary(arrow_type) or types.is_large_binary(arrow_type):
        return _Binary(expected, nullable, path)
    if types.is_date32(arrow_type):
        return _Date(expected, nullable, path)
    if types.is_timestamp(arrow_type):
        return _Timestamp(expected, nullable, path)
    if types.is_duration(arrow_type):
        return _Duration(expected, nullable, path)
    if types.is_time(arrow_type):
        return _Time(expected, nullable, path)
    if types.is_null(arrow_type):
        return _Void(expected, nullable, path)
    if types.is_list(arrow_type) or types.is_large_list(arrow_type):
        field = arrow_type.value_field
        element = check_for(getattr(spark_type, "elementType", None), field.type, field.nullable, f"{path}.element")
        return _Array(expected, nullable, path, element)
    if types.is_map(arrow_type):
        key = check_for(getattr(spark_type, "keyType", None), arrow_type.key_type, False, f"{path}.key")
        item = arrow_type.item_field
        value = check_for(getattr(spark_type, "valueType", None), item.type, item.nullable, f"{path}.value")
        return _Map(expected, nullable, path, key, value)
    if types.is_struct(arrow_type):
        spark_fields = list(getattr(spark_type, "fields", None) or [None] * arrow_type.num_fields)
        fields = [arrow_type.field(i) for i in range(arrow_type.num_fields)]
        checks = [
            check_for(getattr(spark_field, "dataType", None), field.type, field.nullable, f"{path}.{field.name}")
            for spark_field, field in zip(spark_fields, fields)
        ]
        return _Struct(expected, nullable, path, [f.name for f in fields], checks)
    return _Anything(expected, nullable, path)


def _type_name(spark_type, arrow_type: pa.DataType) -> str:
    simple = getattr(spark_type, "simpleString", None)
    return simple() if simple is not None else str(arrow_type)

def null_refused(array: pa.Array, check: Check) -> Check | None:
    """The check (column or nested field) declared not null that ``array`` has a null for, or None."""
    if isinstance(array, pa.ChunkedArray):
        array = array.combine_chunks()
    if not len(array):
        return None
    if array.null_count and not check.nullable:
        return check
    if isinstance(check, _Struct):
        valid = array.filter(array.is_valid()) if array.null_count else array
        for i, field in enumerate(check.fields):
            refused = null_refused(valid.field(i), field)
            if refused is not None:
                return refused
    elif isinstance(check, _Array):
        return null_refused(array.flatten(), check.element)
    elif isinstance(check, _Map):
        valid = array.filter(array.is_valid()) if array.null_count else array
        return null_refused(valid.keys, check.key) or null_refused(valid.items, check.value)
    return None
