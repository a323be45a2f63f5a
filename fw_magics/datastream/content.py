"""What a stream's result depends on, per operator: the content fingerprint a job records.

Each operator's Step carries in ``detail["identity"]`` the things that determine its output
besides the graph (its function, key, sort fields, aggregate, declared schema; a source's
rows or DataFrame); ``job_content`` digests them with ``fw_magics.recovery.fingerprint`` into
``{operator name: {piece: hex digest}}``, plain JSON that a job's first event records and a
resumed run compares (``fw_magics.recovery.content``). The output schema of every operator
is a piece too. A DataFrame source is analysed by Spark (no job runs).
"""

from __future__ import annotations

from ..recovery.fingerprint import dataframe_digest, value_digest
from .job_graph import operator_names
from .lineage import Step


def operator_content(step: Step) -> dict[str, str]:
    """One operator's pieces: piece name -> hex digest (or ``fingerprint.UNKNOWN`` + why)."""
    pieces: dict[str, str] = {}
    for name, value in step.detail.get("identity", {}).items():
        if name == "dataframe":
            pieces.update(dataframe_digest(value))
        elif name == "rows":
            pieces["rows"] = value  # already a digest (of the Arrow chunks)
        else:
            pieces[name] = value_digest(value)
    schema = step.detail.get("schema")
    if schema is not None:
        pieces["schema"] = value_digest(schema)
    if step.keyed_by is not None and "key" not in pieces:
        pieces["key"] = value_digest(step.keyed_by)
    return pieces


def job_content(stream) -> dict[str, dict[str, str]]:
    """Every operator of ``stream``'s lineage by its job-graph name, with its pieces."""
    steps = stream.step.lineage()
    return {name: operator_content(step) for name, step in zip(operator_names(steps), steps)}
