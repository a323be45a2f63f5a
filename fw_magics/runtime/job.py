"""execute(): run a stream region by region, with failover, events and resume (FLIP-1, FLIP-383).

The job graph (batch mode) is cut into job vertices (chains of operators); every edge
between them is BLOCKING, so each job vertex's subtasks are pipelined regions of their
own. A job vertex runs as one Spark job over the subtasks still to do, each task writing
its committed result file; a consumer starts only after its producer's results and
finished events are durable. After a kernel or driver restart, the same call replays the
event log, keeps every finished subtask whose files are intact, and runs only the rest.
"""

from __future__ import annotations

import functools
import os
import time

from ..errors import FullWindowError, ResumeError, error_summary
from ..failover import (
    FailoverStrategy,
    FixedDelayRestart,
    RestartAllStrategy,
    RestartBackoffTimeStrategy,
    RestartPipelinedRegionStrategy,
)
from ..graph import JobGraph, subtask_inputs
from ..recovery import JobEventStore, JobLock, decide_resume, events, replay, safe_job_path
from ..recovery.filesystem import Storage
from ..recovery.integrity import file_intact
from ..recovery.paths import RESULTS
from ..schema import arrow_schema
from ..streams.arrow_calls import map_in_arrow
from ..streams.job_graph import build_graph
from . import hooks, progress
from .job_result import JobResult
from .result_files import META_SCHEMA, committed, read_results, write_partition
from .shared_dir import check_shared
from .vertices import SparkVertex, spark_vertices

RESUME_MODES = ("auto", "never", "require")
FAILOVER_MODES = ("region", "full")


def default_job_dir() -> str:
    """``$FW_JOB_DIR``, else ``.fw-jobs`` in the working directory (next to the notebook)."""
    return os.environ.get("FW_JOB_DIR") or os.path.join(os.getcwd(), ".fw-jobs")


def execute(stream, job_dir=None, job_name=None, failover="region", restart=None, resume="auto") -> JobResult:
    """Run ``stream`` as a recoverable batch job; see the module docstring."""
    if failover not in FAILOVER_MODES:
        raise FullWindowError(f"unknown failover {failover!r}; accepted: {', '.join(FAILOVER_MODES)}")
    if resume not in RESUME_MODES:
        raise FullWindowError(f"unknown resume {resume!r}; accepted: {', '.join(RESUME_MODES)}")
    job_name = stream.name if job_name is None else job_name
    root = safe_job_path(_absolute(job_dir or default_job_dir()), job_name)
    graph = build_graph(stream)
    run = _Run(stream, graph, root, job_name, failover, restart or FixedDelayRestart())
    with JobLock(root):
        check_shared(stream.spark, root)  # on a cluster: before anything is written or run
        return run.execute(resume)


def _absolute(job_dir) -> str:
    """A relative local path made absolute here, on the driver: executors resolve paths
    against their own working directories, which are not the notebook's."""
    job_dir = os.fspath(job_dir)
    return job_dir if "://" in job_dir or job_dir.startswith("file:") else os.path.abspath(job_dir)


