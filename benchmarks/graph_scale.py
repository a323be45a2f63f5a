"""Regions and restart sets for 100,000 execution vertices (pure Python, no Spark).

    python -m benchmarks.graph_scale [--runs N]

Each job shape has exactly 100,000 execution vertices. For each it times, as the median of
``runs`` repetitions (``benchmarks.timing``): computing the pipelined regions from scratch
(numbering, union-find, the cycle check or Tarjan, and the frozensets ``pipelined_regions()``
returns), and the region-failover restart set for one failed subtask (with, where the shape
has blocking inputs, one lost result to backtrack to) once the regions are known. The note
says how many tasks restart, out of the 100,000 restart-all would restart.
"""

from __future__ import annotations

import argparse

from benchmarks.timing import median_time
from fw_magics.failover import RestartAllStrategy, RestartPipelinedRegionStrategy
from fw_magics.graph import JobGraph, OperatorAttributes
from fw_magics.graph.regions import build_layout

ENDS_ONLY = OperatorAttributes(output_only_after_end_of_stream=True, internal_sorter_supported=True)


def _pipeline() -> tuple[JobGraph, tuple, tuple]:
    """4 x 25,000, pointwise, pipelined, not chainable: 25,000 small regions."""
    g = JobGraph(mode="streaming")
    for k, name in enumerate(("source", "map", "filter", "sink")):
        g.add_operator(name, 25_000, chainable=False)
        if k:
            g.connect(g.operators[k - 1].name, name)
    return g, ("filter", 12_345), ()


def _batch_shuffle() -> tuple[JobGraph, tuple, tuple]:
    """source -> sort (chained) => all-to-all blocking => aggregate -> sink (chained), 4 x 25,000."""
    g = JobGraph(mode="batch")
    g.add_operator("source", 25_000, kind="source")
    g.add_operator("sort", 25_000, ENDS_ONLY, kind="sort_partition")
    g.add_operator("aggregate", 25_000, ENDS_ONLY, kind="reduce")
    g.add_operator("sink", 25_000, kind="sink")
    g.connect("source", "sort")
    g.connect("sort", "aggregate", "all_to_all")
    g.connect("aggregate", "sink")
    return g, ("sink", 7), (("sort", 3),)


def _one_region() -> tuple[JobGraph, tuple, tuple]:
    """2 x 50,000 joined by a pipelined all-to-all exchange: one region of 100,000."""
    g = JobGraph(mode="streaming")
    g.add_operator("source", 50_000)
    g.add_operator("window", 50_000)
    g.connect("source", "window", "all_to_all")
    return g, ("window", 0), ()


def _rescale() -> tuple[JobGraph, tuple, tuple]:
    """1,000 => pointwise blocking => 99,000: each producer feeds a contiguous range of 99."""
    g = JobGraph(mode="batch")
    g.add_operator("source", 1_000)
    g.add_operator("expand", 99_000)
    g.connect("source", "expand")
    return g, ("expand", 50_000), (("source", 505),)


def _cyclic() -> tuple[JobGraph, tuple, tuple]:
    """a => b => d blocking beside a -> c -> d pipelined, 4 x 25,000: every subtask's regions form a cycle."""
    g = JobGraph(mode="streaming", chaining=False)
    for name in "abcd":
        g.add_operator(name, 25_000)
    g.connect("a", "b", result="blocking")
    g.connect("a", "c")
    g.connect("b", "d", result="blocking")
    g.connect("c", "d")
    return g, ("d", 99), ()


def _deep() -> tuple[JobGraph, tuple, tuple]:
    """100 operators x 1,000, streaming; every 10th operator emits only at end of input."""
    g = JobGraph(mode="streaming")
    for k in range(100):
        g.add_operator(f"op{k}", 1_000, ENDS_ONLY if k % 10 == 9 else None)
        if k:
            g.connect(f"op{k - 1}", f"op{k}", "all_to_all" if k % 10 == 0 else "pointwise")
    return g, ("op55", 3), (("op49", 10),)


SHAPES = {
    "pointwise pipeline 4 x 25,000": _pipeline,
    "batch shuffle 4 x 25,000": _batch_shuffle,
    "one all-to-all region 2 x 50,000": _one_region,
    "rescale 1,000 => 99,000": _rescale,
    "cyclic regions merged 4 x 25,000": _cyclic,
    "deep 100 x 1,000": _deep,
}


def run(runs: int = 5) -> list[dict]:
    """One row per measurement: {"case", "median_s", "runs", "note"}."""
    rows = []
    for label, make in SHAPES.items():
        graph, failed, lost = make()
        vertices = graph.execution_vertices()
        regions = len(graph.pipelined_regions())
        rows.append({"case": f"{label}: regions", "runs": runs,
                     "median_s": median_time(lambda: build_layout(graph).region_sets(vertices), runs),
                     "note": f"{len(vertices):,} vertices, {_plural(regions, 'region')}"})
        strategy = RestartPipelinedRegionStrategy(graph)
        tasks = strategy.tasks_to_restart(failed, lost)
        everything = RestartAllStrategy(graph).tasks_to_restart(failed, lost)
        rows.append({
            "case": f"{label}: restart set", "runs": runs,
            "median_s": median_time(lambda: strategy.tasks_to_restart(failed, lost), runs),
            "note": (f"{failed[0]}[{failed[1]}] fails{', ' + str(len(lost)) + ' lost result' if lost else ''}: "
                     f"{len(tasks):,} of {len(everything):,} tasks restart"),
        })
    return rows


def _plural(n: int, word: str) -> str:
    return f"{n:,} {word}{'' if n == 1 else 's'}"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--runs", type=int, default=5)
    rows = run(parser.parse_args().runs)
    print("| case | median | runs | note |")
    print("|---|---|---|---|")
    for row in rows:
        print(f"| {row['case']} | {row['median_s'] * 1000:.2f} ms | {row['runs']} | {row['note']} |")


if __name__ == "__main__":
    main()
