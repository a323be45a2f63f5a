"""The event-time timers of one key: a set of epoch-millisecond times, fired in order.

Flink's rules: registering a time twice keeps one timer; deleting a time that is not
registered does nothing; the watermark fires every timer at or before it, earliest first,
including timers registered while firing (``pop_due`` is asked again after each one).
"""

from __future__ import annotations

import bisect

from ....errors import FullWindowError

LONG_MIN, LONG_MAX = -(2**63), 2**63 - 1


def check_time(timestamp, what: str = "timer") -> int:
    """``timestamp`` as an int of epoch milliseconds, or a one-line error naming it."""
    if isinstance(timestamp, bool) or not isinstance(timestamp, int) or not LONG_MIN <= timestamp <= LONG_MAX:
        raise FullWindowError(
            f"{what} time {timestamp!r:.60}; accepted: an int of epoch milliseconds "
            "(e.g. ctx.timestamp() + 60_000)"
        )
    return int(timestamp)


class TimerQueue:
    """Distinct timer times, kept sorted."""

    __slots__ = ("_times",)

    def __init__(self, times=()):
        self._times = sorted(set(times))

    def register(self, timestamp: int) -> bool:
        """Add a timer; False when that time was already registered."""
        i = bisect.bisect_left(self._times, timestamp)
        if i < len(self._times) and self._times[i] == timestamp:
            return False
        self._times.insert(i, timestamp)
        return True

    def delete(self, timestamp: int) -> bool:
        """Remove a timer; False when there was none at that time."""
        i = bisect.bisect_left(self._times, timestamp)
        if i < len(self._times) and self._times[i] == timestamp:
            del self._times[i]
            return True
        return False

    def pop_due(self, watermark: int) -> int | None:
        """The earliest timer at or before ``watermark``, removed; None when none is due."""
        if self._times and self._times[0] <= watermark:
            return self._times.pop(0)
        return None

    def times(self) -> list[int]:
        return list(self._times)

    def __len__(self) -> int:
        return len(self._times)

    def __contains__(self, timestamp) -> bool:
        i = bisect.bisect_left(self._times, timestamp)
        return i < len(self._times) and self._times[i] == timestamp

    def __repr__(self) -> str:
        return f"TimerQueue({self._times})"
