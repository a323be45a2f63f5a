"""Pipelined regions (FLIP-1), computed in time near-linear in the execution vertices.

Execution vertices are numbered ``0 .. n-1`` in topological order of their operators. Those
joined by chained or pipelined connections are unioned into raw regions; then raw regions
that depend on each other cyclically through blocking results are merged, as Flink's
``SchedulingPipelinedRegionComputeUtil`` does (strongly connected components of the region
graph, FLINK-17330). An all-to-all edge is never expanded into its p x q connections: a
pipelined one unions both operators' subtasks in p + q steps, and a blocking one becomes a
single hub node of the region graph that every producer region points to and that points to
every consumer region (the same reachability, p + q edges). The components are computed only
when some blocking connection leads back to an earlier region, which is when a cycle is possible.
"""

from __future__ import annotations

from dataclasses import dataclass

from .components import DisjointSets, strongly_connected
from .connections import pointwise_consumers


@dataclass(frozen=True)
class Layout:
    """The numbered execution vertices of a graph and the pipelined region of each.

    Regions are numbered by their first vertex, so in topological order.
    """

    operators: tuple[str, ...]  # in topological order
    offset: dict  # operator name -> its first vertex id
    parallelism: dict  # operator name -> parallelism
    region: list  # vertex id -> region number
    count: int  # number of regions
    operator_regions: dict  # operator name -> region numbers holding its subtasks, ascending

    def region_sets(self, vertices) -> list[frozenset]:
        """Every region as a frozenset of the ``vertices`` (numbered in order) it holds, in region order."""
        found: list[list] = [[] for _ in range(self.count)]
        for vertex, r in zip(vertices, self.region):
            found[r].append(vertex)
        return [frozenset(members) for members in found]


def build_layout(graph) -> Layout:
    """Number the execution vertices of ``graph`` and compute their pipelined regions."""
    order = tuple(graph.topological_order())
    parallelism = {name: graph.operator(name).parallelism for name in order}
    offset, total = {}, 0
    for name in order:
        offset[name] = total
        total += parallelism[name]

    joined = DisjointSets(total)
    blocking = []
    for edge in graph.edges:
        a, b = offset[edge.source], offset[edge.target]
        p, q = parallelism[edge.source], parallelism[edge.target]
        if graph.result_type(edge.source, edge.target) == "blocking":
            blocking.append((edge.pattern, a, b, p, q))
        elif edge.pattern == "all_to_all":
            joined.union_range(a, a + p)
            joined.union_range(b, b + q)
            joined.union(a, b)
        else:
            for i in range(p):
                for j in pointwise_consumers(i, p, q):
                    joined.union(a + i, b + j)
    raw, count = _number_sets(joined, total)
    if _may_have_cycles(raw, blocking):
        raw, count = _merge_cycles(raw, count, blocking)
    operator_regions = {
        name: sorted(set(raw[offset[name]: offset[name] + parallelism[name]])) for name in order
    }
    return Layout(order, offset, parallelism, raw, count, operator_regions)


def _number_sets(sets: DisjointSets, total: int) -> tuple[list[int], int]:
    """Number the disjoint sets 0, 1, ... by their first member: the number of each integer, and the count."""
    number: dict[int, int] = {}
    return [number.setdefault(sets.find(v), len(number)) for v in range(total)], len(number)


def _may_have_cycles(raw: list[int], blocking: list) -> bool:
    """False when no blocking connection leads back to a lower region number.

    Regions are numbered in topological order of their first vertex. If every connection
    between two regions goes from a lower to a higher number, the region graph is acyclic and
    its strongly connected components need not be computed; that is the usual case, and a
    connection inside one region cannot make a cycle between regions.
    """
    for pattern, a, b, p, q in blocking:
        if pattern == "all_to_all":
            if max(raw[a: a + p]) > min(raw[b: b + q]):
                return True
        else:
            for i in range(p):
                if any(raw[a + i] > raw[b + j] for j in pointwise_consumers(i, p, q)):
                    return True
    return False


def _merge_cycles(raw: list[int], count: int, blocking: list) -> tuple[list[int], int]:
    """Merge regions that reach each other through blocking connections (Flink's FLINK-17330)."""
    successors: list[set] = [set() for _ in range(count)]
    for pattern, a, b, p, q in blocking:
        if pattern == "all_to_all":  # one hub node instead of p x q edges
            hub = len(successors)
            successors.append({raw[b + j] for j in range(q)})
            for i in range(p):
                successors[raw[a + i]].add(hub)
        else:
            for i in range(p):
                for j in pointwise_consumers(i, p, q):
                    successors[raw[a + i]].add(raw[b + j])
    component = strongly_connected(successors)
    number: dict[int, int] = {}
    merged = [number.setdefault(component[r], len(number)) for r in raw]
    return merged, len(number)
