"""The one answer to "is the job recorded here still this job?", for ``execute()`` and ``start()`` alike. No Spark.

When a verb opens a job whose log holds a run (``replay``'s ``JobState``), it describes what the
job is now (``ThisJob``) and asks ``same_job``; the answer is one ``Verdict``:

* ``keep``: go on from the recorded run, its finished results (``execute()``) or its state
  (``start()``); with ``resubmit`` when what the job is now is to be recorded (a graph re-derived by
  ``resume="repair"``, a job recorded by an older fw-magics without a content fingerprint), and
  with the ``notes`` and ``warnings`` of what was kept without checking;
* ``afresh``: set the recorded run aside and start again, with why (``execute()`` of a finished job
  whose content changed, under ``resume="auto"``);
* ``refuse``: a one-line ``ResumeError`` (``Verdict.check``) naming what differs and the way out.

Both verbs compare the same things in the same order: the graph (operators, parallelism, edges;
``JobGraph.diff``), then the content (each function's code and closure, the keys, the schemas:
``recovery.content``); a streaming job first its restore and its parallelism, and its mode and
source before its content (how a source differs is the connector's phrase, passed in). What a
content change means is where the two kinds of job differ: a batch job's finished results are stale
only where the change reaches (``affected_vertices``), while a streaming job's state was built by
all of its code, so any content change is refused.

The ways on are one vocabulary (``resume_mode``): ``resume="auto"`` goes on (or starts a job that
never ran), ``"never"`` starts afresh (``start()``'s ``reset=True`` is its alias), ``"require"``
refuses a job with nothing recorded, and ``"repair"`` (``execute()`` only) re-derives an unreadable
first record from the stream.
"""

from __future__ import annotations

from dataclasses import dataclass

from ..errors import FullWindowError, ResumeError, did_you_mean
from ..graph import JobGraph
from .content import affected_vertices, compare
from .replay import JobState

EXECUTE, START = "execute", "start"
KEEP, AFRESH, REFUSE = "keep", "afresh", "refuse"

#: The values of ``resume=``, each verb's own: start() has no record to repair (its graph is the stream's).
RESUME = {EXECUTE: ("auto", "never", "require", "repair"), START: ("auto", "never", "require")}

#: Each verb's way out of a refusal that starting afresh answers.
WAY_OUT = {
    EXECUTE: "run with resume='never' to start afresh",
    START: "start it under another job_name, or with reset=True to discard what it recorded and start afresh",
}


def resume_mode(verb: str, resume, reset=False) -> str:
    """``resume`` checked for ``verb`` (one line otherwise); ``reset=True`` (start()'s) is ``resume="never"``."""
    accepted = RESUME[verb]
    if isinstance(resume, str) and resume not in accepted and resume in RESUME[EXECUTE]:
        raise FullWindowError(f"resume {resume!r} is execute()'s alone (it re-derives an unreadable first record); "
                              f"accepted: {', '.join(accepted)}")
    if not isinstance(resume, str) or resume not in accepted:
        hint = did_you_mean(resume, accepted) if isinstance(resume, str) else ""
        raise FullWindowError(f"unknown resume {resume!r:.60}{hint}; accepted: {', '.join(accepted)}")
    if not isinstance(reset, bool):
        raise FullWindowError(f"reset {reset!r:.60}; accepted: False, or True to discard what the job recorded "
                              "(never its savepoints) and start afresh")
    if reset and resume not in ("auto", "never"):
        raise FullWindowError(f"reset=True is resume='never' (start afresh), and resume is {resume!r}; "
                              "accepted: one of the two")
    return "never" if reset else resume


def nothing_to_resume(name: str, root: str) -> ResumeError:
    """``resume="require"`` of a job with no event log."""
    return ResumeError(f"nothing to resume for job {name!r} in {root}: no event log; "
                       "run with resume='auto' to start it")


