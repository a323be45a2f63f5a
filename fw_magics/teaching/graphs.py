"""Small job graphs and a clock for the failover tutorial (tutorial 3): no Spark.

``shape(name)`` builds one of four jobs of four subtasks per operator, each drawn by its
``JobGraph`` (a notebook shows the SVG); ``SHAPES`` lists their names. ``ManualClock`` is a clock
a restart strategy reads, moved by hand, so a notebook can watch minutes pass at once.
"""

from __future__ import annotations

from ..graph import JobGraph, OperatorAttributes

__all__ = ["ENDS_ONLY", "SHAPES", "ManualClock", "shape"]

#: FLIP-331's attribute: the operator emits only after the end of its input
ENDS_ONLY = OperatorAttributes(output_only_after_end_of_stream=True)


def _parallel_pipelines() -> JobGraph:
    """Streaming, pointwise all the way, nothing chained."""
    g = JobGraph(mode="streaming", chaining=False)
    for op in ("source", "parse", "sink"):
        g.add_operator(op, 4)
    g.connect("source", "parse")
    g.connect("parse", "sink")
    return g


def _keyed_streaming() -> JobGraph:
    """Streaming with one keyBy: everything pipelined."""
    g = JobGraph(mode="streaming")
    for op in ("source", "count", "sink"):
        g.add_operator(op, 4)
    g.connect("source", "count", "all_to_all")
    g.connect("count", "sink")
    return g


def _sort_then_aggregate() -> JobGraph:
    """Batch: the keyBy between the two chains blocks."""
    g = JobGraph(mode="batch")
    g.add_operator("source", 4, kind="source")
    g.add_operator("sort", 4, attributes=ENDS_ONLY)
    g.add_operator("aggregate", 4, attributes=ENDS_ONLY)
    g.add_operator("sink", 4, kind="sink")
    g.connect("source", "sort")
    g.connect("sort", "aggregate", "all_to_all")
    g.connect("aggregate", "sink")
    return g


def _history_join_live() -> JobGraph:
    """Tutorial 2's job: streaming, the aggregate of a bounded history joined with a live input."""
    g = JobGraph(mode="streaming")
    attributes = {"aggregate": ENDS_ONLY}  # the history's aggregate emits only at the end of its input
    for op in ("history", "aggregate", "live", "join", "sink"):
        g.add_operator(op, 4, attributes=attributes.get(op))
    g.connect("history", "aggregate", "all_to_all")
    g.connect("aggregate", "join", "all_to_all")
    g.connect("live", "join", "all_to_all")
    g.connect("join", "sink")
    return g


_BUILDERS = {"parallel pipelines": _parallel_pipelines, "keyed streaming": _keyed_streaming,
             "sort then aggregate": _sort_then_aggregate, "history join live": _history_join_live}
#: the names ``shape`` accepts, in the order the tutorial meets them
SHAPES = tuple(_BUILDERS)


def shape(name: str) -> JobGraph:
    """A new graph of the job ``name`` (one of :data:`SHAPES`)."""
    if name not in _BUILDERS:
        raise ValueError(f"shape {name!r}; accepted: {', '.join(map(repr, SHAPES))}")
    return _BUILDERS[name]()


class ManualClock:
    """A clock for a restart strategy (``clock=``): it reads ``now`` (seconds), which only moves
    when set or advanced (``clock.advance(5)``)."""

    def __init__(self, now: float = 0.0):
        self.now = float(now)

    def advance(self, seconds: float) -> float:
        self.now += seconds
        return self.now

    def __call__(self) -> float:
        return self.now
