"""What every value check shares (``checks.py`` has one per Spark type): the check's base, how a
misfit is named, and the Arrow facts the checks rely on."""

from __future__ import annotations

from collections.abc import Sequence

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


class Check:
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
