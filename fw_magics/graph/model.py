"""The job graph: operators with FLIP-331 attributes, edges, chains and result types.

Pure Python, no Spark. The rules are Apache Flink's (``StreamingJobGraphGenerator``):

* **Chaining.** An edge is chained (its two operators fused into one task) when chaining is
  on, the edge is pointwise with equal parallelism on both sides (Flink's forward edge),
  both operators are chainable, no explicit ``result="blocking"`` is set on it, the
  downstream operator has exactly one input and the upstream operator exactly one consumer.
  The last condition is stricter than Flink, which lets a chain fan out into a tree; here a
  chain is a path, so each chain has one output operator. All-to-all edges never chain.
* **Result types (FLIP-331).** An edge that is not chained carries its explicit ``result=``
  if one was given. Otherwise it is BLOCKING when any operator of the producer's chain has
  ``output_only_after_end_of_stream`` (Flink marks the whole chain), or when the graph runs
  in batch mode; else, in streaming mode, it is PIPELINED.
"""

from __future__ import annotations

import hashlib
import heapq
from dataclasses import dataclass

from ..errors import FullWindowError
from . import documents
from .connections import consumers, producers
from .job_vertices import JobVertex, job_vertices

MODES = ("batch", "streaming")
PATTERNS = ("pointwise", "all_to_all")
RESULTS = ("pipelined", "blocking")
#: The operator kinds the graph itself reads (any other kind is a label it only shows): a job's inputs,
#: in the order added (``source_names``), and where its results go.
SOURCE, SINK = "source", "sink"
#: The parallelism bounds, both here. MAX_PARALLELISM: the most subtasks an operator of a job graph may
#: have, Flink's upper bound of max parallelism (2^15); ``execute()`` runs any graph within it.
MAX_PARALLELISM = 1 << 15
#: MAX_STATE_PARTITIONS: the most a streaming job's parallelism (its state partitions) may be, within
#: MAX_PARALLELISM: each is a Spark task in every micro-batch and a backlog subtask with a committed
#: file, so a slip of a digit (32768) would start tens of thousands of tasks; Flink's own default
#: maximum parallelism for a job of this size is 128.
MAX_STATE_PARTITIONS = 1024


def _one_of(value, accepted, what: str) -> None:
    if isinstance(value, bool) or value not in accepted:
        raise FullWindowError(f"unknown {what} {value!r}; accepted: {', '.join(map(str, accepted))}")


def _flag(value, what: str) -> bool:
    if not isinstance(value, bool):
        raise FullWindowError(f"{what} must be True or False; got {value!r}")
    return value


@dataclass(frozen=True)
class OperatorAttributes:
    """FLIP-331's operator attributes.

    ``output_only_after_end_of_stream``: the operator emits records only after all its inputs
    have ended (a sort, a full-window aggregate); its outputs, and those of every operator
    chained with it, become BLOCKING. ``internal_sorter_supported``: the operator sorts its
    input itself, so the runtime need not insert a sort in front of it.
    """

    output_only_after_end_of_stream: bool = False
    internal_sorter_supported: bool = False

    def __post_init__(self):
        _flag(self.output_only_after_end_of_stream, "output_only_after_end_of_stream")
        _flag(self.internal_sorter_supported, "internal_sorter_supported")


@dataclass(frozen=True)
class Operator:
    """One operator: its unique name, parallelism (subtask count), attributes and kind."""

    name: str
    parallelism: int
    attributes: OperatorAttributes = OperatorAttributes()
    chainable: bool = True
    kind: str | None = None


@dataclass(frozen=True)
class Edge:
    """A data exchange from ``source`` to ``target``; ``result`` is the explicit type, if any."""

    source: str
    target: str
    pattern: str = "pointwise"
    result: str | None = None


