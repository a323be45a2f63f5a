"""execute(): run a stream region by region, with failover, events and resume (FLIP-1, FLIP-383).

The job graph (batch mode) is cut into job vertices (chains of operators); every edge
between them is BLOCKING, so each job vertex's subtasks are pipelined regions of their
own. A job vertex runs as one Spark job over the subtasks still to do, each task writing
its committed result file; a consumer starts only after its producer's results and
finished events are durable. After a kernel or driver restart, the same call replays the
event log, keeps every finished subtask whose files are intact, and runs only the rest.

What a resume may keep is decided by two fingerprints recorded in the job's first event:
the graph's (operators, parallelism, edges: a change is refused in one line) and the
content's (``fw_magics.datastream.content``: the source's rows, plan or files, each
function's code and closure, keys, sort fields, aggregates, schemas). A content change
that touches only job vertices with nothing finished is simply run; one that would leave
stale finished results runs the job afresh when it was finished and ``resume="auto"``,
and is refused in one line otherwise (``docs/recovery.md``). That verdict is
``recovery.verdict``'s, the one ``start()`` asks too.
"""

from __future__ import annotations

import errno
import functools
import time
import warnings

from ... import hooks
from ...datastream.content import job_content
from ...datastream.job_graph import build_graph
from ...datastream.physical.arrow_calls import map_in_arrow
from ...errors import FullWindowError, Interrupted, JobLockedError, JobStorageError, did_you_mean, error_summary
from ...failover import (
    FailoverStrategy,
    RestartAllStrategy,
    RestartBackoffTimeStrategy,
    RestartPipelinedRegionStrategy,
    checked_backoff,
    restart_strategy,
    restartable,
)
from ...graph import JobGraph, subtask_inputs
from ...recovery import JobLock, decide_resume, events, replay, safe_job_path
from ...recovery.content import compare
from ...recovery.filesystem import UnsafeFile
from ...recovery.integrity import file_intact
from ...recovery.job_log import JobLog
from ...recovery.paths import EVENTS, RESULTS, default_job_dir, default_job_name, job_directory
from ...recovery.verdict import (
    AFRESH,
    EXECUTE,
    ThisJob,
    Verdict,
    nothing_to_resume,
    resume_mode,
    same_graph,
    same_job,
)
from ...spark import progress
from ...spark.actions import run_action
from ...spark.flavour import flavour_of
from ...values.schema import arrow_schema
from .job_result import JobResult
from .result_files import META_SCHEMA, committed, folder_in_the_way, read_results, write_partition
from .shared_dir import check_shared
from .vertices import SparkVertex, spark_vertices

FAILOVER_MODES = ("region", "full")
#: What the lock's first write fails with in a folder this process cannot write.
_CANNOT_WRITE = (errno.EROFS, errno.EACCES, errno.EPERM)


def execute(stream, job_dir=None, job_name=None, failover="region", restart=None, resume="auto") -> JobResult:
    """Run ``stream`` as a recoverable batch job; see the module docstring.

    Every option is checked before anything runs (one line each). In a job directory this
    process cannot write, a finished and unchanged job is read back without the lock
    (nothing runs, nothing is written); anything that would have to run is refused.
    """
    failover = _mode(failover, FAILOVER_MODES, "failover")
    resume = resume_mode(EXECUTE, resume)
    restart = restart_strategy(restart)
    job_dir = job_directory(default_job_dir() if job_dir is None else job_dir)
    graph = build_graph(stream)
    if job_name is None:
        job_name = default_job_name(stream.name, graph.fingerprint())
    log = JobLog(safe_job_path(job_dir, job_name), job_name)
    run = _Run(stream, graph, log, failover, restart)
    try:
        log.acquire()  # %fw_recover finds it again after a restart, wherever it ran
    except OSError as error:
        if error.errno not in _CANNOT_WRITE or not log.storage.local:
            raise
        return run.read_back(resume, error)
    try:
        check_shared(stream.spark, log.root)  # on a cluster: before anything is written or run
        result = run.execute(resume)
    except BaseException as error:
        log.close(failure=error)  # a lost lock or a storage error only warns: the job's own error says more
        raise
    log.close()
    return result


