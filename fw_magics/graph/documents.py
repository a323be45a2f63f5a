"""A JobGraph as a document: its canonical JSON, reading that JSON back (untrusted: bounded, every key
checked, one line for anything else) and what changed between two graphs. Pure Python."""

from __future__ import annotations

import json
from typing import TYPE_CHECKING

from ..errors import FullWindowError

if TYPE_CHECKING:
    from .model import JobGraph, Operator

#: What ``parse`` reads at most (a graph read back from a job directory is untrusted):
#: operators, edges, and execution vertices over all operators.
MAX_JSON_OPERATORS = 1000
MAX_JSON_EXECUTION_VERTICES = 1 << 20

_OPERATOR_KEYS = ("name", "parallelism", "kind", "chainable", "output_only_after_end_of_stream",
                  "internal_sorter_supported")
_EDGE_KEYS = ("source", "target", "pattern", "result")
_GRAPH_KEYS = ("mode", "chaining", "operators", "edges")


def document(graph: JobGraph) -> dict:
    """The graph as plain data: operators and edges in the order they were added."""
    return {
        "mode": graph.mode,
        "chaining": graph.chaining,
        "operators": [{"name": o.name, **_operator_fields(o)} for o in graph.operators],
        "edges": [{"source": e.source, "target": e.target, "pattern": e.pattern, "result": e.result}
                  for e in graph.edges],
    }


def to_json(graph: JobGraph) -> str:
    """Canonical JSON (sorted keys, no spaces)."""
    return json.dumps(document(graph), sort_keys=True, separators=(",", ":"))


def parse(cls, attributes, text: str) -> JobGraph:
    """The graph (of class ``cls``, its operators' ``attributes``) ``to_json`` wrote; anything else is refused
    with a one-line error.

    At most ``MAX_JSON_OPERATORS`` operators and edges and ``MAX_JSON_EXECUTION_VERTICES`` execution
    vertices, each operator's parallelism at most ``MAX_PARALLELISM`` (``add_operator`` checks it).
    """
    try:
        data = json.loads(text)
    except RecursionError:
        raise FullWindowError("job graph JSON is nested too deep; accepted: the text of to_json()") from None
    except (TypeError, ValueError) as error:
        raise FullWindowError(f"job graph JSON does not parse ({str(error)[:80]}); "
                              "accepted: the text of to_json()") from None
    _expect_keys(data, _GRAPH_KEYS, "the job graph")
    if not isinstance(data["operators"], list) or not isinstance(data["edges"], list):
        raise FullWindowError(
            "job graph JSON: 'operators' and 'edges' must be lists; accepted: the text of to_json()"
        )
    if len(data["operators"]) > MAX_JSON_OPERATORS or len(data["edges"]) > MAX_JSON_OPERATORS:
        raise FullWindowError(f"job graph JSON with {len(data['operators'])} operators and {len(data['edges'])} "
                              f"edges; accepted: at most {MAX_JSON_OPERATORS} of each")
    total = sum(o.get("parallelism") if isinstance(o, dict) and isinstance(o.get("parallelism"), int) else 0
                for o in data["operators"])
    if total > MAX_JSON_EXECUTION_VERTICES:
        raise FullWindowError(f"job graph JSON with {total} execution vertices; accepted: at most "
                              f"{MAX_JSON_EXECUTION_VERTICES}")
    graph = cls(mode=data["mode"], chaining=data["chaining"])
    for k, o in enumerate(data["operators"]):
        _expect_keys(o, _OPERATOR_KEYS, f"operator {k}")
        graph.add_operator(
            o["name"], o["parallelism"], chainable=o["chainable"], kind=o["kind"],
            attributes=attributes(o["output_only_after_end_of_stream"], o["internal_sorter_supported"]),
        )
    for k, e in enumerate(data["edges"]):
        _expect_keys(e, _EDGE_KEYS, f"edge {k}")
        graph.connect(e["source"], e["target"], e["pattern"], e["result"])
    return graph


def diff(mine: JobGraph, other: JobGraph) -> list[str]:
    """What changed from ``mine`` to ``other``, one short phrase per change; [] iff equal."""
    changes = [f"{what} {_show(getattr(mine, what))} -> {_show(getattr(other, what))}"
               for what in ("mode", "chaining") if getattr(mine, what) != getattr(other, what)]
    ours, theirs = {o.name: o for o in mine.operators}, {o.name: o for o in other.operators}
    changes += [f"operator {n!r} removed" for n in ours if n not in theirs]
    changes += [f"operator {n!r} added" for n in theirs if n not in ours]
    for n in (n for n in ours if n in theirs):
        a, b = _operator_fields(ours[n]), _operator_fields(theirs[n])
        changes += [f"operator {n!r} {k} {_show(a[k])} -> {_show(b[k])}" for k in a if a[k] != b[k]]
    kept, kept_there = [n for n in ours if n in theirs], [n for n in theirs if n in ours]
    if kept != kept_there:
        changes.append(f"operator order {', '.join(kept)} -> {', '.join(kept_there)}")
    ea, eb = {(e.source, e.target): e for e in mine.edges}, {(e.source, e.target): e for e in other.edges}
    changes += [f"edge {s}->{t} removed" for s, t in ea if (s, t) not in eb]
    changes += [f"edge {s}->{t} added" for s, t in eb if (s, t) not in ea]
    for s, t in (key for key in ea if key in eb):
        for k in ("pattern", "result"):
            a, b = getattr(ea[(s, t)], k), getattr(eb[(s, t)], k)
            if a != b:
                changes.append(f"edge {s}->{t} {k} {_show(a)} -> {_show(b)}")
    kept, kept_there = [key for key in ea if key in eb], [key for key in eb if key in ea]
    if kept != kept_there:
        changes.append("edge order changed")
    return changes


def _expect_keys(obj, keys, where: str) -> None:
    if not isinstance(obj, dict):
        raise FullWindowError(f"job graph JSON: {where} is not an object; accepted: the text of to_json()")
    missing = [k for k in keys if k not in obj]
    extra = sorted(k for k in obj if k not in keys)
    if missing or extra:
        culprit = f"lacks {missing[0]!r}" if missing else f"has unexpected key {extra[0]!r}"
        raise FullWindowError(f"job graph JSON: {where} {culprit}; accepted keys: {', '.join(keys)}")


def _operator_fields(o: Operator) -> dict:
    return {"parallelism": o.parallelism, "kind": o.kind, "chainable": o.chainable,
            "output_only_after_end_of_stream": o.attributes.output_only_after_end_of_stream,
            "internal_sorter_supported": o.attributes.internal_sorter_supported}


def _show(value) -> str:
    return repr(value) if isinstance(value, str) else str(value)
