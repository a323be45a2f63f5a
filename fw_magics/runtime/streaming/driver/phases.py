"""A streaming job's mode and phases (pure Python, no Spark).

The mode is chosen once, at ``start()``, and read as a ``Mode`` from then on. Phases (FLIP-327's
``isBacklog`` made visible)::

    mixed:   backlog -> switching -> stream -> stopped | failed
    batch:   backlog -> finished | stopped | failed
    stream:  stream -> stopped | failed

``backlog``: the files present at the first start run as one batch job (no watermark, one
state write per key); ``switching``: the backlog's watermark W is emitted, its timers up to W
have fired, the streaming query starts with the backlog's state; ``stream``: the query's first
micro-batch has committed (its checkpoint holds the state), or, for a query that warmed up during
the backlog, the handover is written (the state is in the backlog's files); fresh data flows. A
restart begins where the log says the job got to (``resume_phase``): a job that had switched
never runs its backlog again. What the log says is ``fw_magics.recovery.replay``'s ``JobState``.
"""

from __future__ import annotations

import enum

from ....errors import FullWindowError, did_you_mean

PHASES = ("backlog", "switching", "stream", "finished", "stopped", "failed")
ENDED = ("finished", "stopped", "failed")


class Mode(enum.Enum):
    """How a keyed job treats its source's backlog (FLIP-327)."""

    MIXED = "mixed"  # the backlog as one batch job, the switch, then the stream
    STREAM = "stream"  # Spark's file stream from the first file: the baseline without a backlog phase
    BATCH = "batch"  # the backlog only

    @classmethod
    def of(cls, value) -> Mode:
        """``value`` ("mixed", "stream", "batch" or a Mode) as a Mode; one line naming it otherwise."""
        if isinstance(value, Mode):
            return value
        names = [m.value for m in cls]
        if value not in names:
            hint = did_you_mean(value, names) if isinstance(value, str) else ""
            raise FullWindowError(f"unknown mode {value!r:.60}{hint}; accepted: {', '.join(names)}")
        return cls(value)

    @property
    def has_backlog(self) -> bool:
        """Whether the job runs its source's backlog as a batch job first."""
        return self is not Mode.STREAM

    @property
    def has_stream(self) -> bool:
        """Whether the job goes on as a streaming query."""
        return self is not Mode.BATCH

    @property
    def first_phase(self) -> str:
        return "backlog" if self.has_backlog else "stream"

    def __str__(self) -> str:
        return self.value


MODES = tuple(m.value for m in Mode)

TRANSITIONS = {
    Mode.MIXED: {"backlog": {"switching", "stopped", "failed"}, "switching": {"stream", "stopped", "failed"},
                 "stream": {"stopped", "failed"}},
    Mode.BATCH: {"backlog": {"finished", "stopped", "failed"}},
    Mode.STREAM: {"stream": {"stopped", "failed"}},
}


def can_change(mode: Mode, old: str, new: str) -> bool:
    """Whether a job in ``mode`` may go from phase ``old`` to ``new``."""
    return new in TRANSITIONS[Mode.of(mode)].get(old, ())


def resume_phase(state, mode: Mode) -> str:
    """The phase a (re)started job begins in, from what its log says (a ``JobState``)."""
    mode = Mode.of(mode)
    if mode is Mode.STREAM:
        return "stream"
    if mode is Mode.BATCH:
        return "finished" if state.status == "finished" else "backlog"
    if state.streaming:
        return "stream"
    return "switching" if state.switched else "backlog"