class _Run:
    def __init__(self, stream, graph: JobGraph, root: str, job_name: str, failover: str,
                 restart: RestartBackoffTimeStrategy):
        self.stream, self.graph, self.root, self.job_name = stream, graph, root, job_name
        self.spark = stream.spark
        self.storage = Storage(root)
        self.vertices = spark_vertices(stream, graph)
        self.subtasks, self.inputs = subtask_inputs(graph)
        self.chain_of = {op: v for v in self.vertices for op in v.operators}
        self.strategy: FailoverStrategy = (
            RestartPipelinedRegionStrategy if failover == "region" else RestartAllStrategy)(graph)
        self.restart = restart
        self.store = JobEventStore(self.storage.path("events"))
        self.ran: set[tuple[str, int]] = set()
        self.regions_run: list[frozenset] = []
        self.attempts = 0
        self.files: dict[tuple[str, int], dict] = {}

    # -- the job ---------------------------------------------------------------------------

    def execute(self, resume: str) -> JobResult:
        previous = [] if resume == "never" else self.store.read_events()
        if resume == "never":
            self.storage.remove_tree(self.storage.path(RESULTS))
            self.storage.remove_tree(self.storage.path("events"))
        if resume == "require" and not previous:
            raise ResumeError(
                f"nothing to resume for job {self.job_name!r} in {self.root}: no event log; "
                "run with resume='auto' to start it"
            )
        state = replay(previous) if previous else None
        if state is not None and state.fingerprint != self.graph.fingerprint():
            changes = JobGraph.from_json(state.graph).diff(self.graph) if state.graph else ["unknown graph"]
            raise ResumeError(
                f"job {self.job_name!r} in {self.root} was recorded for a different graph "
                f"({'; '.join(changes)}); run with resume='never' to start afresh"
            )
        todo = self._todo(state)
        recovered = {(v, i) for v in self.vertices for i in range(v.parallelism) if i not in todo.get(v.index, set())}
        self.store.start()
        hooks.job_started(self, {(v.name, i) for v, i in recovered})
        try:
            if state is None:
                self._emit(events.job_submitted(self.job_name, self.graph.to_json(), self.graph.fingerprint(),
                                                cell=_current_cell()))
                for v in self.vertices:
                    self._emit(events.vertex_initialized(v.name, v.parallelism, v.inputs))
            else:
                for v in self.vertices:
                    for i in sorted(todo.get(v.index, ())):
                        if (v.name, i) in state.finished:
                            self._emit(events.subtask_reset(v.name, i, "result missing or corrupt"))
            self._run_all(todo)
            self._emit(events.job_finished())
            self.store.flush()
        except BaseException as error:
            if not isinstance(error, KeyboardInterrupt):
                self._emit(events.job_failed(error_summary(error)))
            raise
        finally:
            self.store.stop()
        sink = self.vertices[-1]
        return JobResult(
            stream=self.stream, graph=self.graph, root=self.root, job_name=self.job_name,
            sink=sink, vertices=self.vertices,
            ran={(op, i) for v, i in self.ran for op in self.vertices[v].operators},
            recovered={(op, i) for v, i in recovered for op in v.operators},
            regions_run=self.regions_run, attempts=self.attempts,
        )

    def _todo(self, state) -> dict[int, set[int]]:
        """Which subtasks of which job vertex still have to run."""
        if state is None:
            return {v.index: set(range(v.parallelism)) for v in self.vertices}
        decision = decide_resume(self.subtasks, self.inputs, state, functools.partial(file_intact, self.storage))
        index = {v.name: v.index for v in self.vertices}
        todo: dict[int, set[int]] = {}
        for name, i in decision.rerun:
            todo.setdefault(index[name], set()).add(i)
        for name, i in decision.keep:
            self.files[(name, i)] = state.finished[(name, i)]["files"][0]
        return todo

    # -- scheduling and failover -----------------------------------------------------------------

    def _run_all(self, todo: dict[int, set[int]]) -> None:
        while any(todo.values()):
            index = min(i for i, pending in todo.items() if pending)
            vertex = self.vertices[index]
            pending = todo.pop(index)
            try:
                self._run_vertex(vertex, pending)
            except Exception as error:
                done = self._collect_committed(vertex, pending)
                failed = pending - done
                restart = self._tasks_to_restart(vertex, failed)
                self.restart.notify_failure()
                region = sorted(f"{vertex.name}[{i}]" for i in failed)
                self._emit(events.region_failed(vertex.name, region, error_summary(error), self.attempts))
                if not self.restart.can_restart():
                    self.store.flush()
                    raise
                time.sleep(self.restart.backoff)
                for (name, i) in sorted(restart):
                    v = next(x for x in self.vertices if x.name == name)
                    todo.setdefault(v.index, set()).add(i)
                    self.files.pop((name, i), None)
                    self._emit(events.subtask_reset(name, i, "restarted by failover"))
                self._emit(events.region_restarted(vertex.name, sorted(f"{n}[{i}]" for n, i in restart), self.attempts))

    def _tasks_to_restart(self, vertex: SparkVertex, failed: set[int]) -> set[tuple[str, int]]:
        """Chain subtasks to re-run, from the failover strategy's operator-level answer."""
        unavailable = []
        if vertex.upstream is not None:
            up = self.vertices[vertex.upstream]
            for i in range(up.parallelism):
                meta = self.files.get((up.name, i))
                if meta is None or file_intact(self.storage, meta) is not None:
                    unavailable.append((up.operators[-1], i))
        tasks: set[tuple[str, int]] = set()
        for i in failed or range(vertex.parallelism):
            tasks |= self.strategy.tasks_to_restart((vertex.operators[-1], i), unavailable=tuple(unavailable))
        return {(self.chain_of[op].name, i) for op, i in tasks}

    def _run_vertex(self, vertex: SparkVertex, pending: set[int]) -> None:
        self.attempts += 1
        frame, schema = self._output_frame(vertex, pending)
        only = None if pending == set(range(vertex.parallelism)) else frozenset(pending)
        write = functools.partial(write_partition, self.root, vertex.name, self.attempts, only, arrow_schema(schema))
        hooks.vertex_started(vertex, pending, self.attempts)
        self.regions_run.extend(frozenset((op, i) for op in vertex.operators) for i in sorted(pending))
        with progress.reporting(frame.sparkSession, vertex.name):
            rows = map_in_arrow(frame, write, META_SCHEMA).collect()
        for row in rows:
            self._finished(vertex, row.asDict() | {"attempt": self.attempts})
        missing = pending - {row.subtask for row in rows}
        if missing:  # a partition Spark did not produce (an empty input layout): nothing to write
            raise RuntimeError(f"job vertex {vertex.label} produced no result for subtasks {sorted(missing)}")
        self.store.flush()  # durable before any consumer starts

    def _collect_committed(self, vertex: SparkVertex, pending: set[int]) -> set[int]:
        """Subtasks of a failed Spark job that did commit their result in this attempt."""
        done = set()
        for subtask, meta in committed(self.storage, vertex.name).items():
            if subtask in pending and meta.get("attempt") == self.attempts:
                self._finished(vertex, meta)
                done.add(subtask)
        self.store.flush()
        return done

    def _finished(self, vertex: SparkVertex, meta: dict) -> None:
        subtask = int(meta["subtask"])
        record = {"path": meta["path"], "size": meta["size"], "sha256": meta["sha256"]}
        self.files[(vertex.name, subtask)] = record
        self.ran.add((vertex.index, subtask))
        self._emit(events.subtask_finished(
            vertex.name, subtask, meta["attempt"], records_in=None, records_out=meta["records"],
            bytes=meta["size"], duration=meta["duration"], files=[record],
        ))

    def _output_frame(self, vertex: SparkVertex, pending: set[int]):
        """The Spark DataFrame computing this job vertex's ``pending`` subtasks from its input.

        Only the producer results those subtasks read are read; the other input partitions
        are left empty (their subtasks' output is not written either).
        """
        steps = list(vertex.steps)
        if vertex.upstream is None:
            source = steps.pop(0)
            frame, partitions = source.transform(None, None), vertex.parallelism
        else:
            up = self.vertices[vertex.upstream]
            needed = {producer for i in pending for producer in self.inputs[(vertex.name, i)]}
            paths = [self.files[(up.name, i)]["path"] if (up.name, i) in needed else None
                     for i in range(up.parallelism)]
            frame = read_results(self.spark, self.root, paths, up.steps[-1].detail["schema"])
            partitions = up.parallelism
        for step in steps:
            frame = step.transform(frame, functools.partial(int, partitions))
            partitions = step.parallelism or partitions
        return frame, vertex.steps[-1].detail["schema"]

    def _emit(self, event: dict) -> None:
        self.store.write_event(event)
        hooks.event_written(self.store, event)


def _current_cell() -> str | None:
    """The source of the notebook cell running now, when inside IPython."""
    try:
        from IPython import get_ipython
    except ImportError:
        return None
    shell = get_ipython()
    history = shell.user_ns.get("_ih") if shell is not None else None
    return history[-1] if history else None

