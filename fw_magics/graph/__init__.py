"""The job graph model: FLIP-331 operator attributes, chains, result types, pipelined regions.

Pure Python, no Spark::

    from fw_magics.graph import JobGraph, OperatorAttributes
    g = JobGraph(mode="batch")
    g.add_operator("source", 4, kind="source")
    g.add_operator("sort", 4, OperatorAttributes(output_only_after_end_of_stream=True))
    g.connect("source", "sort")
    g.chains(), g.result_type("source", "sort"), g.pipelined_regions(), g.job_vertices()
"""

from .job_vertices import JobVertex, SubtaskInputs, subtask_inputs, vertex_index, vertex_name
from .model import (
    MAX_PARALLELISM,
    MAX_STATE_PARTITIONS,
    MODES,
    PATTERNS,
    RESULTS,
    Edge,
    JobGraph,
    Operator,
    OperatorAttributes,
)

__all__ = [
    "MAX_PARALLELISM", "MAX_STATE_PARTITIONS", "MODES", "PATTERNS", "RESULTS", "Edge", "JobGraph", "JobVertex",
    "Operator", "OperatorAttributes", "SubtaskInputs", "subtask_inputs", "vertex_index", "vertex_name",
]
