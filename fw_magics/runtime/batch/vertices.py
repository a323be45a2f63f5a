"""The runtime's job vertices: the graph's job vertices with the Spark steps that compute them."""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass

from ...datastream.job_graph import operator_names
from ...datastream.lineage import Step
from ...graph import JobGraph, JobVertex, vertex_index


@dataclass(frozen=True)
class SparkVertex(JobVertex):
    """A job vertex (name, chain, parallelism, inputs: see ``fw_magics.graph.JobVertex``) run as
    one Spark job, one task per subtask, by applying its steps' transforms in order."""

    steps: tuple[Step, ...] = ()  # the chain's operators as lineage steps, upstream first
    upstream: int | None = None  # index of the job vertex it reads, None for the source
    pattern: str | None = None  # "pointwise" | "all_to_all" for the edge from upstream


def spark_vertices(stream, graph: JobGraph) -> list[SparkVertex]:
    """The job vertices of ``graph`` (the job graph of ``stream``), upstream first (the lineage is linear)."""
    steps = stream.step.lineage()
    by_name = dict(zip(operator_names(steps), steps))
    edges = {(edge.source, edge.target): edge for edge in graph.edges}
    vertices = []
    for vertex in graph.job_vertices():
        upstream = vertex_index(vertex.inputs[0]) if vertex.inputs else None
        pattern = None
        if upstream is not None:
            producer = graph.job_vertices()[upstream].operators[-1]
            pattern = edges[(producer, vertex.operators[0])].pattern
        fields = {f.name: getattr(vertex, f.name) for f in dataclasses.fields(JobVertex)}
        vertices.append(SparkVertex(**fields, steps=tuple(by_name[n] for n in vertex.operators),
                                    upstream=upstream, pattern=pattern))
    return vertices
