"""``start()``: every option checked, the job's log opened, its plan decided once, and the job run.

A streaming job keeps its folder as ``execute()`` does (``recovery.JobLog``: the lock, the event
log, the per-user index that ``%fw_recover`` reads, the last word written once, an interruption
recorded when the process exits under it), and a restart keeps the same promises:

* what the job was recorded as must still be what it is: its graph (operators, parallelism),
  its mode, its source (folder, format, schema, event time, watermark delay) and its content
  fingerprint (each function's code and closure, the key, the schemas: ``datastream.content``),
  the verdict ``execute()`` asks too (``recovery.verdict.same_job``). A change is refused in one
  line that names it and says how to go on: under another ``job_name``, or ``start(..., reset=True)``
  (``resume="never"``, in ``execute()``'s words), which discards what the job recorded (its events,
  backlog results, checkpoint, changelog, manifest; never its savepoints) and starts afresh;
* a restart continues where the log says the job got to (``phases.resume_phase``).

Then the ``Plan`` (``plan.py``) is made: mode (FLIP-327's rule: a source made with ``backlog=False``
makes a mixed job a stream from the start, ``effective_mode``), trigger, sink, rate limit, parallelism, the
session's flavour, the handover of backlog state (``handover.choose``) and the restart strategy
(``failover.restart_strategy``, as ``execute()``'s), and the job runs.
"""

from __future__ import annotations

import os
import warnings

from ....connectors.registry import source_change, source_of
from ....datastream.content import job_content
from ....errors import FullWindowError
from ....failover import restart_strategy
from ....graph import JobGraph
from ....operators.co_process import BroadcastOperator
from ....operators.spec import KeyedOperatorSpec
from ....recovery import JobLog, events, replay, safe_job_path
from ....recovery.paths import STREAM_RECORDS, WATERMARK, default_job_dir, default_job_name, job_directory
from ....recovery.verdict import START, ThisJob, Verdict, nothing_to_resume, resume_mode, same_job
from ....spark.flavour import flavour_of
from ..keyed import handover as handovers
from ..keyed.query import STATE_STORE
from ..keyed.state_counts import StateCounts
from ..savepoints import graph_at
from ..savepoints.files import LONGEST, load_savepoint
from ..savepoints.restore import check_restorable, prepare_restore
from .backlog_run import Backlog
from .job import StreamingJob
from .operator_job import OperatorJob
from .phases import Mode, resume_phase
from .plan import Plan, Trigger, check_max_files, check_parallelism, settle_rounds
from .sink import check_sink


def start(stateful, job_dir=None, job_name=None, mode="mixed", sink=None, trigger=None,
          max_files_per_trigger=None, from_savepoint=None, parallelism=None, reset=False,
          restart=None, resume="auto", allow_non_restored_state=False) -> StreamingJob:
    """Start or continue the job of ``stateful`` (a StatefulStream or an OperatorStream); see their ``start``.
    ``resume``: execute()'s vocabulary (``recovery.verdict``), "auto", "never" (what ``reset=True`` asks)
    or "require". ``allow_non_restored_state``: a restore drops the savepoint's states its function no longer
    declares (Flink's flag), else refuses them."""
    mode = Mode.of(mode)
    parallelism = check_parallelism(parallelism)
    trigger = Trigger.of(trigger)
    max_files = check_max_files(max_files_per_trigger)
    check_sink(sink)
    restart = restart_strategy(restart)
    sink = os.fspath(sink) if isinstance(sink, os.PathLike) else sink
    resume = resume_mode(START, resume, reset)
    if from_savepoint is not None and not mode.has_stream:
        raise FullWindowError(f"from_savepoint restores a job that goes on as a stream, and mode {mode.value!r} has "
                              "no stream; accepted: mode 'mixed' (the default) or 'stream', whichever mode the "
                              "savepoint's job ran in")
    if type(allow_non_restored_state) is not bool:
        raise FullWindowError(f"allow_non_restored_state is {allow_non_restored_state!r:.40}; accepted: True or False")
    if allow_non_restored_state and from_savepoint is None:
        raise FullWindowError("allow_non_restored_state=True drops states a savepoint holds that the function no "
                              "longer declares; accepted only with from_savepoint=")
    savepoint = None if from_savepoint is None else load_savepoint(from_savepoint)
    source = source_of(stateful)
    mode, why = effective_mode(mode, source, stateful.spec)
    if max_files is not None and (uncapped := source.why_no_max_files()) is not None:
        raise FullWindowError(f"max_files_per_trigger {max_files} caps the files of a micro-batch; {uncapped} "
                              "(leave it None)")
    name = default_name(stateful) if job_name is None else job_name
    log = JobLog(safe_job_path(job_directory(default_job_dir() if job_dir is None else job_dir), name), name)
    content = job_content(stateful)
    log.acquire()
    try:
        if resume == "never":
            log.clear(*STREAM_RECORDS)
        elif resume == "require" and not log.read():
            raise nothing_to_resume(name, log.root)
        job = _open(stateful, source, log, content, mode, trigger, sink, max_files, parallelism, savepoint, restart,
                    why, allow_non_restored_state)
    except BaseException as error:
        log.close(failure=error)
        raise
    return job


