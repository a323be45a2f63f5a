"""The job graph: operators with FLIP-331 attributes, edges, chains and result types.

Pure Python, no Spark. The rules follow Apache Flink (StreamingJobGraphGenerator):
operators joined by a pointwise edge of equal parallelism are chained when both are
chainable and chaining is on; all-to-all edges never chain. An operator whose output
comes only after end of input makes its outputs, and those of its whole chain, BLOCKING;
in batch mode every edge that is not chained is BLOCKING; in streaming mode the rest is
PIPELINED; an explicit ``result=`` on an edge wins.
"""

from __future__ import annotations

import hashlib
import json
from dataclasses import dataclass, field

from ..errors import FullWindowError

MODES = ("batch", "streaming")
PATTERNS = ("pointwise", "all_to_all")
RESULTS = ("pipelined", "blocking")

Vertex = tuple  # (operator name, subtask index)


@dataclass(frozen=True)
class OperatorAttributes:
    """FLIP-331's operator attributes."""

    output_only_after_end_of_stream: bool = False
    internal_sorter_supported: bool = False


@dataclass
class Operator:
    name: str
    parallelism: int
    attributes: OperatorAttributes
    chainable: bool = True
    kind: str | None = None


@dataclass
class Edge:
    source: str
    target: str
    pattern: str
    result: str | None = None  # the explicit result type, if any


def _one_of(value, accepted, what):
    if value not in accepted:
        raise FullWindowError(f"unknown {what} {value!r}; accepted: {', '.join(map(str, accepted))}")


