"""From a DataStream's lineage to its job graph (operators, FLIP-331 attributes, edges)."""

from __future__ import annotations

from ..graph import JobGraph, OperatorAttributes
from ..graph import model as graph_model
from .lineage import Step


def operator_names(steps: list[Step]) -> list[str]:
    """Unique, recognisable operator names ("sort_partition(price desc)", "reduce#2")."""
    names: list[str] = []
    seen: dict[str, int] = {}
    for step in steps:
        count = seen.get(step.name, 0) + 1
        seen[step.name] = count
        names.append(step.name if count == 1 else f"{step.name}#{count}")
    return names


def build_graph(stream, mode: str = "batch") -> JobGraph:
    """The job graph of a stream: sources, full-window operators and keyed (all-to-all) edges."""
    steps = stream.step.lineage()
    parallelism = _parallelisms(stream, steps)
    graph = JobGraph(mode=mode, chaining=True)
    names = operator_names(steps)
    for step, name, p in zip(steps, names, parallelism):
        graph.add_operator(
            name, parallelism=p, kind=step.kind, chainable=True,
            attributes=OperatorAttributes(
                output_only_after_end_of_stream=step.output_only_after_end_of_stream,
                internal_sorter_supported=step.internal_sorter_supported,
            ),
        )
    for (parent, child), (src, dst) in zip(zip(steps, steps[1:]), zip(names, names[1:])):
        graph.connect(src, dst, pattern="all_to_all" if child.keyed_by else "pointwise")
    return graph


SINK = "changelog"


def build_streaming_graph(stateful) -> JobGraph:
    """A running keyed operator's job graph (streaming mode): source -> operator (all-to-all) -> sink
    (a two-input operator: both sources -> operator).

    The source gets the keyed operator's parallelism (the number of state partitions), so the
    graph and its fingerprint do not change as files arrive. The operator's chain with the
    changelog sink is job vertex v1, whose backlog subtasks the runtime records; the source's
    backlog status and the job's phase are notes (``JobGraph.annotate``) a running job adds.
    """
    source, step = stateful.source.step.lineage()[0], stateful.step
    graph = JobGraph(mode="streaming", chaining=True)
    n = stateful.parallelism
    sources = source.detail.get("input_names", [source.name])  # a two-input operator: one source per input
    for name in sources:
        graph.add_operator(name, parallelism=n, kind=graph_model.SOURCE)
    graph.add_operator(step.name, parallelism=n, kind=step.kind)
    graph.add_operator(SINK, parallelism=n, kind=graph_model.SINK)
    for name in sources:
        graph.connect(name, step.name, pattern="all_to_all")
    graph.connect(step.name, SINK, pattern="pointwise")
    return graph


def _parallelisms(stream, steps: list[Step]) -> list[int]:
    """Each step's parallelism; a DataFrame source of unknown layout is read from its plan when
    the plan fixes it, else counted once (one job)."""
    known = [s.parallelism for s in steps]
    if known[0] is None:
        source = steps[0]
        if "partitions" not in source.detail:
            counter = stream.derive(lambda: source.transform(None, None), source)
            source.detail["partitions"] = counter.num_partitions()  # the plan's count, else a job
        known[0] = source.detail["partitions"]
    out: list[int] = []
    for p in known:
        out.append(p if p is not None else out[-1])
    return out


def build_operator_graph(operator) -> JobGraph:
    """A non-keyed operator's job graph (streaming mode): source -> operator (forward) -> sink.

    All three run at the operator's parallelism: source subtask ``i`` reads the files it owns
    and hands their records to operator subtask ``i`` (pointwise), which keeps its own
    operator state; one job vertex, as they chain.
    """
    source, step = operator.source.step.lineage()[0], operator.step
    graph = JobGraph(mode="streaming", chaining=True)
    n = operator.parallelism
    graph.add_operator(source.name, parallelism=n, kind=graph_model.SOURCE)
    graph.add_operator(step.name, parallelism=n, kind=step.kind)
    graph.add_operator(SINK, parallelism=n, kind=graph_model.SINK)
    graph.connect(source.name, step.name, pattern="pointwise")
    graph.connect(step.name, SINK, pattern="pointwise")
    return graph
