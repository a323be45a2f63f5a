"""Floats as pandas shows them: ``59.291999999999994`` reads ``59.292``, as in ``pd.Series([x])``.

pandas writes a float with ``display.precision`` digits after the point (6 unless the user
changed it), then drops trailing zeros down to one; a value so small it would read as zero,
or so large that the text grows past ``precision + 6`` characters, is written in scientific
notation instead. No import of pandas: its option is read only when pandas is loaded already.
"""

from __future__ import annotations

import math
import re
import sys

DEFAULT_PRECISION = 6  # pandas' display.precision
_DECIMAL = re.compile(r"^\s*[+-]?[0-9]+\.[0-9]*$")


def precision() -> int:
    """pandas' ``display.precision`` when pandas is loaded, else its default."""
    pandas = sys.modules.get("pandas")
    try:
        return int(pandas.get_option("display.precision")) if pandas is not None else DEFAULT_PRECISION
    except Exception:  # a pandas too old or half-imported: its default
        return DEFAULT_PRECISION


def _trim(text: str) -> str:
    if _DECIMAL.match(text):
        text = text.rstrip("0")
        if text.endswith("."):
            text += "0"
    return text


def float_text(value: float, digits: int | None = None) -> str:
    """``value`` as pandas shows a float on its own (``NaN``, ``inf``, ``59.292``, ``1.000000e-10``)."""
    if math.isnan(value):
        return "NaN"
    if math.isinf(value):
        return "inf" if value > 0 else "-inf"
    digits = precision() if digits is None else digits
    text = _trim(f"{value: .{digits}f}")
    size = abs(value)
    if (0 < size < 10 ** -digits) or (len(text) > digits + 6 and size > 1e6):
        text = f"{value: .{digits}e}"
    return text.strip()
