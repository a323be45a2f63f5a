"""Which tasks restart when one fails: all of them, or the regions involved (FLIP-1).

``RestartPipelinedRegionStrategy`` follows Flink's ``RestartPipelinedRegionFailoverStrategy``:
a breadth-first walk over pipelined regions, starting from the failed task's region, where
every region reached is restarted and, in turn,

1. adds the producer region of every input it consumes whose result is unavailable
   (the producer must run again to recompute it), and
2. adds every region consuming its output (their input is being recomputed, and may come
   out different if the producer is not deterministic).

Both rules apply to every region reached, consumers included, so a consumer that also reads
a lost result pulls that result's producer in as well. An all-to-all edge is visited once,
however many subtasks read it (Flink's consumed-partition and consumer-vertex groups), which
keeps the walk linear in the vertices of the regions restarted.
"""

from __future__ import annotations

from collections import deque
from collections.abc import Iterable
from typing import Protocol, runtime_checkable

from ..graph.connections import pointwise_consumers, pointwise_producers


@runtime_checkable
class FailoverStrategy(Protocol):
    """Which execution vertices restart when one fails (Flink's ``FailoverStrategy``).

    Made with the JobGraph it answers for; vertices are ``(operator, subtask)`` pairs.
    """

    def tasks_to_restart(self, failed: tuple[str, int],
                         unavailable: Iterable[tuple[str, int]] = ()) -> set[tuple[str, int]]:
        """The vertices to restart when ``failed`` fails; ``unavailable``: producers whose results are gone."""
        ...


class RestartAllStrategy:
    """Every execution vertex restarts (Flink's ``RestartAllFailoverStrategy``)."""

    def __init__(self, graph):
        self.graph = graph

    def tasks_to_restart(self, failed, unavailable=()) -> set[tuple[str, int]]:
        """All (operator, subtask) pairs of the graph; ``failed`` and ``unavailable`` are checked only."""
        self.graph.check_vertex(failed)
        for vertex in unavailable:
            self.graph.check_vertex(vertex)
        return set(self.graph.execution_vertices())


class RestartPipelinedRegionStrategy:
    """The failed region, producers of unavailable results and all downstream consumers restart."""

    def __init__(self, graph):
        self.graph = graph

    def tasks_to_restart(self, failed, unavailable=()) -> set[tuple[str, int]]:
        """The (operator, subtask) pairs to restart when ``failed`` fails.

        ``unavailable`` lists producer subtasks whose results are gone (a lost or corrupt
        blocking result); a region reading one of them brings its producer's region back.
        """
        graph = self.graph
        name, index = graph.check_vertex(failed)
        lost: dict[str, set[int]] = {}
        for vertex in unavailable:
            producer, subtask = graph.check_vertex(vertex)
            lost.setdefault(producer, set()).add(subtask)
        layout, regions = graph.layout(), graph.regions()
        region, offset, parallelism = layout.region, layout.offset, layout.parallelism
        inputs, outputs = _edges_by_operator(graph)

        start = region[offset[name] + index]
        chosen, queue = {start}, deque([start])
        seen_all_to_all: set = set()

        def involve(r: int) -> None:
            if r not in chosen:
                chosen.add(r)
                queue.append(r)

        while queue:
            for op, i in regions[queue.popleft()]:
                for edge in inputs[op]:  # 1. producers of unavailable results
                    gone = lost.get(edge.source)
                    if not gone:
                        continue
                    p, q = parallelism[edge.source], parallelism[op]
                    if edge.pattern == "all_to_all":
                        if ("in", edge) in seen_all_to_all:
                            continue
                        seen_all_to_all.add(("in", edge))
                        needed = gone
                    else:
                        needed = [k for k in pointwise_producers(i, p, q) if k in gone]
                    for k in needed:
                        involve(region[offset[edge.source] + k])
                for edge in outputs[op]:  # 2. every consumer
                    if edge.pattern == "all_to_all":
                        if ("out", edge) not in seen_all_to_all:
                            seen_all_to_all.add(("out", edge))
                            for r in layout.operator_regions[edge.target]:
                                involve(r)
                    else:
                        first = offset[edge.target]
                        for j in pointwise_consumers(i, parallelism[op], parallelism[edge.target]):
                            involve(region[first + j])
        tasks: set[tuple[str, int]] = set()
        for r in chosen:
            tasks |= regions[r]
        return tasks


def _edges_by_operator(graph) -> tuple[dict, dict]:
    """Each operator's input edges and output edges."""
    inputs: dict[str, list] = {o.name: [] for o in graph.operators}
    outputs: dict[str, list] = {o.name: [] for o in graph.operators}
    for edge in graph.edges:
        outputs[edge.source].append(edge)
        inputs[edge.target].append(edge)
    return inputs, outputs