class JobGraph:
    """Operators and edges; chains, result types and regions are derived on demand and cached.

    Build it with ``add_operator`` and ``connect``; both check their arguments and raise
    ``FullWindowError`` with a one-line message on misuse, leaving the graph unchanged.
    """

    def __init__(self, mode: str = "batch", chaining: bool = True):
        _one_of(mode, MODES, "mode")
        self._mode = mode
        self._chaining = _flag(chaining, "chaining")
        self._operators: dict[str, Operator] = {}
        self._edges: dict[tuple[str, str], Edge] = {}
        self._inputs: dict[str, list[Edge]] = {}
        self._outputs: dict[str, list[Edge]] = {}
        self._cache: dict = {}
        self._notes: dict[str, dict[str, str]] = {}

    @property
    def mode(self) -> str:
        return self._mode

    @property
    def chaining(self) -> bool:
        return self._chaining

    def source_names(self) -> list[str]:
        """The names of its source operators (kind ``"source"``), in the order they were added: a
        two-input job's first input, then its second."""
        return [op.name for op in self.operators if op.kind == SOURCE]

    # -- building ------------------------------------------------------------------------------

    def add_operator(self, name, parallelism=1, attributes=None, chainable=True, kind=None) -> Operator:
        """Add an operator and return it; names are unique."""
        if not isinstance(name, str) or not name:
            raise FullWindowError(f"operator name {name!r}; accepted: a non-empty string")
        if name in self._operators:
            raise FullWindowError(
                f"duplicate operator name {name!r}; accepted: a name not yet used "
                f"(existing: {', '.join(self._operators)})"
            )
        if isinstance(parallelism, bool) or not isinstance(parallelism, int) or parallelism < 1:
            raise FullWindowError(f"parallelism {parallelism!r:.40} of operator {name!r}; accepted: an integer >= 1")
        if parallelism > MAX_PARALLELISM:
            raise FullWindowError(f"parallelism {parallelism} of operator {name!r}; accepted: at most "
                                  f"{MAX_PARALLELISM} (Flink's upper bound of max parallelism)")
        if attributes is None:
            attributes = OperatorAttributes()
        elif not isinstance(attributes, OperatorAttributes):
            raise FullWindowError(
                f"attributes of operator {name!r} are a {type(attributes).__name__}; accepted: OperatorAttributes(...)"
            )
        _flag(chainable, f"chainable of operator {name!r}")
        if kind is not None and not isinstance(kind, str):
            raise FullWindowError(f"kind {kind!r} of operator {name!r}; accepted: a string or None")
        operator = Operator(name, parallelism, attributes, chainable, kind)
        self._operators[name] = operator
        self._inputs[name], self._outputs[name] = [], []
        self._cache.clear()
        return operator

    def connect(self, src, dst, pattern="pointwise", result=None) -> Edge:
        """Add the edge ``src -> dst`` and return it; the graph must stay acyclic."""
        for name in (src, dst):
            if not isinstance(name, str) or name not in self._operators:
                raise FullWindowError(
                    f"unknown operator {name!r}; accepted: {', '.join(self._operators) or '(no operators yet)'}"
                )
        _one_of(pattern, PATTERNS, "pattern")
        if result is not None:
            _one_of(result, RESULTS, "result")
        if (src, dst) in self._edges:
            raise FullWindowError(f"edge {src}->{dst} already exists; accepted: one edge per pair of operators")
        path = self._path(dst, src)
        if path is not None:
            raise FullWindowError(
                f"edge {src}->{dst} would close the cycle {'->'.join([src, *path])}; "
                "accepted: edges that keep the graph acyclic"
            )
        edge = Edge(src, dst, pattern, result)
        self._edges[(src, dst)] = edge
        self._outputs[src].append(edge)
        self._inputs[dst].append(edge)
        self._cache.clear()
        return edge

    def _path(self, start: str, goal: str) -> list[str] | None:
        """A path of operator names from ``start`` to ``goal`` along edges, or None."""
        parent = {start: None}
        stack = [start]
        while stack:
            node = stack.pop()
            if node == goal:
                path = []
                while node is not None:
                    path.append(node)
                    node = parent[node]
                return path[::-1]
            for edge in self._outputs[node]:
                if edge.target not in parent:
                    parent[edge.target] = node
                    stack.append(edge.target)
        return None

    def annotate(self, name: str, **notes) -> None:
        """Attach display-only notes to an operator, shown under its name (``backlog="true"``,
        ``phase="stream"``). Notes describe a run, not the graph: they are not part of
        ``to_json()``, equality or the fingerprint. A note set to None is removed."""
        self.operator(name)
        current = self._notes.setdefault(name, {})
        for key, value in notes.items():
            if value is None:
                current.pop(key, None)
            else:
                current[key] = str(value)

    def annotations(self, name: str) -> dict[str, str]:
        """The notes ``annotate`` attached to operator ``name`` (a copy)."""
        self.operator(name)
        return dict(self._notes.get(name, {}))

    # -- operator level ----------------------------------------------------------------------------

    @property
    def operators(self) -> list[Operator]:
        """The operators, in the order they were added."""
        return list(self._operators.values())

    @property
    def edges(self) -> list[Edge]:
        """The edges, in the order they were added."""
        return list(self._edges.values())

    def operator(self, name: str) -> Operator:
        """The operator called ``name``."""
        if not isinstance(name, str) or name not in self._operators:
            raise FullWindowError(f"unknown operator {name!r}; accepted: {', '.join(self._operators)}")
        return self._operators[name]

    def _cached(self, key: str, compute):
        if key not in self._cache:
            self._cache[key] = compute()
        return self._cache[key]

    def topological_order(self) -> list[str]:
        """Operator names, every producer before its consumers; ties keep the order of adding."""
        return list(self._cached("order", self._topological_order))

    def _topological_order(self) -> tuple[str, ...]:
        rank = {name: k for k, name in enumerate(self._operators)}
        waiting = {name: len(edges) for name, edges in self._inputs.items()}
        ready = [rank[name] for name, count in waiting.items() if count == 0]
        names = list(self._operators)
        order = []
        while ready:
            name = names[heapq.heappop(ready)]
            order.append(name)
            for edge in self._outputs[name]:
                waiting[edge.target] -= 1
                if waiting[edge.target] == 0:
                    heapq.heappush(ready, rank[edge.target])
        return tuple(order)

    def _is_chained(self, edge: Edge) -> bool:
        if not self._chaining or edge.pattern != "pointwise" or edge.result == "blocking":
            return False
        up, down = self._operators[edge.source], self._operators[edge.target]
        return (up.chainable and down.chainable and up.parallelism == down.parallelism
                and len(self._outputs[edge.source]) == 1 and len(self._inputs[edge.target]) == 1)

    def chains(self) -> list[list[str]]:
        """Operator names fused into one job vertex (a task), each chain upstream first.

        Chains are listed in topological order of their first operator.
        """
        return [list(chain) for chain in self._cached("chains", self._chains)]

    def _chains(self) -> tuple[tuple[str, ...], ...]:
        found: dict[str, list[str]] = {}
        head: dict[str, str] = {}
        for name in self.topological_order():
            inputs = self._inputs[name]
            head[name] = head[inputs[0].source] if len(inputs) == 1 and self._is_chained(inputs[0]) else name
            found.setdefault(head[name], []).append(name)
        return tuple(tuple(chain) for chain in found.values())

    def chain_of(self, name: str) -> list[str]:
        """The chain holding operator ``name``."""
        self.operator(name)
        return next(list(chain) for chain in self._cached("chains", self._chains) if name in chain)

    def result_type(self, src: str, dst: str) -> str:
        """How the edge ``src -> dst`` exchanges data: "chained", "pipelined" or "blocking"."""
        types = self._cached("result_types", self._result_types)
        if (src, dst) not in types:
            raise FullWindowError(
                f"no edge {src}->{dst}; accepted: {', '.join(f'{s}->{t}' for s, t in types) or '(no edges yet)'}"
            )
        return types[(src, dst)]

    def _result_types(self) -> dict[tuple[str, str], str]:
        ends_only = {}
        for chain in self._cached("chains", self._chains):
            marked = any(self._operators[n].attributes.output_only_after_end_of_stream for n in chain)
            ends_only.update((n, marked) for n in chain)
        types = {}
        for key, edge in self._edges.items():
            if self._is_chained(edge):
                types[key] = "chained"
            elif edge.result is not None:
                types[key] = edge.result
            elif ends_only[edge.source] or self._mode == "batch":
                types[key] = "blocking"
            else:
                types[key] = "pipelined"
        return types

    def job_vertices(self) -> list[JobVertex]:
        """The chains as job vertices named "v0", "v1", ..., in chain order (see ``job_vertices``)."""
        return list(self._cached("job_vertices", lambda: job_vertices(self)))

    # -- execution level ---------------------------------------------------------------------------

    def layout(self):
        """The execution vertices numbered in topological order, and each one's region number.

        A ``regions.Layout`` (offsets, parallelisms, ``region[vertex id]``, each operator's
        region numbers); computed once per graph and shared, so treat it as read-only.
        """
        from .regions import build_layout

        return self._cached("layout", lambda: build_layout(self))

    def _vertices(self) -> tuple[tuple[str, int], ...]:
        return self._cached("vertices", lambda: tuple(
            (name, i) for name in self.topological_order() for i in range(self._operators[name].parallelism)
        ))

    def execution_vertices(self) -> list[tuple[str, int]]:
        """Every (operator, subtask) pair, operators in topological order."""
        return list(self._vertices())

    def check_vertex(self, vertex) -> tuple[str, int]:
        """``vertex`` as an (operator, subtask) tuple, or a one-line FullWindowError naming it."""
        try:
            name, index = vertex
        except (TypeError, ValueError):
            name = index = None
        operator = self._operators.get(name) if isinstance(name, str) else None
        if operator is None or isinstance(index, bool) or not isinstance(index, int):
            raise FullWindowError(
                f"unknown execution vertex {vertex!r}; accepted: (operator, subtask) with an operator "
                f"among {', '.join(self._operators)}"
            )
        if not 0 <= index < operator.parallelism:
            raise FullWindowError(
                f"subtask {index} of operator {name!r}; accepted: 0 to {operator.parallelism - 1}"
            )
        return name, index

    def producers_of(self, vertex) -> list[tuple[tuple[str, int], str]]:
        """The execution vertices ``vertex`` reads from, each with the result type of the connection."""
        name, j = self.check_vertex(vertex)
        q = self._operators[name].parallelism
        found = []
        for edge in self._inputs[name]:
            kind = self.result_type(edge.source, name)
            p = self._operators[edge.source].parallelism
            found.extend(((edge.source, i), kind) for i in producers(edge.pattern, j, p, q))
        return found

    def consumers_of(self, vertex) -> list[tuple[tuple[str, int], str]]:
        """The execution vertices reading ``vertex``'s output, each with the result type of the connection."""
        name, i = self.check_vertex(vertex)
        p = self._operators[name].parallelism
        found = []
        for edge in self._outputs[name]:
            kind = self.result_type(name, edge.target)
            q = self._operators[edge.target].parallelism
            found.extend(((edge.target, j), kind) for j in consumers(edge.pattern, i, p, q))
        return found

    def regions(self) -> tuple[frozenset, ...]:
        """The pipelined regions indexed by region number (``layout().region`` gives each vertex's).

        Computed once per graph and shared (no copy): the cheap form for algorithms such as
        failover. ``pipelined_regions()`` gives the same regions as a fresh list.
        """
        return self._cached("regions", lambda: tuple(self.layout().region_sets(self._vertices())))

    def pipelined_regions(self) -> list[frozenset]:
        """The pipelined regions: frozensets of (operator, subtask), ordered by their first vertex."""
        return list(self.regions())

    def region_of(self, vertex) -> frozenset:
        """The pipelined region holding ``vertex``."""
        name, index = self.check_vertex(vertex)
        layout = self.layout()
        return self.regions()[layout.region[layout.offset[name] + index]]

    # -- serialisation and comparison (documents.py) ----------------------------------------------------

    def to_json(self) -> str:
        """Canonical JSON (sorted keys, no spaces); operators and edges in the order they were added."""
        return documents.to_json(self)

    @classmethod
    def from_json(cls, text: str) -> JobGraph:
        """The graph ``to_json`` wrote; anything else is refused with a one-line error (``documents.parse``:
        the text may come from a job directory, so its size is bounded too)."""
        return documents.parse(cls, OperatorAttributes, text)

    def fingerprint(self) -> str:
        """SHA-256 (hex) of ``to_json()``: equal graphs, in any process, have equal fingerprints."""
        return hashlib.sha256(self.to_json().encode("utf-8")).hexdigest()

    def __eq__(self, other) -> bool:
        return isinstance(other, JobGraph) and documents.document(self) == documents.document(other)

    __hash__ = None  # mutable

    def diff(self, other: JobGraph) -> list[str]:
        """What changed from this graph to ``other``, one short phrase per change; [] iff equal."""
        if not isinstance(other, JobGraph):
            raise FullWindowError(f"cannot diff a JobGraph with a {type(other).__name__}; accepted: a JobGraph")
        return documents.diff(self, other)

    def __repr__(self) -> str:
        return (f"JobGraph(mode={self._mode!r}, chaining={self._chaining}, "
                f"operators={len(self._operators)}, edges={len(self._edges)})")

    # -- drawing ------------------------------------------------------------------------------------

    def to_dot(self) -> str:
        """Graphviz DOT at operator level: chains boxed, blocking edges dashed, regions coloured and numbered."""
        from .render import to_dot

        return to_dot(self)

    def to_svg(self) -> str:
        """The drawing as SVG, rendered by Graphviz's ``dot`` (which must be installed)."""
        from .render import to_svg

        return to_svg(self)

    def _repr_mimebundle_(self, include=None, exclude=None, **kwargs):
        from .render import mimebundle

        return mimebundle(self, include, exclude)
