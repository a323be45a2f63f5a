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
from collections.abc import Sequence
from operator import itemgetter

import pyarrow as pa
import pyarrow.compute as pc

_NONE = type(None)
ARROW_ERRORS = (pa.ArrowInvalid, pa.ArrowTypeError, pa.ArrowNotImplementedError, TypeError, ValueError,
                OverflowError)

_FAMILIES = (
    (pa.types.is_integer, pa.types.is_floating),
    (pa.types.is_decimal,),
    (pa.types.is_timestamp,),
    (pa.types.is_date,),
    (pa.types.is_string, pa.types.is_large_string),
    (pa.types.is_binary, pa.types.is_large_binary),
)


def castable(source: pa.DataType, target: pa.DataType) -> bool:
    """Whether a column of ``source`` may be cast (safely) to ``target``: the same family, at every depth."""
    types = pa.types
    if source.equals(target) or types.is_null(source):
        return True
    for family in _FAMILIES:
        if any(test(source) for test in family) and any(test(target) for test in family):
            return True
    if (types.is_list(source) or types.is_large_list(source)) and (types.is_list(target) or types.is_large_list(target)):
        return castable(source.value_type, target.value_type)
    if types.is_struct(source) and types.is_struct(target):
        return [source.field(i).name for i in range(source.num_fields)] == [
            target.field(i).name for i in range(target.num_fields)] and all(
            castable(source.field(i).type, target.field(i).type) for i in range(source.num_fields))
    if types.is_map(source) and types.is_map(target):
        return castable(source.key_type, target.key_type) and castable(source.item_type, target.item_type)
    return False


def null_refused(array: pa.Array, check: _Check) -> _Check | None:
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


def inf_count(array: pa.Array) -> int:
    if not pa.types.is_floating(array.type) or array.null_count == len(array):
        return 0
    return int(pc.sum(pc.is_inf(array)).as_py() or 0)


def short(value, limit: int = 60) -> str:
    return cut(repr(value), limit)


def cut(text: str, limit: int) -> str:
    return text if len(text) <= limit else text[: limit - 3] + "..."


def key_problems(row: dict, names: Sequence[str]) -> str:
    extra = sorted(map(str, row.keys() - set(names)))
    missing = [n for n in names if n not in row]
    parts = []
    if extra:
        parts.append(f"unknown field(s) {', '.join(extra)}")
    if missing:
        parts.append(f"missing field(s) {', '.join(missing)}")
    return " and ".join(parts)


# -- value checks --------------------------------------------------------------------------


class Misfit(Exception):
    """One value that does not fit: where, what was expected, and why (empty: a wrong type)."""

    def __init__(self, path: str, expected: str, value, reason: str = ""):
        super().__init__(path)
        self.path, self.expected, self.value, self.reason = path, expected, value, reason


class _Check:
    """Checks a list of Python values against one column type (and, nested, its children).

    ``fast``: the exact Python types that need no look at each value (Arrow refuses what is
    out of range for them, and a refusal is then diagnosed value by value with ``strict``).
    """

    fast: frozenset = frozenset()

    def __init__(self, expected: str, nullable: bool, path: str):
        self.expected = expected
        self.nullable = nullable
        self.path = path
        if nullable:
            self.fast = self.fast | {_NONE}

    def array(self, values: list, arrow_type: pa.DataType) -> pa.Array:
        self.verify(values)
        return pa.array(values, type=arrow_type)

    def verify(self, values: list, strict: bool = False) -> None:
        if strict or not set(map(type, values)) <= self.fast:
            self.each(values)
        self.children(values, strict)

    def each(self, values: list) -> None:
        fits, nullable = self.fits, self.nullable
        for value in values:
            if value is None:
                if not nullable:
                    raise Misfit(self.path, self.expected + " not null", None)
                continue
            reason = fits(value)
            if reason is not None:
                raise Misfit(self.path, self.expected, value, reason)

    def fits(self, value) -> str | None:
        """None when ``value`` fits; '' for a wrong type; else why the value does not fit."""
        return None

    def children(self, values: list, strict: bool) -> None:
        pass

    def normalized(self, values: list) -> list:
        """The values (already checked) in one form Arrow takes, for when it refused values that fit:
        Arrow reads a struct column as all tuples or all dicts, and refuses some exact decimals."""
        normal = self.normal
        return [None if v is None else normal(v) for v in values]

    def normal(self, value):
        return value


class _Anything(_Check):
    """Types left to Arrow (variant, geometry, ...)."""

    def verify(self, values: list, strict: bool = False) -> None:
        pass


class _Boolean(_Check):
    fast = frozenset({bool})

    def fits(self, value):
        return None if _is_bool(value) else ""


def _is_bool(value) -> bool:
    """A Python or numpy bool (numpy's is not a subclass of bool, nor of int)."""
    return isinstance(value, bool) or (type(value).__module__ == "numpy" and type(value).__name__ in ("bool", "bool_"))


class _Integer(_Check):
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


class _Floating(_Check):
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


class _Decimal(_Check):
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


class _OfTypes(_Check):
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


class _Timestamp(_Check):
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


class _Date(_Check):
    fast = frozenset({_dt.date})

    def fits(self, value):
        if isinstance(value, _dt.datetime):
            if type(value).__name__ == "NaTType":
                return "NaT is not a date; use None for a missing one"
            if value.hour or value.minute or value.second or value.microsecond or getattr(value, "nanosecond", 0):
                return "its time of day would be lost"
            return None
        return None if isinstance(value, _dt.date) else ""


class _Array(_Check):
    fast = frozenset({list, tuple})

    def __init__(self, expected: str, nullable: bool, path: str, element: _Check):
        super().__init__(expected, nullable, path)
        self.element = element

    def fits(self, value):
        return None if isinstance(value, (list, tuple)) or type(value).__name__ == "ndarray" else ""

    def children(self, values: list, strict: bool) -> None:
        self.element.verify(list(itertools.chain.from_iterable(v for v in values if v is not None)), strict)

    def normal(self, value):
        normal = self.element.normal
        return [None if v is None else normal(v) for v in value]


class _Map(_Check):
    fast = frozenset({dict})

    def __init__(self, expected: str, nullable: bool, path: str, key: _Check, value: _Check):
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


class _Struct(_Check):
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


def check_for(spark_type, arrow_type: pa.DataType, nullable: bool, path: str) -> _Check:
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
