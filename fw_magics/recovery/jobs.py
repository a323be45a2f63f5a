"""The jobs in a job directory, as their event logs and result files tell them. No Spark."""

from __future__ import annotations

import functools
import re
from dataclasses import dataclass

from ..errors import JobLockedError
from ..graph import JobGraph, subtask_inputs
from .event_store import JobEventStore
from .filesystem import Storage
from .integrity import file_intact
from .lock import JobLock
from .replay import JobState, decide_resume, replay

SAVEPOINTS = "savepoints"  # a streaming job's savepoints (written by fw_magics.streaming.savepoint_files)
_SAVEPOINT = re.compile(r"savepoint-\d{6}")


@dataclass
class Job:
    name: str
    root: str
    events: list
    state: JobState
    holder: dict | None  # the live process running it, if any

    @property
    def status(self) -> str:
        """finished | failed | running | interrupted (the process died without a last word)."""
        if self.holder is not None:
            return "running"
        if self.state.status == "running":
            return "interrupted"
        return self.state.status

    @property
    def graph(self) -> JobGraph | None:
        return JobGraph.from_json(self.state.graph) if self.state.graph else None

    @property
    def cell(self) -> str | None:
        """The notebook cell that submitted the job, if it was submitted from one."""
        first = next((e for e in self.events if e["type"] == "job_submitted"), None)
        return None if first is None else first.get("cell")

    @property
    def savepoints(self) -> list[str]:
        """The job's complete savepoints (streaming jobs, FLIP-8), oldest first: paths of
        ``savepoints/savepoint-NNNNNN`` holding a ``savepoint.json`` (fw_magics.streaming.savepoint_files)."""
        storage = Storage(self.root)
        base = storage.path(SAVEPOINTS)
        if not storage.exists(base):
            return []
        names = sorted(n for n in storage.listdir(base) if _SAVEPOINT.fullmatch(n))
        return [storage.path(SAVEPOINTS, n) for n in names if storage.exists(storage.path(SAVEPOINTS, n, "savepoint.json"))]

    def label(self) -> str:
        graph = self.graph
        total = sum(v.parallelism for v in graph.job_vertices()) if graph else 0
        text = f"{self.name}: {self.status}, {len(self.state.finished)}/{total} subtasks finished"
        savepoints = self.savepoints
        if savepoints:
            latest = savepoints[-1].replace("\\", "/").rsplit("/", 1)[-1]
            text += f", {len(savepoints)} savepoint{'s' if len(savepoints) > 1 else ''} (latest {latest})"
        return text

    def subtasks(self) -> list[dict]:
        """One row per job-vertex subtask: what a resume would keep, what it would re-run, and why."""
        graph = self.graph
        if graph is None:
            return []
        storage = Storage(self.root)
        vertices, inputs = subtask_inputs(graph)
        decision = decide_resume(vertices, inputs, self.state, functools.partial(file_intact, storage))
        chains = {v.name: v.operators for v in graph.job_vertices()}
        rows = []
        for vertex, subtask in vertices:
            event = self.state.finished.get((vertex, subtask))
            files = [] if event is None else event.get("files", [])
            if (vertex, subtask) in decision.rerun:
                verdict = f"re-run: {decision.reasons[(vertex, subtask)]}"
            elif (vertex, subtask) in decision.problems:  # checked because a sink or a re-run reads it
                verdict = "keep: finished, result intact"
            else:
                present = all(storage.size(storage.path(*f["path"].split("/"))) is not None for f in files)
                verdict = "keep: finished, result not read again" + ("" if present else " (file missing)")
            rows.append({"vertex": vertex, "operators": " + ".join(chains[vertex]), "subtask": subtask,
                         "verdict": verdict, "files": ", ".join(f["path"] for f in files),
                         "records": None if event is None else event.get("records_out")})
        return rows


def read_job(root: str, name: str) -> Job:
    events = JobEventStore(Storage(root).path("events")).read_events()
    return Job(name=name, root=root, events=events, state=replay(events), holder=JobLock(root).held_by())


def list_jobs(job_dir: str) -> list[Job]:
    """Every job with an event log under ``job_dir``, by name."""
    storage = Storage(job_dir)
    jobs = []
    for name in sorted(storage.listdir(job_dir)):
        root = storage.path(name)
        if storage.exists(Storage(root).path("events")):
            jobs.append(read_job(root, name))
    return jobs


def discard(job: Job) -> None:
    """Delete a job's folder: its event log and results. Refused while a live process runs it."""
    holder = JobLock(job.root).held_by()
    if holder is not None:
        raise JobLockedError(f"job {job.name!r} is being run by pid {holder.get('pid')} on {holder.get('host')}; "
                           "not discarded")
    Storage(job.root).remove_tree(job.root)