@dataclass(frozen=True)
class ThisJob:
    """What a job is now, as the verb asking the verdict describes it."""

    verb: str  # EXECUTE or START
    name: str
    root: str
    graph: JobGraph
    content: dict | None = None  # recovery.content's fingerprint of what its results depend on
    # start()'s own:
    mode: str | None = None  # the mode it runs in
    source_change: str | None = None  # how its source differs from the one recorded, if it does
    parallelism: int | None = None  # the parallelism start() was given, if one was
    restoring: str | None = None  # the savepoint start() restores it from, if one

    @property
    def where(self) -> str:
        return f"job {self.name!r} in {self.root}"


@dataclass(frozen=True)
class Verdict:
    """The answer to "is the recorded job this job?" (see the module docstring)."""

    action: str  # KEEP, AFRESH or REFUSE
    reason: str | None = None  # AFRESH: why; REFUSE: what differs
    way_out: str | None = None  # REFUSE: how to go on
    resubmit: bool = False  # KEEP: record what the job is now
    notes: tuple = ()  # what the run's result says of the recorded run it kept
    warnings: tuple = ()  # what was kept without checking, one line each

    @property
    def line(self) -> str:
        """A refusal as its one line."""
        return f"{self.reason}; {self.way_out}"

    def check(self) -> Verdict:
        """Raise a refusal as a ``ResumeError``; else this verdict."""
        if self.action == REFUSE:
            raise ResumeError(self.line)
        return self


def refuse(reason: str, way_out: str) -> Verdict:
    return Verdict(REFUSE, reason, way_out)


def same_job(state: JobState, job: ThisJob, resume: str = "auto") -> Verdict:
    """Whether the job ``state`` recorded is ``job``, and what its verb is to do (see the module docstring)."""
    if job.verb == START:
        first = _restore_and_parallelism(state, job)
        if first is not None:
            return first
    graph = same_graph(state, job, resume)
    if graph.action != KEEP:
        return graph
    if job.verb == START:
        return _stream_content(state, job)
    return _batch_content(state, job, resume, graph)


def same_graph(state: JobState, job: ThisJob, resume: str = "auto") -> Verdict:
    """The recorded graph against ``job.graph``: keep, or (``resume="repair"`` of an unreadable record that
    the surviving records fit) keep and record it anew, or refuse."""
    unreadable = None
    if state.graph is None:
        unreadable = "the job's first record is unreadable"
    else:
        try:
            recorded = JobGraph.from_json(state.graph)
        except FullWindowError as error:
            unreadable = f"the job's first record is unreadable (its graph: {error})"
    if unreadable is not None:
        if job.verb == START:
            return refuse(f"{job.where}: {unreadable}", WAY_OUT[START])
        wrong = misfit(state, job.graph)
        count = len(state.timeline)
        if resume == "repair" and wrong is None:
            return Verdict(KEEP, resubmit=True,
                           notes=(f"repaired: the graph was re-derived from this stream ({count} records kept)",))
        if wrong is None:
            hint = (f"this stream's graph fits the {count} surviving records: run with resume='repair' to "
                    "re-derive the graph from it and keep the finished work, or resume='never' to start afresh")
        else:
            hint = (f"this stream's graph does not fit the surviving records ({wrong}): run with "
                    "resume='never' to start afresh")
        return refuse(f"{job.where}: {unreadable}", hint)
    changes = recorded.diff(job.graph)
    if changes:
        return refuse(f"{job.where} was recorded for a different graph ({'; '.join(changes)})", WAY_OUT[job.verb])
    return Verdict(KEEP)


