"""The watermark rules of a keyed stream, the same in every mode (pure Python).

* **Delay.** ``watermark_delay`` is a Spark interval string ("10 seconds", "1 minute 30
  seconds", "500 milliseconds"); it is parsed here to milliseconds and handed to Spark's
  ``withWatermark`` as ``"<ms> milliseconds"``, so both sides use the same number.
* **Spark's watermark** after a micro-batch is the greatest event time seen, in whole
  milliseconds, minus the delay; a record is late when its event time (in microseconds) is at
  or before the watermark: ``ts <= watermark``. Timers at or before the watermark fire.
* **The backlog** has no watermark while it is processed (FLIP-327: nothing inside the backlog
  is late). Its greatest watermark, ``W = max event time - delay``, is emitted at the switch:
  each key's timers up to W fire at the end of that key's backlog, and the fresh stream drops
  records with ``ts <= W`` (``is_late``). The operator reports ``max(W, Spark's watermark)``.
"""

from __future__ import annotations

import datetime as _dt
import re

from ..errors import FullWindowError

#: The watermark before there is one (Flink's ``Long.MIN_VALUE``).
MIN_WATERMARK = -(2**63)

_UNITS = {
    "microsecond": 0.001, "millisecond": 1, "ms": 1, "second": 1000, "minute": 60_000, "hour": 3_600_000,
    "day": 86_400_000, "week": 604_800_000,
}
_PART = re.compile(r"\s*(\d+)\s*([a-z]+)\s*")
_EPOCH = _dt.datetime(1970, 1, 1, tzinfo=_dt.timezone.utc)
_MS = _dt.timedelta(milliseconds=1)


def parse_delay(text) -> int:
    """A Spark interval string ("10 seconds", "1 minute 30 seconds") as whole milliseconds."""
    accepted = ("accepted: a Spark interval such as '0 seconds', '10 seconds', '1 minute 30 seconds' "
                "(units: milliseconds, seconds, minutes, hours, days, weeks)")
    if not isinstance(text, str) or not text.strip():
        raise FullWindowError(f"watermark_delay {text!r}; {accepted}")
    body = text.strip().lower()
    if body.startswith("interval "):
        body = body[len("interval "):]
    total, position = 0.0, 0
    for match in _PART.finditer(body):
        if match.start() != position:
            break
        number, unit = int(match.group(1)), match.group(2)
        unit = unit[:-1] if unit.endswith("s") and unit[:-1] in _UNITS else unit
        if unit not in _UNITS:
            raise FullWindowError(f"watermark_delay {text!r}: unknown unit {match.group(2)!r}; {accepted}")
        total += number * _UNITS[unit]
        position = match.end()
    if position != len(body) or position == 0:
        raise FullWindowError(f"watermark_delay {text!r}; {accepted}")
    if total > SPAN_MS:
        raise FullWindowError(f"watermark_delay {text!r:.60} is longer than Spark's timestamps reach; {within_span()}")
    return int(total)


def switch_watermark(max_event_ms: int | None, delay_ms: int) -> int | None:
    """W, the backlog's greatest watermark; None for a backlog without event times."""
    return None if max_event_ms is None else max_event_ms - delay_ms


def effective_watermark(switch: int | None, spark: int | None) -> int:
    """The watermark the operator reports: ``max(W, Spark's)``; Spark's 0 or less means none yet."""
    candidates = [w for w in (switch, spark if spark is not None and spark > 0 else None) if w is not None]
    return max(candidates) if candidates else MIN_WATERMARK


def is_late(event_time_us: int, watermark_ms: int | None) -> bool:
    """Spark's rule: a record at or before the watermark is late (compared in microseconds)."""
    return watermark_ms is not None and event_time_us <= watermark_ms * 1000


def event_time_ms(value: _dt.datetime) -> int:
    """Epoch milliseconds of an event time (floored; naive datetimes are taken as UTC)."""
    if value.tzinfo is None:
        value = value.replace(tzinfo=_dt.timezone.utc)
    return (value - _EPOCH) // _MS


#: Event times a watermark may name, in epoch ms: the years 1 to 9999, as Spark's timestamps.
MILLIS_RANGE = (-62_135_596_800_000, 253_402_300_799_999)
#: The longest delay or interval bound between two of Spark's timestamps, in ms (about 10,000 years): what a
#: watermark delay and an interval join's bounds may be, so that an event time moved by one stays a timestamp
#: Spark can hold (microseconds in a long) and is refused at the call, not a minute into the run.
SPAN_MS = MILLIS_RANGE[1] - MILLIS_RANGE[0]


def within_span(signed: bool = False) -> str:
    """The accepted range of a delay (``signed``: of an interval bound), in words."""
    bounds = f"from {-SPAN_MS:_} to {SPAN_MS:_} ms" if signed else f"at most {SPAN_MS:_} ms"
    return (f"accepted: {bounds} (about 10,000 years: Spark's timestamps run from the year 1 to 9999, "
            "microseconds in a long)")


def valid_watermark(value) -> bool:
    """Whether ``value`` (read back from a job directory or a savepoint) is a watermark: None, or an
    integer number of epoch milliseconds in ``MILLIS_RANGE``."""
    return value is None or (type(value) is int and MILLIS_RANGE[0] <= value <= MILLIS_RANGE[1])

