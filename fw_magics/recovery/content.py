"""Comparing a job's recorded content fingerprint with the current one (item 2 of issue 16). No Spark.

The content fingerprint (``fw_magics.datastream.content.job_content``) is ``{operator: {piece:
digest}}``: a source's rows, plan or files, each function's code and closure, keys, sort
fields, aggregates and schemas. ``compare`` says which operators changed, in words, and
which pieces could not be compared (recorded by an older fw-magics, or not fingerprintable,
such as the rows of an RDD); ``affected_vertices`` are the job vertices whose results a
change makes stale: those holding a changed operator and everything downstream of them.
"""

from __future__ import annotations

from dataclasses import dataclass, field

UNKNOWN = "unknown: "  # the same prefix as fw_magics.recovery.fingerprint.UNKNOWN (layer 1), kept here for recovery

#: How each piece is named in a sentence ("the function of 'reduce(add)'").
PIECES = {
    "rows": "the rows of {op}",
    "plan": "the query of the DataFrame {op}",
    "files": "the files {op} reads (their sizes or modification times)",
    "function": "the function of {op}",
    "aggregate": "the aggregate of {op}",
    "key": "the key of {op}",
    "sort": "the sort fields of {op}",
    "declared": "the declared schema of {op}",
    "schema": "the schema of {op}",
}


def describe(operator: str, piece: str) -> str:
    return PIECES.get(piece, "the {piece} of {op}").format(op=repr(operator), piece=piece)


@dataclass
class Comparison:
    """What changed between the recorded content and the current one."""

    changed: dict = field(default_factory=dict)  # operator -> [piece, ...]
    unknown: list = field(default_factory=list)  # phrases: what could not be compared

    @property
    def operators(self) -> set[str]:
        return set(self.changed)

    def phrases(self) -> list[str]:
        return [describe(op, piece) for op, pieces in self.changed.items() for piece in pieces]

    def summary(self, limit: int = 3) -> str:
        phrases = self.phrases()
        more = len(phrases) - limit
        return "; ".join(phrases[:limit]) + (f"; and {more} more" if more > 0 else "")


def compare(recorded: dict | None, current: dict) -> Comparison:
    """Which operators' pieces differ; a piece that is unknown on either side is not compared."""
    result = Comparison()
    if recorded is None:
        result.unknown.append("everything (the job was recorded without a content fingerprint, "
                              "by an older fw-magics)")
        return result
    for operator, pieces in current.items():
        before = recorded.get(operator)
        if before is None:
            result.changed[operator] = ["content"] if pieces else []
            if not pieces:
                del result.changed[operator]
            continue
        for piece in sorted(set(pieces) | set(before)):
            now, then = pieces.get(piece), before.get(piece)
            if (now or "").startswith(UNKNOWN) or (then or "").startswith(UNKNOWN):
                why = (now if (now or "").startswith(UNKNOWN) else then)[len(UNKNOWN):]
                result.unknown.append(f"{describe(operator, piece)}: {why}")
            elif now != then:
                result.changed.setdefault(operator, []).append(piece)
    return result


def affected_vertices(graph, operators) -> set[str]:
    """Names of the job vertices holding one of ``operators`` or downstream of one that does."""
    operators = set(operators)
    vertices = graph.job_vertices()
    hit = {v.name for v in vertices if operators & set(v.operators)}
    for vertex in vertices:  # vertices are in topological order: inputs come first
        if any(name in hit for name in vertex.inputs):
            hit.add(vertex.name)
    return hit