def _mode(value, accepted: tuple, what: str) -> str:
    if not isinstance(value, str) or value not in accepted:
        hint = did_you_mean(value, accepted) if isinstance(value, str) else ""
        raise FullWindowError(f"unknown {what} {value!r:.60}{hint}; accepted: {', '.join(accepted)}")
    return value


def _both(job_name: str, error: BaseException, storage: BaseException) -> str:
    """One line with both causes: the job's own failure and the job directory's."""
    cause = storage.__cause__ if storage.__cause__ is not None else storage
    return (f"job {job_name!r} failed: {error_summary(error, 300)}; and then writing its job events failed too: "
            f"{error_summary(cause, 300)}")



class _Run:
    def __init__(self, stream, graph: JobGraph, log: JobLog, failover: str, restart: RestartBackoffTimeStrategy):
        self.stream, self.graph, self.log = stream, graph, log
        self.root, self.job_name = log.root, log.job_name
        self.spark = stream.spark
        self.storage = log.storage
        self.vertices = spark_vertices(stream, graph)
        self.subtasks, self.inputs = subtask_inputs(graph)
        self.chain_of = {op: v for v in self.vertices for op in v.operators}
        self.strategy: FailoverStrategy = (
            RestartPipelinedRegionStrategy if failover == "region" else RestartAllStrategy)(graph)
        self.restart = restart
        self.store = log.store  # the live view follows a run by its store
        self.ran: set[tuple[str, int]] = set()
        self.regions_run: list[frozenset] = []
        self.attempts = 0  # Spark jobs run by this call (the sidecars' "attempt": what this call committed)
        self.subtask_attempts: dict[tuple[str, int], int] = {}  # each subtask's own attempts, over every run
        self.files: dict[tuple[str, int], dict] = {}
        self.content: dict | None = None
        self.afresh: str | None = None  # why the recorded run was set aside, when it was
        self.notes: list[str] = []

    @property
    def where(self) -> str:
        return f"job {self.job_name!r} in {self.root}"

    # -- the job ---------------------------------------------------------------------------

    def execute(self, resume: str) -> JobResult:
        previous = [] if resume == "never" else self.log.read()
        if resume == "never":
            self._clear()
        if resume in ("require", "repair") and not previous:
            raise nothing_to_resume(self.job_name, self.root)
        state = replay(previous) if previous else None
        self.subtask_attempts = dict(state.attempts_ended) if state is not None else {}
        self.content = job_content(self.stream)
        resubmit = False
        if state is not None:
            verdict = self._verdict(state, resume)
            if verdict.action == AFRESH:
                self.afresh = verdict.reason
                self._clear()
                state = None
            resubmit = verdict.resubmit
        todo = self._todo(state)
        recovered = {(v, i) for v in self.vertices for i in range(v.parallelism) if i not in todo.get(v.index, set())}
        self.log.begin()
        hooks.job_started(self, {(v.name, i) for v, i in recovered})
        try:
            if state is None or resubmit:
                self.log.submitted(self.graph, self.content)
            if state is None:
                for v in self.vertices:
                    self._emit(events.vertex_initialized(v.name, v.parallelism, v.inputs))
            else:
                for v in self.vertices:
                    for i in sorted(todo.get(v.index, ())):
                        if (v.name, i) in state.finished:
                            self._emit(events.subtask_reset(v.name, i, "result missing or corrupt"))
            self._run_all(todo)
            self.log.end(events.job_finished())
            self.log.flush()
        except KeyboardInterrupt as error:
            # A stop the user chose (Kernel > Interrupt, a Stop button): the job is cancelled,
            # not failed, and resumes like an interrupted one.
            self.log.cancelled(str(error) or "interrupted")
            if isinstance(error, Interrupted):
                raise
            raise Interrupted.cancelled(0) from None
        except BaseException as error:
            try:
                self.log.failed(error)
            except JobStorageError as storage:
                if not isinstance(error, JobStorageError):
                    raise JobStorageError(_both(self.job_name, error, storage)) from error
            raise
        sink = self.vertices[-1]
        return JobResult(
            stream=self.stream, graph=self.graph, root=self.root, job_name=self.job_name,
            sink=sink, vertices=self.vertices,
            ran={(op, i) for v, i in self.ran for op in self.vertices[v].operators},
            recovered={(op, i) for v, i in recovered for op in v.operators},
            regions_run=self.regions_run, attempts=self.attempts, afresh=self.afresh, notes=self.notes,
        )

    def _clear(self) -> None:
        """Set the recorded run aside: its results, then its event log."""
        self.log.clear(RESULTS, EVENTS)

    # -- what a resume may keep ------------------------------------------------------------------

    def _verdict(self, state, resume: str) -> Verdict:
        """Whether the recorded job is this one (``recovery.verdict.same_job``): its notes kept, its warnings
        given, a refusal raised."""
        verdict = same_job(state, ThisJob(EXECUTE, self.job_name, self.root, self.graph, self.content), resume)
        self.notes.extend(verdict.notes)
        for warning in verdict.warnings:
            warnings.warn(warning, stacklevel=4)
        return verdict.check()

    def read_back(self, resume: str, error: OSError) -> JobResult:
        """A finished, unchanged job's results from a folder this process cannot write, without the lock."""
        reason = error.strerror or str(error)
        if resume == "never":
            raise JobStorageError(f"{self.where} cannot start afresh: its folder cannot be written ({reason})")
        previous = self.log.read()
        if not previous:
            raise JobStorageError(f"{self.where}: nothing recorded to read back, and its folder cannot be written "
                                  f"({reason}); choose a writable job_dir")
        holder = JobLock(self.root).held_by()
        if holder is not None:
            raise JobLockedError(f"{self.where} is being run by pid {holder.get('pid')} on host "
                                 f"{holder.get('host')}; wait for it")
        state = replay(previous)
        same_graph(state, ThisJob(EXECUTE, self.job_name, self.root, self.graph), "auto").check()
        self.content = job_content(self.stream)
        comparison = compare(state.content, self.content)
        if comparison.changed:
            raise JobStorageError(f"{self.where} changed since its recorded run ({comparison.summary()}) and its "
                                  f"folder cannot be written ({reason}); run it with a writable job_dir")
        if comparison.unknown:
            self.notes.append("finished results kept without checking " + "; ".join(comparison.unknown[:3]))
        todo = self._todo(state)
        pending = sum(len(s) for s in todo.values())
        if pending:
            raise JobStorageError(f"{self.where} has {pending} subtasks still to run and its folder cannot be "
                                  f"written ({reason}); copy it to a writable job_dir to resume it")
        self.notes.append(f"read back without the lock: its folder cannot be written ({reason})")
        everything = {(op, i) for v in self.vertices for i in range(v.parallelism) for op in v.operators}
        return JobResult(
            stream=self.stream, graph=self.graph, root=self.root, job_name=self.job_name,
            sink=self.vertices[-1], vertices=self.vertices, ran=set(), recovered=everything,
            regions_run=[], attempts=0, notes=self.notes,
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
            files = state.finished[(name, i)].get("files") or []
            if files:  # a kept subtask without a file is one nothing reads again
                self.files[(name, i)] = files[0]
        return todo

    # -- scheduling and failover -----------------------------------------------------------------

    def _run_all(self, todo: dict[int, set[int]]) -> None:
        while any(todo.values()):
            index = min(i for i, pending in todo.items() if pending)
            vertex = self.vertices[index]
            pending = todo.pop(index)
            self._results_folder(vertex, pending)
            try:
                self._run_vertex(vertex, pending)
            except KeyboardInterrupt:
                self._collect_committed(vertex, pending)  # what finished before the stop stays finished
                raise
            except Exception as error:
                try:
                    self._fail_over(vertex, pending, error, todo)
                except JobStorageError as storage:
                    if isinstance(error, JobStorageError):
                        raise
                    raise JobStorageError(_both(self.job_name, error, storage)) from error

    def _results_folder(self, vertex: SparkVertex, pending: set[int]) -> None:
        """Make ``results/<vertex>`` before its tasks write there; a link or a file in the way, or
        a folder where a subtask's result goes (a damaged or hostile job directory), is one line,
        not a task failure retried to exhaustion."""
        if not self.storage.local:
            return
        try:
            self.storage.make_folders(self.storage.path(RESULTS, vertex.name))
        except UnsafeFile as error:
            raise JobStorageError(f"{self.where}: {error}") from None
        problem = folder_in_the_way(self.storage, vertex.name, pending)
        if problem is not None:
            raise JobStorageError(f"{self.where}: {problem}")

    def _fail_over(self, vertex: SparkVertex, pending: set[int], error: Exception, todo: dict) -> None:
        """Record a failed job vertex and schedule what restarts, or re-raise ``error`` when no restart is left."""
        done = self._collect_committed(vertex, pending)
        failed = pending - done
        restart = self._tasks_to_restart(vertex, failed)
        self.restart.notify_failure()
        region = sorted(f"{vertex.name}[{i}]" for i in failed)
        attempt = max((self.subtask_attempts.get((vertex.name, i), 1) for i in failed), default=1)
        self._emit(events.region_failed(vertex.name, region, error_summary(error), attempt))
        if not restartable(error) or not self.restart.can_restart():
            self.store.flush()
            raise error
        time.sleep(checked_backoff(self.restart, error))
        for (name, i) in sorted(restart):
            v = next(x for x in self.vertices if x.name == name)
            todo.setdefault(v.index, set()).add(i)
            self.files.pop((name, i), None)
            self._emit(events.subtask_reset(name, i, "restarted by failover"))
        self._emit(events.region_restarted(vertex.name, sorted(f"{n}[{i}]" for n, i in restart), attempt))

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
        for i in pending:
            self.subtask_attempts[(vertex.name, i)] = self.subtask_attempts.get((vertex.name, i), 0) + 1
        frame, schema = self._output_frame(vertex, pending)
        only = None if pending == set(range(vertex.parallelism)) else frozenset(pending)
        write = functools.partial(write_partition, self.root, vertex.name, self.attempts, only, arrow_schema(schema))
        hooks.vertex_started(vertex, pending, self.attempts)
        self.regions_run.extend(frozenset((op, i) for op in vertex.operators) for i in sorted(pending))
        with progress.reporting(frame.sparkSession, vertex.name):
            rows = run_action(lambda: map_in_arrow(frame, write, META_SCHEMA).collect(), self.spark)
        for row in rows:
            self._finished(vertex, row.asDict())
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
        attempt = self.subtask_attempts.get((vertex.name, subtask), 1)  # this subtask's own attempt
        self._emit(events.subtask_finished(
            vertex.name, subtask, attempt, records_in=None, records_out=meta["records"],
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
            needed: set[int] = set()
            for span in {span for i in pending for _, span in self.inputs.ranges((vertex.name, i))}:
                needed.update(span)  # each distinct range once: an all-to-all edge is not expanded
            paths = [self.files[(up.name, i)]["path"] if i in needed else None for i in range(up.parallelism)]
            # an all-to-all consumer hash-partitions what it reads: no need for one task per file
            tasks = _cores(self.spark) if vertex.pattern == "all_to_all" else None
            frame = read_results(self.spark, self.root, paths, up.steps[-1].detail["schema"], tasks)
            partitions = up.parallelism
        for step in steps:
            frame = step.transform(frame, functools.partial(int, partitions))
            partitions = step.parallelism or partitions
        return frame, vertex.steps[-1].detail["schema"]

    def _emit(self, event: dict) -> None:
        self.log.emit(event)


def _cores(spark) -> int | None:
    """The cores Spark runs tasks on (its default parallelism), or None when it does not say."""
    return flavour_of(spark).cores(spark)
