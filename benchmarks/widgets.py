"""The job-graph widget on a 500-operator graph: Graphviz layout and widget build, a click
(the attributes panel) and a what-if (both restart sets). Pure Python; no Spark, no browser
(the browser side is exercised by tests/browser)."""

from __future__ import annotations

from benchmarks.timing import median_time
from fw_magics.graph import JobGraph, OperatorAttributes
from fw_magics.widgets import GraphView


def big_graph(n: int = 500) -> JobGraph:
    """A line of n operators of parallelism 2-4, every third emitting only at end of input."""
    g = JobGraph(mode="batch")
    for k in range(n):
        g.add_operator(f"op{k}", parallelism=2 + k % 3, kind=["map", "sort", "reduce"][k % 3],
                       attributes=OperatorAttributes(output_only_after_end_of_stream=k % 3 == 1))
        if k:
            g.connect(f"op{k - 1}", f"op{k}", pattern="all_to_all" if k % 5 == 0 else "pointwise")
    return g


def run(runs: int = 5) -> list[dict]:
    graph = big_graph()
    view = GraphView(graph, follow=False)
    note = f"{len(graph.operators)} operators, {len(graph.execution_vertices()):,} subtasks"
    return [
        {"case": "500-operator graph: layout and widget", "runs": runs, "note": note + ", Graphviz dot",
         "median_s": median_time(lambda: GraphView(big_graph(), follow=False), runs)},
        {"case": "500-operator graph: click (attributes)", "runs": runs, "note": "op250",
         "median_s": median_time(lambda: view._details_html("op250"), runs)},
        {"case": "500-operator graph: what-if", "runs": runs, "note": view.what_if("op250", 1).sentence(),
         "median_s": median_time(lambda: view.what_if("op250", 1), runs)},
    ]
