"""Job vertices: the chains of a JobGraph, named "v0", "v1", ... (Flink's ``JobVertex``).

A job vertex is a chain of operators that runs as one task per subtask. Its name is an
on-disk contract: the runtime commits subtask ``i``'s result as ``results/<name>/<i>.arrow``
and every job event about it carries ``"vertex": <name>``; a resumed run, the recovery
panel and the live graph view read both back. So names are made and parsed here only:
vertex ``k`` is the ``k``-th chain of ``JobGraph.chains()`` (topological order of each
chain's first operator), named ``vertex_name(k)``.

Pure Python, no Spark. The runtime's own vertex (``fw_magics.runtime.vertices``) adds the
Spark steps that compute it.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from ..errors import FullWindowError

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


def subtask_inputs(graph) -> tuple[list[tuple[str, int]], dict]:
    """Every job-vertex subtask ``(name, i)`` in vertex order, and the subtasks each one reads.

    Subtask ``i`` of a vertex reads what subtask ``i`` of its first operator reads from other
    chains (pointwise ranges or all-to-all, as the graph wires them).
    """
    vertex_of = {op: v.name for v in graph.job_vertices() for op in v.operators}
    subtasks, inputs = [], {}
    for v in graph.job_vertices():
        for i in range(v.parallelism):
            subtasks.append((v.name, i))
            inputs[(v.name, i)] = [(vertex_of[op], j) for (op, j), _ in graph.producers_of((v.operators[0], i))]
    return subtasks, inputs
