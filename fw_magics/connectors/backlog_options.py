"""The options every source with a backlog takes (``event_time``, ``watermark_delay``, ``on_late``,
``backlog``), checked as each ``declare`` checks them: a bad one is one line, before anything runs."""

from __future__ import annotations

from pyspark.sql import types as T

from ..errors import FullWindowError, did_you_mean
from ..values.event_time import parse_delay

LATE_POLICIES = ("drop", "fail")


def event_time_delay(struct, event_time, watermark_delay) -> int:
    """The watermark delay in ms, once ``event_time`` is known to be a timestamp column of ``struct``."""
    if event_time is not None:
        if not isinstance(event_time, str) or event_time not in struct.names:
            raise FullWindowError(
                f"no event_time column {event_time!r}{did_you_mean(event_time, struct.names, form=' (did you mean {!r}?)')}"
                f"; columns are: {', '.join(struct.names)}"
            )
        kind = struct[event_time].dataType
        if not isinstance(kind, T.TimestampType):
            raise FullWindowError(
                f"event_time column {event_time!r} is {kind.simpleString()}; accepted: a timestamp column"
            )
    delay_ms = parse_delay(watermark_delay)
    if event_time is None and delay_ms:
        raise FullWindowError("watermark_delay needs an event_time column; pass event_time='<timestamp column>'")
    return delay_ms


def backlog_flag(value, what: str) -> bool:
    """``backlog=``: True, or False for a source that reports none (FLIP-327's ``isBacklog=false``)."""
    if not isinstance(value, bool):
        raise FullWindowError(f"{what} backlog {value!r:.60}; accepted: True (what is there at a job's first start is "
                              "its backlog) or False (no backlog: read as a stream from the first record)")
    return value


def check_policies(*checks) -> None:
    """Each ``(option, value, accepted)``: one line naming the option when its value is not accepted."""
    for option, value, accepted in checks:
        if value not in accepted:
            hint = did_you_mean(value, accepted) if isinstance(value, str) else ""
            raise FullWindowError(f"{option} {value!r:.60}{hint}; accepted: {', '.join(accepted)}")
