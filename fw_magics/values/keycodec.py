"""Order-preserving bytes for Python keys, so the JVM can sort and group by them.

A key selector is Python code, but sorting must happen in Spark's external sorter. Each
key is encoded to bytes whose unsigned lexicographic order (Spark's order for binary
columns) equals Python's order of the keys. Equal keys (``1 == 1.0 == True``) get equal
bytes, so the same encoding also serves as a grouping key for ``key_by(callable)``.

Supported: None (first), bool, int (any size), float (NaN last, like Spark), str, bytes,
datetime.date, datetime.datetime, and tuples/lists of these. Mixed kinds order as
None < numbers < str < bytes < date < datetime < tuple (Python would refuse to compare them).
"""

from __future__ import annotations

import datetime as _dt
import math
import struct

from ..errors import FullWindowError

_END, _NONE, _NUM, _STR, _BYTES, _DATE, _DATETIME, _TUPLE = range(8)
_MAX_FLOAT_INT = 2**1023

SUPPORTED = "None, bool, int, float, str, bytes, date, datetime and tuples of them"


def encode_key(value) -> bytes:
    out = bytearray()
    _encode(value, out)
    return bytes(out)


def _encode(value, out: bytearray) -> None:
    if value is None:
        out.append(_NONE)
    elif isinstance(value, (bool, int)):
        out.append(_NUM)
        value = int(value)
        if abs(value) >= _MAX_FLOAT_INT:
            approx = math.inf if value > 0 else -math.inf
            out += _float_bytes(approx)
            _int_bytes(value, out)  # beyond float range, order among themselves by value
        else:
            approx = float(value)
            out += _float_bytes(approx)
            _int_bytes(value - int(approx), out)  # exact remainder after rounding
    elif isinstance(value, float):
        out.append(_NUM)
        out += _float_bytes(value)
        _int_bytes(0, out)
    elif isinstance(value, str):
        out.append(_STR)
        out += value.encode("utf-8", "surrogatepass").replace(b"\x00", b"\x00\xff")
        out.append(0)
    elif isinstance(value, (bytes, bytearray, memoryview)):
        out.append(_BYTES)
        out += bytes(value).replace(b"\x00", b"\x00\xff")
        out.append(0)
    elif isinstance(value, _dt.datetime):
        out.append(_DATETIME)
        if value.tzinfo is not None:
            value = value.astimezone(_dt.timezone.utc).replace(tzinfo=None)
        delta = value - _dt.datetime(1, 1, 1)
        _int_bytes((delta.days * 86400 + delta.seconds) * 1_000_000 + delta.microseconds, out)
    elif isinstance(value, _dt.date):
        out.append(_DATE)
        _int_bytes(value.toordinal(), out)
    elif isinstance(value, (tuple, list)):
        out.append(_TUPLE)
        for item in value:
            _encode(item, out)
        out.append(_END)
    else:
        raise FullWindowError(
            f"key selector returned {type(value).__name__} {value!r:.60}; sortable keys are {SUPPORTED}"
        )


def _float_bytes(value: float) -> bytes:
    if math.isnan(value):
        return b"\xff" * 8  # NaN after +inf, as Spark orders it
    if value == 0.0:
        value = 0.0  # -0.0 == 0.0
    (bits,) = struct.unpack(">Q", struct.pack(">d", value))
    bits = bits ^ 0xFFFFFFFFFFFFFFFF if bits >> 63 else bits | (1 << 63)
    return bits.to_bytes(8, "big")


def _int_bytes(value: int, out: bytearray) -> None:
    """Arbitrary integers: a header whose order matches sign and length, then the digits.

    Up to 126 digit bytes the header is one byte (0x80 +/- length); longer integers get
    0xFF (positive) or 0x00 (negative) followed by a 4-byte length.
    """
    if value == 0:
        out.append(0x80)
        return
    magnitude = abs(value)
    digits = magnitude.to_bytes((magnitude.bit_length() + 7) // 8, "big")
    size = len(digits)
    if value > 0:
        out += bytes([0x80 + size]) if size <= 126 else b"\xff" + size.to_bytes(4, "big")
        out += digits
    else:
        out += bytes([0x80 - size]) if size <= 126 else b"\x00" + (0xFFFFFFFF - size).to_bytes(4, "big")
        out += bytes(255 - b for b in digits)