def default_name(stateful) -> str:
    """``execute()``'s rule (``recovery.paths.default_job_name``) over the source, the operator and the
    stream's own graph (whatever ``parallelism`` start() is given): "orders-reduce-add-1a2b3c4d"."""
    step = stateful.source.step.lineage()[0]
    label = f"{step.detail.get('label', 'stream')}-{stateful.spec.kind.name}-{stateful.spec.label}"
    return default_job_name(label, stateful.job_graph().fingerprint())


def effective_mode(mode: Mode, source, spec=None) -> tuple[Mode, str | None]:
    """The mode the job runs in, and why when its sources or its function decided it: FLIP-327's rule, an
    operator with an input without a backlog (``backlog=False``) runs as a stream from the start; so does a
    keyed operator whose function keeps operator state (its stores live per micro-batch of a stream). Mode
    "batch" has nothing to run for either and is refused in one line."""
    if mode is Mode.STREAM:
        return mode, None
    lacking = source.without_backlog()
    if lacking:
        named = " and ".join(repr(n) for n in lacking)
        why = (f"{named} has no backlog (backlog=False): an operator with an input without a backlog runs as a "
               "stream from the start (FLIP-327)")
        refusal = f"{named} was made with backlog=False (it has none)"
    elif isinstance(spec, KeyedOperatorSpec) and spec.checkpointed:
        held = "a broadcast input's state" if isinstance(spec.function, BroadcastOperator) else "operator state"
        kept = f"{spec.label} keeps {held} (FLIP-8)"
        why = f"{kept}, kept per state partition and micro-batch: such a keyed operator runs as a stream from the start"
        refusal = f"{kept}, which lives in a stream's micro-batches"
    else:
        return mode, None
    if mode is Mode.BATCH:
        raise FullWindowError(f"mode 'batch' runs the backlog, and {refusal}; accepted: mode 'mixed' or 'stream' "
                              "(the job then runs as a stream from the start)")
    return Mode.STREAM, why


