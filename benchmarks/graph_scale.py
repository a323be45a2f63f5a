"""Regions and restart sets for 100,000+ execution vertices (pure Python, no Spark)."""

from __future__ import annotations

from fw_magics.failover import RestartAllStrategy, RestartPipelinedRegionStrategy
from fw_magics.graph import JobGraph, OperatorAttributes

from .timing import median_time


def _shapes():
    wide = JobGraph(mode="batch")  # source -> sort (chained) -> keyed aggregate: 150,000 vertices
    wide.add_operator("source", 50_000)
    wide.add_operator("sort", 50_000, OperatorAttributes(True, True))
    wide.add_operator("aggregate", 50_000, OperatorAttributes(True, True))
    wide.connect("source", "sort")
    wide.connect("sort", "aggregate", "all_to_all")
    yield "3 operators x 50,000 (pointwise chain + blocking all-to-all)", wide, ("source", 7)

    deep = JobGraph(mode="streaming")  # 100 operators x 1,000, pipelined all-to-all every 10
    for i in range(100):
        deep.add_operator(f"op{i}", 1_000, OperatorAttributes(i % 10 == 9))
        if i:
            deep.connect(f"op{i - 1}", f"op{i}", "all_to_all" if i % 10 == 0 else "pointwise")
    yield "100 operators x 1,000 (streaming, blocking every 10th)", deep, ("op50", 3)


def run(runs: int = 5) -> list[dict]:
    results = []
    for label, graph, failed in _shapes():
        vertices = len(graph.execution_vertices())

        def regions():
            graph._cache.clear()
            return graph.pipelined_regions()

        results.append({"case": f"regions: {label}", "median_s": median_time(regions, runs), "runs": runs,
                        "note": f"{vertices:,} execution vertices, {len(regions()):,} regions"})
        strategy = RestartPipelinedRegionStrategy(graph)
        restart = strategy.tasks_to_restart(failed)
        results.append({"case": f"region restart set: {label}", "runs": runs,
                        "median_s": median_time(lambda: strategy.tasks_to_restart(failed), runs),
                        "note": f"{len(restart):,} of {vertices:,} tasks restart "
                                f"(restart-all: {len(RestartAllStrategy(graph).tasks_to_restart(failed)):,})"})
    return results


if __name__ == "__main__":
    for row in run():
        print(f"{row['case']}: {row['median_s'] * 1000:.1f} ms ({row['note']})")
