"""Job vertices: the chains of a JobGraph, named "v0", "v1", ... (Flink's ``JobVertex``).

A job vertex is a chain of operators that runs as one task per subtask. Its name is an
on-disk contract: the runtime commits subtask ``i``'s result as ``results/<name>/<i>.arrow``
and every job event about it carries ``"vertex": <name>``; a resumed run, the recovery
panel and the live graph view read both back. So names are made and parsed here only:
vertex ``k`` is the ``k``-th chain of ``JobGraph.chains()`` (topological order of each
chain's first operator), named ``vertex_name(k)``.

Pure Python, no Spark. The runtime's own vertex (``fw_magics.runtime.batch.vertices``) adds the
Spark steps that compute it.
"""

from __future__ import annotations

import re
from collections.abc import Iterator, Mapping
from dataclasses import dataclass

from ..errors import FullWindowError
from .connections import producers

_NAME = re.compile(r"v(0|[1-9][0-9]*)")


def vertex_name(index: int) -> str:
    """The name of the ``index``-th job vertex: "v0", "v1", ..."""
    return f"v{index}"


def vertex_index(name: str) -> int:
    """The position of the job vertex called ``name`` ("v3" -> 3), or a one-line error."""
    match = _NAME.fullmatch(name) if isinstance(name, str) else None
    if match is None:
        raise FullWindowError(f"job vertex name {name!r}; accepted: 'v0', 'v1', ... (v and the vertex's index)")
    return int(match.group(1))


@dataclass(frozen=True)
class JobVertex:
    """A chain of operators run as one task per subtask (Flink's job vertex)."""

    index: int
    name: str  # vertex_name(index): "v0", "v1", ...; a folder name and the events' "vertex"
    operators: tuple[str, ...]  # the chain's operator names, upstream first
    parallelism: int  # subtasks (the chain's operators all have it)
    inputs: tuple[str, ...]  # names of the job vertices it reads, in the order of its input edges

    @property
    def label(self) -> str:
        return " -> ".join(self.operators)


def job_vertices(graph) -> tuple[JobVertex, ...]:
    """The job vertices of ``graph``, one per chain, in chain order."""
    chains = graph.chains()
    name_of = {op: vertex_name(k) for k, chain in enumerate(chains) for op in chain}
    vertices = []
    for k, chain in enumerate(chains):
        inputs = tuple(name_of[edge.source] for edge in graph.edges if edge.target == chain[0])
        vertices.append(JobVertex(k, vertex_name(k), tuple(chain), graph.operator(chain[-1]).parallelism, inputs))
    return tuple(vertices)


def subtask_inputs(graph) -> tuple[list[tuple[str, int]], SubtaskInputs]:
    """Every job-vertex subtask ``(name, i)`` in vertex order, and the subtasks each one reads.

    Subtask ``i`` of a vertex reads what subtask ``i`` of its first operator reads from other
    chains (pointwise ranges or all-to-all, as the graph wires them). The second value is a
    read-only mapping computed on demand from those ranges: nothing here expands the p x q
    pairs of an all-to-all edge (``SubtaskInputs.ranges``).
    """
    inputs = SubtaskInputs(graph)
    return list(inputs), inputs


class SubtaskInputs(Mapping):
    """Each job-vertex subtask's producers, ``(vertex, subtask)`` -> list of ``(vertex, subtask)``.

    Held as one entry per edge between job vertices, so it is as small as the graph; a
    planner that walks producers should use ``ranges(subtask)`` (one ``range`` per input
    edge, the same object size for every consumer of an all-to-all edge) and
    ``consumed(subtask)`` rather than expanding the lists.
    """

    def __init__(self, graph):
        vertices = graph.job_vertices()
        vertex_of = {op: v.name for v in vertices for op in v.operators}
        self._parallelism = {v.name: v.parallelism for v in vertices}
        self._edges = {
            v.name: tuple((vertex_of[e.source], e.pattern, graph.operator(e.source).parallelism, v.parallelism)
                          for e in graph.edges if e.target == v.operators[0])
            for v in vertices
        }
        self._consumed = {source for edges in self._edges.values() for source, _, _, _ in edges}

    def ranges(self, subtask) -> list[tuple[str, range]]:
        """The producers of ``subtask`` as (job vertex, range of its subtasks), one per input edge."""
        name, i = subtask
        return [(source, producers(pattern, i, p, q)) for source, pattern, p, q in self._edges.get(name, ())]

    def consumed(self, subtask) -> bool:
        """Whether any subtask reads ``subtask``'s result (every subtask of a vertex with consumers is read)."""
        return subtask[0] in self._consumed

    def __contains__(self, subtask) -> bool:
        try:
            name, i = subtask
        except (TypeError, ValueError):
            return False
        return (name in self._parallelism and isinstance(i, int) and not isinstance(i, bool)
                and 0 <= i < self._parallelism[name])

    def __getitem__(self, subtask) -> list[tuple[str, int]]:
        if subtask not in self:
            raise KeyError(subtask)
        return [(source, j) for source, span in self.ranges(subtask) for j in span]

    def __iter__(self) -> Iterator[tuple[str, int]]:
        for name, parallelism in self._parallelism.items():
            for i in range(parallelism):
                yield (name, i)

    def __len__(self) -> int:
        return sum(self._parallelism.values())