def _open(stateful, source, log: JobLog, content: dict, mode: Mode, trigger: Trigger, sink, max_files,
          parallelism, savepoint, restart, why: str | None = None, allow_non_restored_state: bool = False
          ) -> StreamingJob:
    state = replay(log.read())
    chosen = _parallelism(state, stateful, parallelism, savepoint)
    flavour = flavour_of(stateful.spark)
    if not state.started:
        _say_if_wide(chosen, flavour.cores(stateful.spark))
    graph = stateful.job_graph()
    if chosen != graph.operators[0].parallelism:
        graph = graph_at(graph, chosen)
    verdict = _same_job(log, state, graph, mode, source, content, parallelism, savepoint) if state.started else None
    kind = stateful.spec.kind
    restored = savepoint is not None or state.restored_from is not None
    plan = Plan(mode=mode, trigger=trigger, sink=sink, max_files=max_files, parallelism=chosen,
                handover=handovers.choose(mode, kind, restored, log.storage), flavour=flavour, restart=restart,
                why=why, settle=settle_rounds(source))
    job = (StreamingJob if kind.keyed else OperatorJob)(stateful, source, log, plan, graph)
    job.watermark, job.restored_from, job.recorded = state.watermark, state.restored_from, set(state.batches)
    job.skips_noted = set(state.skipped)
    for recorded in state.batches.values():  # started again: its first micro-batch is watched (stall.py) from
        job.stall.completed(recorded.get("duration_ms"))  # the longest its earlier runs logged
    if kind.keyed:
        job.state_counts = StateCounts.resume(log.storage, state, chosen, restored)
    if mode.has_backlog:
        job.backlog = Backlog(job, state.finished_of(job.vertex), state.attempts)
        if state.state_writes is not None:
            job.backlog.state_writes = state.state_writes
    changed: list = []
    if state.started:  # what a restart reads back, read now: a planted file is one line here, not a Spark trace
        if source.manifest(log.root).exists():
            source.manifest(log.root).read()
        if job.backlog is not None and log.storage.present_inside(WATERMARK):
            job.backlog.watermark()
        changed = source.relist(log.root)  # a file removed or fixed since: skipped; a table still readable
    job.spark.conf.set(*STATE_STORE)
    log.begin()
    run = state.runs + 1
    if not state.started and savepoint is not None:
        _restore(job, savepoint, content, run, allow_non_restored_state)
        state.switched = True
    elif not state.started:
        summary, changed = source.record(log.root, backlog=mode.has_backlog)
        log.submitted(graph, content)
        log.emit(events.stream_started(mode.value, run, source.describe(), chosen))
        if mode.has_backlog:
            log.emit(events.backlog_recorded(summary))
            state.backlog = summary
    else:
        if verdict.resubmit:  # recorded by an older fw-magics: from now on, with what the job is
            log.submitted(graph, content)
        log.emit(events.stream_started(mode.value, run, source.describe(), chosen))
    for entry in changed:
        log.emit(events.file_skipped(entry["name"], entry["skipped"]) if entry.get("skipped")
                 else events.file_relisted(entry["name"], entry["size"]))
    if job.backlog is not None:
        job.backlog.recorded = state.backlog
    phase = resume_phase(state, mode)
    log.flush()
    job.run(phase)
    return job


def _parallelism(state, stateful, parallelism: int | None, savepoint) -> int:
    """The job's parallelism: the recorded one on a restart (another one is refused, ``_same_job``: Spark would
    keep the checkpoint's partitions without a word), else ``parallelism``, the savepoint's, or the stream's."""
    recorded = state.stream_parallelism if state.started else None
    restored = savepoint.parallelism if savepoint is not None and not state.started else None
    return recorded or parallelism or restored or stateful.parallelism


#: A new job's parallelism above this many times Spark's cores gets a word (each state partition is a
#: task in every micro-batch and a file of the backlog).
WIDE = 8


def _say_if_wide(parallelism: int, cores: int | None) -> None:
    if cores and parallelism > WIDE * cores:
        warnings.warn(f"parallelism {parallelism} is {parallelism // cores}x the {cores} cores Spark runs on: every "
                      f"micro-batch runs {parallelism} tasks and the backlog commits {parallelism} files, so a smaller "
                      "one runs faster here; it is the job's for life (a savepoint restores it at another)",
                      stacklevel=4)


def _same_job(log: JobLog, state, graph: JobGraph, mode: Mode, source, content: dict, parallelism,
              savepoint) -> Verdict:
    """Refuse, in one line, a job whose recorded restore, parallelism, graph, mode, source or content differs
    (``recovery.verdict.same_job``, execute()'s verdict); what was kept without checking gets a warning."""
    this = ThisJob(START, log.job_name, log.root, graph, content, mode=mode.value, parallelism=parallelism,
                   source_change=source_change(state.source or {}, source.describe()),
                   restoring=None if savepoint is None else savepoint.path)
    verdict = same_job(state, this).check()
    for warning in verdict.warnings:
        warnings.warn(warning, stacklevel=4)
    return verdict


def _restore(job: StreamingJob, savepoint, content: dict, run: int, allow_non_restored_state: bool) -> None:
    """The first start of a job restored from ``savepoint``: its source, state (carried into the function as it
    is now, ``savepoints.upgrade``) and W, then the stream; the switch event names the states that changed."""
    upgrade, held = check_restorable(savepoint, job, allow_non_restored_state)
    detail = prepare_restore(savepoint, job, upgrade, held)
    job.watermark = savepoint.document["watermark"]  # checked when the savepoint was loaded
    job.restored_from = savepoint.path
    # its first micro-batch seeds the state as the saved job's first did: the guard's reference (stall.py)
    job.stall.completed(savepoint.document.get(LONGEST))
    job.log.submitted(job.graph, content)
    job.log.emit(events.stream_started(job.mode, run, job.source.describe(), job.parallelism))
    job.log.emit(events.switch(job.watermark, **detail))
