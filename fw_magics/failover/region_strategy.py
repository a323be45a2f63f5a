"""Which tasks restart when one fails: all of them, or its pipelined region (FLIP-1).

Region failover follows Flink's RestartPipelinedRegionFailoverStrategy: restart the failed
task's region; add the producer region of every input whose result is unavailable,
recursively; then add every region consuming the output of a region being restarted,
transitively (their inputs are being recomputed).
"""

from __future__ import annotations

from collections import deque

from ..errors import FullWindowError


class RestartAllStrategy:
    """Every execution vertex restarts (Flink's full failover)."""

    def __init__(self, graph):
        self.graph = graph

    def tasks_to_restart(self, failed, unavailable=()) -> set:
        _check_vertex(self.graph, failed)
        return set(self.graph.execution_vertices())


class RestartPipelinedRegionStrategy:
    """Only the failed region, producers of lost results, and downstream consumers restart."""

    def __init__(self, graph):
        self.graph = graph
        self.regions = graph.pipelined_regions()
        self.region_index = {v: k for k, region in enumerate(self.regions) for v in region}
        self._op_regions: dict[str, frozenset] = {}
        for k, region in enumerate(self.regions):
            for name, _ in region:
                self._op_regions.setdefault(name, set()).add(k)
        # per operator: its outgoing edges, with producer subtask -> consumer subtasks for pointwise ones
        self._out_edges: dict[str, list] = {}
        for edge in graph.edges:
            readers = None
            if edge.pattern == "pointwise":
                readers = {}
                for i, j in graph._pairs(edge):
                    readers.setdefault(i, []).append(j)
            self._out_edges.setdefault(edge.source, []).append((edge, readers))

    def tasks_to_restart(self, failed, unavailable=()) -> set:
        failed = _check_vertex(self.graph, failed)
        lost = {tuple(v) for v in unavailable}
        start = self.region_index[failed]
        queue, chosen = deque([start]), {start}

        def visit(k):
            if k not in chosen:
                chosen.add(k)
                queue.append(k)

        # 1. the failed region and, recursively, producers whose results are unavailable
        readers = {v: self._consumer_regions([v]) for v in lost if v in self.region_index}
        while queue:
            k = queue.popleft()
            for vertex, regions in readers.items():
                if k in regions:
                    visit(self.region_index[vertex])
        # 2. every consumer region of a region that restarts, transitively
        queue.extend(chosen)
        while queue:
            k = queue.popleft()
            for j in self._consumer_regions(self.regions[k]) - {k}:
                visit(j)
        return {v for k in chosen for v in self.regions[k]}

    def _consumer_regions(self, vertices) -> set[int]:
        """Regions reading the output of these execution vertices (all-to-all edges unexpanded)."""
        found = set()
        for name, i in vertices:
            for edge, readers in self._out_edges.get(name, ()):
                if readers is None:  # all-to-all: every region of the target operator
                    found |= self._op_regions[edge.target]
                else:
                    found.update(self.region_index[(edge.target, j)] for j in readers.get(i, ()))
        return found


def _check_vertex(graph, vertex) -> tuple:
    vertex = tuple(vertex)
    names = {o.name: o.parallelism for o in graph.operators}
    if len(vertex) != 2 or vertex[0] not in names or not 0 <= vertex[1] < names[vertex[0]]:
        raise FullWindowError(
            f"unknown execution vertex {vertex!r}; expected (operator, subtask) with an operator "
            f"among: {', '.join(names)}"
        )
    return vertex
