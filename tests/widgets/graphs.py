"""Graphs and event logs the widget tests share (pure Python, no Spark)."""

from __future__ import annotations

import hashlib
import os

from fw_magics.graph import JobGraph, OperatorAttributes
from fw_magics.recovery import JobEventStore, events
from fw_magics.recovery.filesystem import Storage


def four_operators() -> JobGraph:
    """source(3) -> sort(3) chained, keyed all-to-all to reduce(3), all-to-all to map(3); batch.

    Job vertices: v0 = source + sort, v1 = reduce, v2 = map; 12 execution vertices.
    """
    g = JobGraph(mode="batch")
    g.add_operator("source", 3, kind="source")
    g.add_operator("sort", 3, OperatorAttributes(output_only_after_end_of_stream=True, internal_sorter_supported=True),
                   kind="sort_partition")
    g.add_operator("reduce", 3, OperatorAttributes(output_only_after_end_of_stream=True), kind="reduce")
    g.add_operator("map", 3, kind="map_partition")
    g.connect("source", "sort")
    g.connect("sort", "reduce", "all_to_all")
    g.connect("reduce", "map", "all_to_all")
    return g


def finished(vertex: str, subtask: int, records: int = 10, files=(), attempt: int = 1) -> dict:
    return events.subtask_finished(vertex, subtask, attempt, records_in=None, records_out=records,
                                   bytes=100, duration=0.01, files=list(files))


def full_run(graph: JobGraph, job: str = "job") -> list[dict]:
    """The events of a clean run of ``graph`` (vertex by vertex, as the runtime writes them)."""
    log = [events.job_submitted(job, graph.to_json(), graph.fingerprint())]
    chains = graph.chains()
    for k, chain in enumerate(chains):
        log.append(events.vertex_initialized(f"v{k}", graph.operator(chain[-1]).parallelism,
                                             [] if k == 0 else [f"v{k - 1}"]))
    for k, chain in enumerate(chains):
        log += [finished(f"v{k}", i) for i in range(graph.operator(chain[-1]).parallelism)]
    log.append(events.job_finished())
    return log


def commit_file(root: str, vertex: str, subtask: int, data: bytes = b"arrow bytes") -> dict:
    """Write a result file under ``root`` and return the file record a subtask_finished event holds."""
    path = f"results/{vertex}/{subtask}.arrow"
    Storage(root).write_bytes(os.path.join(root, *path.split("/")), data)
    return {"path": path, "size": len(data), "sha256": hashlib.sha256(data).hexdigest()}


def write_log(root: str, log: list[dict]) -> None:
    """Write ``log`` as the job's event log in ``root`` (what the runtime's JobEventStore writes)."""
    store = JobEventStore(Storage(root).path("events"))
    store.start()
    for event in log:
        store.write_event(event)
    store.stop()
