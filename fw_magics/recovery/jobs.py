"""The jobs in a job directory, as their event logs and result files tell them. No Spark.

A job directory is untrusted input: a job whose folder is a link, whose event log cannot
be read, whose first record (the graph) is lost or does not parse is listed as *damaged*
with the reason, and the other jobs are shown as usual. Nothing here raises for what a
folder holds.
"""

from __future__ import annotations

import functools
import os
import stat
from dataclasses import dataclass

from ..errors import FwMagicsError, JobLockedError, error_summary
from ..graph import JobGraph, subtask_inputs
from .event_store import JobEventStore
from .filesystem import Storage, relative_parts
from .integrity import file_intact
from .lock import JobLock
from .replay import JobState, decide_resume, replay

STATUSES = ("finished", "failed", "running", "interrupted", "damaged")


@dataclass
class Job:
    name: str
    root: str
    events: list
    state: JobState
    holder: dict | None  # the live process running it, if any
    damage: str | None = None  # why the job cannot be read (its folder or log), if it cannot
    skipped: int = 0  # records (and files) of its event log skipped as torn, corrupt or malformed

    @functools.cached_property
    def _graph(self) -> tuple[JobGraph | None, str | None]:
        if self.damage is not None:
            return None, self.damage
        if self.state.graph is None:
            if not self.events:
                return None, "its event log holds no readable event"
            return None, "its first record (job_submitted, with the graph) is unreadable"
        try:
            return JobGraph.from_json(self.state.graph), None
        except FwMagicsError as error:
            return None, f"its recorded graph is unreadable ({error})"

    @property
    def graph(self) -> JobGraph | None:
        """The recorded job graph, or None when it cannot be read (see ``problem``)."""
        return self._graph[0]

    @property
    def problem(self) -> str | None:
        """Why the job is damaged (its folder, its log or its graph cannot be read), or None."""
        return self._graph[1]

    @property
    def status(self) -> str:
        """finished | failed | running | interrupted (the process died without a last word) | damaged."""
        if self.holder is not None:
            return "running"
        if self.problem is not None:
            return "damaged"
        if self.state.status == "running":
            return "interrupted"
        return self.state.status

    @property
    def cell(self) -> str | None:
        """The notebook cell that submitted the job, if it was submitted from one."""
        first = next((e for e in self.events if e["type"] == "job_submitted"), None)
        return None if first is None else first.get("cell")

    def label(self) -> str:
        graph = self.graph
        if graph is None:
            return f"{self.name}: damaged ({self.problem})"
        total = sum(v.parallelism for v in graph.job_vertices())
        skipped = f", {self.skipped} bad record{'s' if self.skipped != 1 else ''} skipped" if self.skipped else ""
        return f"{self.name}: {self.status}, {len(self.state.finished)}/{total} subtasks finished{skipped}"

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
                present = all(_present(storage, f["path"]) for f in files)
                verdict = "keep: finished, result not read again" + ("" if present else " (file missing)")
            rows.append({"vertex": vertex, "operators": " + ".join(chains[vertex]), "subtask": subtask,
                         "verdict": verdict, "files": ", ".join(f["path"] for f in files),
                         "records": None if event is None else event.get("records_out")})
        return rows


def _present(storage: Storage, path: str) -> bool:
    try:
        return storage.size_inside(path) is not None
    except OSError:
        return False


def _folder_problem(root: str) -> str | None:
    """Why a local job folder is not read (a link, not a folder), or None."""
    storage = Storage(root)
    if not storage.local:
        return None
    try:
        mode = os.lstat(storage.base).st_mode
    except FileNotFoundError:
        return None
    except OSError as error:
        return f"its folder cannot be read ({error.strerror or error})"
    if stat.S_ISLNK(mode):
        return "its folder is a symbolic link (fw-magics never follows links in a job directory)"
    if not stat.S_ISDIR(mode):
        return "it is not a folder"
    return None


def read_job(root: str, name: str) -> Job:
    """The job in the folder ``root``: its events replayed, its lock's holder; damaged rather than an error."""
    damage = _folder_problem(root)
    events: list = []
    skipped = 0
    if damage is None:
        store = JobEventStore(Storage(root).path("events"))
        try:
            events = store.read_events()
        except (OSError, ValueError) as error:
            damage = f"its event log cannot be read ({error_summary(error, 200)})"
        skipped = store.skipped
    holder = None
    if damage is None:
        try:
            holder = JobLock(root).held_by()
        except (OSError, ValueError, JobLockedError):
            holder = None
    return Job(name=name, root=root, events=events, state=replay(events), holder=holder, damage=damage,
               skipped=skipped)


def list_jobs(job_dir: str) -> list[Job]:
    """Every job with an event log under ``job_dir``, by name (damaged ones included, marked)."""
    storage = Storage(job_dir)
    jobs = []
    for name in sorted(storage.listdir(storage.base)):
        try:
            relative_parts(name)
        except ValueError:
            continue
        root = storage.path(name)
        if storage.local:
            try:
                mode = os.lstat(root).st_mode
            except OSError:
                continue
            if stat.S_ISLNK(mode):
                jobs.append(Job(name=name, root=root, events=[], state=JobState(), holder=None,
                                damage=_folder_problem(root)))
                continue
            if not stat.S_ISDIR(mode) or not _has_event_folder(root):
                continue
        elif not storage.exists(Storage(root).path("events")):
            continue
        jobs.append(read_job(root, name))
    return jobs


def _has_event_folder(root: str) -> bool:
    try:
        return os.path.lexists(os.path.join(root, "events"))
    except OSError:
        return False


def discard(job: Job) -> None:
    """Delete a job's folder: its event log and results. Refused while a live process runs it."""
    holder = JobLock(job.root).held_by() if job.damage is None else None
    if holder is not None:
        raise JobLockedError(f"job {job.name!r} is being run by pid {holder.get('pid')} on {holder.get('host')}; "
                           "not discarded")
    Storage(job.root).remove_tree(job.root)