@dataclass
class JobGraph:
    """Operators and edges; derived views (chains, result types, regions) are computed on demand."""

    mode: str = "batch"
    chaining: bool = True
    _operators: dict = field(default_factory=dict, repr=False)
    _edges: list = field(default_factory=list, repr=False)

    def __post_init__(self):
        _one_of(self.mode, MODES, "mode")
        self._cache: dict = {}

    # -- building ---------------------------------------------------------------------------

    def add_operator(self, name, parallelism=1, attributes=None, chainable=True, kind=None) -> Operator:
        if not isinstance(name, str) or not name:
            raise FullWindowError(f"operator name must be a non-empty string; got {name!r}")
        if name in self._operators:
            raise FullWindowError(f"operator {name!r} already exists; operator names are unique")
        if isinstance(parallelism, bool) or not isinstance(parallelism, int) or parallelism < 1:
            raise FullWindowError(f"parallelism of {name!r} must be a positive integer; got {parallelism!r}")
        operator = Operator(name, parallelism, attributes or OperatorAttributes(), bool(chainable), kind)
        self._operators[name] = operator
        self._cache.clear()
        return operator

    def connect(self, src, dst, pattern="pointwise", result=None) -> Edge:
        for name in (src, dst):
            if name not in self._operators:
                raise FullWindowError(
                    f"unknown operator {name!r}; operators are: {', '.join(self._operators) or '(none)'}"
                )
        _one_of(pattern, PATTERNS, "pattern")
        if result is not None:
            _one_of(result, RESULTS, "result")
        if src == dst or self._reaches(dst, src):
            raise FullWindowError(f"edge {src} -> {dst} would make a cycle; a job graph is acyclic")
        edge = Edge(src, dst, pattern, result)
        self._edges.append(edge)
        self._cache.clear()
        return edge

    def _reaches(self, start, goal) -> bool:
        stack, seen = [start], set()
        while stack:
            node = stack.pop()
            if node == goal:
                return True
            if node in seen:
                continue
            seen.add(node)
            stack.extend(e.target for e in self._edges if e.source == node)
        return False

    # -- views ------------------------------------------------------------------------------

    @property
    def operators(self) -> list[Operator]:
        return list(self._operators.values())

    @property
    def edges(self) -> list[Edge]:
        return list(self._edges)

    def operator(self, name) -> Operator:
        return self._operators[name]

    def topological_order(self) -> list[str]:
        indegree = {n: 0 for n in self._operators}
        for e in self._edges:
            indegree[e.target] += 1
        ready = [n for n in self._operators if indegree[n] == 0]
        order = []
        while ready:
            node = ready.pop(0)
            order.append(node)
            for e in self._edges:
                if e.source == node:
                    indegree[e.target] -= 1
                    if indegree[e.target] == 0:
                        ready.append(e.target)
        return order

    def _is_chained(self, edge: Edge) -> bool:
        if not self.chaining or edge.pattern != "pointwise" or edge.result == "blocking":
            return False
        up, down = self._operators[edge.source], self._operators[edge.target]
        if not (up.chainable and down.chainable) or up.parallelism != down.parallelism:
            return False
        outs = [e for e in self._edges if e.source == edge.source]
        ins = [e for e in self._edges if e.target == edge.target]
        return len(outs) == 1 and len(ins) == 1

    def chains(self) -> list[list[str]]:
        """Operator names fused into one job vertex, in topological order."""
        if "chains" not in self._cache:
            head = {}
            for name in self.topological_order():
                ins = [e for e in self._edges if e.target == name]
                head[name] = head[ins[0].source] if len(ins) == 1 and self._is_chained(ins[0]) else name
            chains: dict[str, list[str]] = {}
            for name in self.topological_order():
                chains.setdefault(head[name], []).append(name)
            self._cache["chains"] = list(chains.values())
        return [list(c) for c in self._cache["chains"]]

    def chain_of(self, name) -> list[str]:
        return next(c for c in self.chains() if name in c)

    def _edge(self, src, dst) -> Edge:
        for e in self._edges:
            if e.source == src and e.target == dst:
                return e
        raise FullWindowError(f"no edge {src} -> {dst}")

    def result_type(self, src, dst) -> str:
        """"chained", "pipelined" or "blocking" for the edge src -> dst."""
        edge = self._edge(src, dst)
        if self._is_chained(edge):
            return "chained"
        if edge.result is not None:
            return edge.result
        if self.mode == "batch":
            return "blocking"
        chain = self.chain_of(src)
        if any(self._operators[n].attributes.output_only_after_end_of_stream for n in chain):
            return "blocking"
        return "pipelined"

    # -- execution level ------------------------------------------------------------------------

    def execution_vertices(self) -> list[Vertex]:
        return [(n, i) for n in self.topological_order() for i in range(self._operators[n].parallelism)]

    def _pairs(self, edge: Edge) -> list[tuple[int, int]]:
        """(producer, consumer) subtask pairs of a pointwise edge, as Flink connects them."""
        from .regions import pointwise_pairs

        key = ("pairs", edge.source, edge.target)
        if key not in self._cache:
            p, q = self._operators[edge.source].parallelism, self._operators[edge.target].parallelism
            self._cache[key] = pointwise_pairs(p, q)
        return self._cache[key]

    def _neighbours(self, vertex, downstream: bool) -> list[tuple[Vertex, str]]:
        name, index = vertex
        found = []
        for edge in self._edges:
            if (edge.source if downstream else edge.target) != name:
                continue
            other = edge.target if downstream else edge.source
            kind = self.result_type(edge.source, edge.target)
            if edge.pattern == "all_to_all":
                found.extend(((other, k), kind) for k in range(self._operators[other].parallelism))
            else:
                mine, theirs = (0, 1) if downstream else (1, 0)
                found.extend(((other, pair[theirs]), kind) for pair in self._pairs(edge) if pair[mine] == index)
        return found

    def producers_of(self, vertex) -> list[tuple[Vertex, str]]:
        """The execution vertices ``vertex`` reads from, with the result type of each connection."""
        return self._neighbours(tuple(vertex), downstream=False)

    def consumers_of(self, vertex) -> list[tuple[Vertex, str]]:
        """The execution vertices reading ``vertex``'s output, with the result type of each connection."""
        return self._neighbours(tuple(vertex), downstream=True)

    def pipelined_regions(self) -> list[frozenset]:
        from .regions import compute_regions

        if "regions" not in self._cache:
            self._cache["regions"] = compute_regions(self)
        return list(self._cache["regions"])

    def region_of(self, vertex) -> frozenset:
        if "region_index" not in self._cache:
            self._cache["region_index"] = {v: r for r in self.pipelined_regions() for v in r}
        return self._cache["region_index"][tuple(vertex)]

    # -- serialisation ----------------------------------------------------------------------------

    def to_dict(self) -> dict:
        return {
            "mode": self.mode, "chaining": self.chaining,
            "operators": [
                {"name": o.name, "parallelism": o.parallelism, "kind": o.kind, "chainable": o.chainable,
                 "output_only_after_end_of_stream": o.attributes.output_only_after_end_of_stream,
                 "internal_sorter_supported": o.attributes.internal_sorter_supported}
                for o in self._operators.values()
            ],
            "edges": [{"source": e.source, "target": e.target, "pattern": e.pattern, "result": e.result} for e in self._edges],
        }

    def to_json(self) -> str:
        return json.dumps(self.to_dict(), sort_keys=True, separators=(",", ":"))

    @classmethod
    def from_json(cls, text: str) -> "JobGraph":
        data = json.loads(text)
        graph = cls(mode=data["mode"], chaining=data["chaining"])
        for o in data["operators"]:
            graph.add_operator(
                o["name"], o["parallelism"], chainable=o["chainable"], kind=o["kind"],
                attributes=OperatorAttributes(o["output_only_after_end_of_stream"], o["internal_sorter_supported"]),
            )
        for e in data["edges"]:
            graph.connect(e["source"], e["target"], e["pattern"], e["result"])
        return graph

    def fingerprint(self) -> str:
        return hashlib.sha256(self.to_json().encode()).hexdigest()

    def __eq__(self, other) -> bool:
        return isinstance(other, JobGraph) and self.to_dict() == other.to_dict()

    def diff(self, other: "JobGraph") -> list[str]:
        """What changed from this graph to ``other``, one phrase per change."""
        changes = []
        if self.mode != other.mode:
            changes.append(f"mode {self.mode} -> {other.mode}")
        mine, theirs = self._operators, other._operators
        changes += [f"operator {n!r} removed" for n in mine if n not in theirs]
        changes += [f"operator {n!r} added" for n in theirs if n not in mine]
        for n in mine:
            if n in theirs:
                a, b = mine[n], theirs[n]
                for attr in ("parallelism", "kind", "chainable", "attributes"):
                    if getattr(a, attr) != getattr(b, attr):
                        changes.append(f"operator {n!r} {attr} {getattr(a, attr)} -> {getattr(b, attr)}")
        ea = {(e.source, e.target): e for e in self._edges}
        eb = {(e.source, e.target): e for e in other._edges}
        changes += [f"edge {s} -> {t} removed" for s, t in ea if (s, t) not in eb]
        changes += [f"edge {s} -> {t} added" for s, t in eb if (s, t) not in ea]
        for key in ea:
            if key in eb and (ea[key].pattern, ea[key].result) != (eb[key].pattern, eb[key].result):
                changes.append(f"edge {key[0]} -> {key[1]} changed")
        return changes

    def to_dot(self) -> str:
        """Graphviz DOT: chains boxed, blocking edges dashed, regions coloured and numbered."""
        from .render import to_dot

        return to_dot(self)

    def _repr_mimebundle_(self, include=None, exclude=None):
        from .render import mimebundle

        return mimebundle(self)