def misfit(state: JobState, graph: JobGraph) -> str | None:
    """Why the records that survive do not fit ``graph``'s job vertices, or None when they all do."""
    vertices = {v.name: v for v in graph.job_vertices()}
    for name, parallelism in state.parallelism.items():
        v, inputs = vertices.get(name), state.inputs[name]
        if v is None:
            return f"it has no job vertex {name!r:.40}"
        if v.parallelism != parallelism or list(v.inputs) != inputs:
            return (f"{name} was recorded with parallelism {parallelism} reading "
                    f"{inputs!r:.60}; this stream's has {v.parallelism} reading {list(v.inputs)}")
    for name, subtask in state.named:
        v = vertices.get(name)
        if v is None or subtask >= v.parallelism:
            return f"it has no subtask {name!r:.40}[{subtask}]"
    return None


def _restore_and_parallelism(state: JobState, job: ThisJob) -> Verdict | None:
    """A streaming job's first questions: a restore into a job that ran, a parallelism other than its own."""
    if job.restoring is not None and state.restored_from != job.restoring:
        return refuse(f"{job.where} already ran", "restore a savepoint under a new job_name (a restore starts a new job)")
    recorded = state.stream_parallelism
    if recorded is not None and job.parallelism is not None and job.parallelism != recorded:
        return refuse(f"job {job.name!r} runs at parallelism {recorded}",
                      "a restart keeps its checkpoint's state partitions (Spark ignores a new "
                      "spark.sql.shuffle.partitions): take p = job.savepoint() and start(..., from_savepoint=p, "
                      f"parallelism={job.parallelism}) under a new job_name")
    return None


def _stream_content(state: JobState, job: ThisJob) -> Verdict:
    """A streaming job's mode, source and content: its state was built by all of them."""
    if state.mode != job.mode:
        return refuse(f"{job.where} was started in mode {state.mode!r}, not {job.mode!r}",
                      f"start it with mode={state.mode!r}, or under another job_name")
    if job.source_change is not None:
        return refuse(f"{job.where} was recorded for another source: {job.source_change}", WAY_OUT[START])
    comparison = compare(state.content, job.content)
    if comparison.changed:
        return refuse(f"{job.where} changed since it was recorded ({comparison.summary()}): its state was built by "
                      "the code it had then", WAY_OUT[START])
    unchecked = comparison.unknown and state.content is not None
    return Verdict(KEEP, resubmit=state.content is None,  # recorded by an older fw-magics: from now on, with it
                   warnings=(f"{job.where}: resumed without checking " + "; ".join(comparison.unknown[:3]),)
                   if unchecked else ())


def _batch_content(state: JobState, job: ThisJob, resume: str, graph: Verdict) -> Verdict:
    """A batch job's content: a change that leaves no finished result stale is simply run; one that does
    runs a finished job afresh under ``resume="auto"``, and is refused otherwise."""
    recorded = None if graph.resubmit else state.content  # a repaired record has no content fingerprint
    comparison = compare(recorded, job.content)
    notes, warnings = graph.notes, ()
    if comparison.unknown and state.finished:
        note = "finished results kept without checking " + "; ".join(comparison.unknown[:3])
        notes, warnings = (*notes, note), (f"{job.where}: {note}",)
    if not comparison.changed:
        return Verdict(KEEP, resubmit=graph.resubmit or recorded != job.content, notes=notes, warnings=warnings)
    affected = affected_vertices(job.graph, comparison.operators)
    stale = [key for key in state.finished if key[0] in affected]
    if not stale:  # the changed vertices have not finished anything: they run anyway
        return Verdict(KEEP, resubmit=True, notes=notes, warnings=warnings)
    what = comparison.summary()
    complete = all((v.name, i) in state.finished for v in job.graph.job_vertices() for i in range(v.parallelism))
    if complete and resume == "auto":
        return Verdict(AFRESH, f"{what} changed since the recorded run", notes=notes, warnings=warnings)
    way_out = ("run with resume='auto' or 'never' to run it afresh" if complete else
               "run with resume='never' to start afresh, or undo the change to resume it")
    return Verdict(REFUSE, f"{job.where} changed since its recorded run ({what}): {len(stale)} of its finished "
                           "subtasks would be stale", way_out, notes=notes, warnings=warnings)
