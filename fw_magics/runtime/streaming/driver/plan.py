"""What a streaming job is to do, decided once where it starts: ``Plan``.

``start()`` checks every option (one line each, before anything runs) and makes them into one
``Plan``: the mode (``phases.Mode``), the trigger (``Trigger``), the sink, the rate limit, the
parallelism (the number of state partitions), the session's flavour (classic or Spark Connect,
``fw_magics.spark.flavour``), the handover of backlog state (``handover``) and the restart strategy. The job and the
modules under it read the plan; none of them asks again.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from ....errors import FullWindowError
from ....graph import MAX_STATE_PARTITIONS
from ..keyed.handover import Handover
from .phases import Mode

AVAILABLE_NOW = "available_now"
DEFAULT_TRIGGER = "1 second"
#: A processing-time interval Spark accepts: "5 seconds", "200 milliseconds", "1 minute 30 seconds".
INTERVAL = re.compile(r"(interval\s+)?(\d+(\.\d+)?\s*(microsecond|millisecond|second|minute|hour|day|week)s?\s*)+\Z",
                      re.IGNORECASE)


@dataclass(frozen=True)
class Trigger:
    """When the query runs a micro-batch: every ``interval``, or once over what is there (``available_now``)."""

    interval: str | None  # None: availableNow

    @classmethod
    def of(cls, value) -> Trigger:
        """``None`` ("1 second"), an interval such as "5 seconds", or "available_now"; one line otherwise."""
        if value is None:
            return cls(DEFAULT_TRIGGER)
        if value == AVAILABLE_NOW:
            return cls(None)
        if isinstance(value, str) and INTERVAL.match(value.strip()):
            return cls(value.strip())
        raise FullWindowError(
            f"trigger {value!r:.60}; accepted: None ({DEFAULT_TRIGGER!r}), a processing-time interval such as "
            f"'5 seconds' or '200 milliseconds', or {AVAILABLE_NOW!r} (process what is there, then stop)")

    @property
    def available_now(self) -> bool:
        return self.interval is None

    def apply(self, writer):
        """``writer`` (a DataStreamWriter) with this trigger."""
        return writer.trigger(availableNow=True) if self.available_now else writer.trigger(processingTime=self.interval)


def check_parallelism(parallelism) -> int | None:
    if parallelism is None:
        return None
    if isinstance(parallelism, bool) or not isinstance(parallelism, int) or not 1 <= parallelism <= MAX_STATE_PARTITIONS:
        raise FullWindowError(f"parallelism {parallelism!r:.60}; accepted: None (the job's) or an integer from 1 to "
                              f"{MAX_STATE_PARTITIONS} (the number of state partitions; each is a Spark task in every "
                              "micro-batch)")
    return parallelism


def check_max_files(value) -> int | None:
    if value is not None and (isinstance(value, bool) or not isinstance(value, int) or value < 1):
        raise FullWindowError(f"max_files_per_trigger {value!r:.60}; accepted: None or an integer >= 1")
    return value


@dataclass(frozen=True)
class Plan:
    """Everything a job decided at start (see the module docstring)."""

    mode: Mode
    trigger: Trigger
    sink: object  # None, a Parquet table directory or fn(df, batch_id)
    max_files: int | None
    parallelism: int
    handover: Handover
    flavour: object  # fw_magics.spark.flavour.Flavour
    restart: object  # a fw_magics.failover restart strategy: whether and when a failed job goes on
    why: str | None = None  # why the mode is not the one asked for (start.effective_mode), or None
    settle: int = 1  # how many of Spark's processAllAvailable process_all_available waits through (settle_rounds)


def settle_rounds(source) -> int:
    """How many of Spark's ``processAllAvailable`` make sure a change committed before the call is processed.
    One returns at the first trigger that found nothing new, which may have asked the source before the
    commit; a second returns at a trigger that began after the first's, so after the commit. A source whose
    offsets are asked of a server (a slow query: the race is likely) gets two; a folder's listing, one."""
    return 2 if source.asks_a_server() else 1

