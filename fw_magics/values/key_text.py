"""A key as a person types it, read by its key columns' types: the state inspector's key box.

One key column: the text is its value (``7``, ``alice``, ``2024-01-31``). Several: their values in order,
separated by commas (``7, alice``), or a JSON list (``[7, "a, b"]``) for a string holding a comma or a
null. Each value is read by its column's Spark type, named as Spark's ``simpleString`` names it: the
integer types within their range, ``float``/``double`` (``NaN``, ``inf``, ``-0.0`` too), ``boolean``
(``true``/``false``), ``decimal(p,s)``, ``date`` and ``timestamp`` (ISO; a time without an offset is local
time, as PySpark takes one), ``string`` as typed (stripped; in double quotes, exactly). Anything else is one
line naming the value, its column and what is accepted. ``key_text`` writes a key so that ``parse_key`` reads
it back (a null in a key of one column cannot be typed). No Spark here.
"""

from __future__ import annotations

import datetime as dt
import decimal
import json
import math
import re

from ..errors import FullWindowError

_INTEGERS = {"tinyint": 8, "smallint": 16, "int": 32, "bigint": 64}
_FLOATS = ("float", "double")
_DECIMAL = re.compile(r"decimal\((\d+),(\d+)\)")
_TIMES = ("timestamp", "timestamp_ntz")
#: The key column types a key can be typed for.
TYPED = "tinyint, smallint, int, bigint, float, double, boolean, decimal, date, timestamp, string"


def _read(value, spark_type: str, exact: bool = False):
    """``value`` (text, or a Python value) read as ``spark_type``; ``exact``: a string is the string itself (a
    JSON list's), not text to strip and unquote. Raises ValueError (or the parser's error) when it is not one."""
    text = value.strip() if isinstance(value, str) else None
    if spark_type == "string":
        if text is None:
            raise ValueError
        return value if exact else json.loads(text) if len(text) >= 2 and text[0] == text[-1] == '"' else text
    if spark_type in _INTEGERS:
        number = int(text) if text is not None else value
        bits = _INTEGERS[spark_type]
        if type(number) is not int or not -(1 << (bits - 1)) <= number < 1 << (bits - 1):
            raise ValueError
        return number
    if spark_type in _FLOATS:
        if text is None and (isinstance(value, bool) or not isinstance(value, (int, float))):
            raise ValueError
        return float(value if text is None else text)
    if spark_type == "boolean":
        if text is not None and text.lower() in ("true", "false"):
            return text.lower() == "true"
        if type(value) is not bool:
            raise ValueError
        return value
    if spark_type in _TIMES:
        stamp = dt.datetime.fromisoformat(text) if text is not None else value
        if not isinstance(stamp, dt.datetime):
            raise ValueError
        if spark_type == "timestamp_ntz":
            return stamp if stamp.tzinfo is None else stamp.astimezone(dt.timezone.utc).replace(tzinfo=None)
        return stamp
    if spark_type == "date":
        day = dt.date.fromisoformat(text) if text is not None else value
        if not isinstance(day, dt.date) or isinstance(day, dt.datetime):
            raise ValueError
        return day
    precision, scale = map(int, _DECIMAL.fullmatch(spark_type).groups())  # the types left: parse_key checked
    if text is None and (isinstance(value, bool) or not isinstance(value, (int, decimal.Decimal))):
        raise ValueError
    number = decimal.Decimal(value if text is None else text)
    exact = number.quantize(decimal.Decimal(1).scaleb(-scale)) if number.is_finite() else None
    if exact is None or exact != number or len(exact.as_tuple().digits) > precision:
        raise ValueError
    return exact


def _accepted(names, types) -> str:
    columns = ", ".join(f"{n} ({t})" for n, t in zip(names, types))
    if len(names) == 1:
        return f"a value of {columns}"
    return f"the values of {columns}, in this order, separated by commas (or a JSON list)"


def parse_key(key, names, types) -> tuple:
    """``key`` (text as typed, or the key's value: a tuple of them for several columns) as the key's values,
    one per column of ``names`` (of Spark types ``types``, their ``simpleString``); a bad key is one line."""
    names, types = list(names), list(types)
    where = f"key {key!r:.80}"
    for name, spark_type in zip(names, types):
        if not (spark_type in (*_INTEGERS, *_FLOATS, *_TIMES, "boolean", "date", "string")
                or _DECIMAL.fullmatch(spark_type)):
            raise FullWindowError(f"{where}: key column {name!r} is a {spark_type}, which a key cannot be typed as; "
                                  f"accepted key column types: {TYPED}")
    listed = isinstance(key, str) and len(names) > 1 and key.strip().startswith("[")
    if isinstance(key, str):
        parts = [key] if len(names) == 1 else _listed(key) if listed else key.split(",")
    else:
        parts = list(key) if isinstance(key, (tuple, list)) else [key]
    if parts is None or len(parts) != len(names):
        found = "text that is not a JSON list of values" if parts is None else \
            f"{len(parts)} value{'s' * (len(parts) != 1)}"
        raise FullWindowError(f"{where}: {found} for {len(names)} key column{'s' * (len(names) != 1)}; "
                              f"accepted: {_accepted(names, types)}")
    values = []
    for part, name, spark_type in zip(parts, names, types):
        try:
            values.append(None if part is None and not isinstance(key, str) or part is _NULL else
                          _read(part, spark_type, exact=listed or not isinstance(key, str)))
        except (ValueError, TypeError, ArithmeticError):
            raise FullWindowError(f"{where}: {part!r:.60} is not a {spark_type} for key column {name!r}; accepted: "
                                  f"{_accepted(names, types)}") from None
    return tuple(values)


_NULL = object()  # a JSON list's null


def _listed(text: str) -> list | None:
    """A JSON list's elements: a string as itself, a number as its own text, null as ``_NULL``; None for text
    that is not a JSON list of such values."""
    try:
        found = json.loads(text, parse_float=str, parse_int=str, parse_constant=str)
    except ValueError:
        return None
    if not isinstance(found, list) or any(isinstance(v, (list, dict)) for v in found):
        return None
    return [_NULL if v is None else v for v in found]


def key_text(values) -> str:
    """The key ``values`` (one per key column) as ``parse_key`` reads them back: the value's text for one column,
    comma-separated for several, or a JSON list when a value is null or a string would not read back."""
    texts = [_text(v) for v in values]
    quoted = [isinstance(v, str) and (t != t.strip() or t.startswith('"')) for v, t in zip(values, texts)]
    if len(values) == 1 and values[0] is not None:
        return json.dumps(values[0]) if quoted[0] else texts[0]
    if all(v is not None and "," not in t for v, t in zip(values, texts)) and not any(quoted) \
            and not texts[0].lstrip().startswith("["):
        return ", ".join(texts)
    return "[" + ", ".join("null" if v is None else json.dumps(v) if isinstance(v, str) else
                           t if isinstance(v, (int, float, decimal.Decimal)) else json.dumps(t)
                           for v, t in zip(values, texts)) + "]"


def _text(value) -> str:
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, float):
        return "NaN" if math.isnan(value) else "Infinity" if value == math.inf else "-Infinity" \
            if value == -math.inf else repr(value)
    if isinstance(value, (dt.date, dt.datetime)):
        return value.isoformat()
    return "null" if value is None else str(value)
