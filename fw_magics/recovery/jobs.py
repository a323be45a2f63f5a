"""The jobs in a job directory, as their event logs and result files tell them. No Spark.

A job directory is untrusted input: a job whose folder is a link, whose event log cannot
be read, whose first record (the graph) is lost or does not parse is listed as *damaged*
with the reason, and the other jobs are shown as usual. Nothing here raises for what a
folder holds.
"""

from __future__ import annotations

import collections
import functools
import os
import re
import stat
import warnings
from dataclasses import dataclass

from ..errors import FwMagicsError, JobLockedError, error_summary
from ..graph import JobGraph, subtask_inputs
from ..graph.render import counted
from . import index
from .event_store import JobEventStore
from .filesystem import Storage, relative_parts
from .integrity import file_intact
from .lock import JobLock
from .paths import EVENTS, SAVEPOINTS
from .replay import JobState, decide_resume, replay

#: What the recovery panel lists of a job (``Job.overview``): rows of the first subtasks of each of
#: the first job vertices; the rest is counted. A crafted graph within the limits of
#: ``JobGraph.from_json`` has about a million subtasks: listing each made a 100 MB table.
ROWS_PER_VERTEX = 10
MAX_VERTICES = 20
STATUSES = ("finished", "failed", "running", "interrupted", "cancelled", "stopped", "damaged")
_SAVEPOINT = re.compile(r"savepoint-\d{6}")


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
        """finished | failed | cancelled (stopped by the user, or its process exited under it) |
        stopped (a streaming job's stop()) | running | interrupted (the process died without a last
        word) | damaged."""
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
        return self.state.cell

    @property
    def savepoints(self) -> list[str]:
        """The job's complete savepoints (streaming jobs, FLIP-8), oldest first: paths of
        ``savepoints/savepoint-NNNNNN`` holding a ``savepoint.json`` (fw_magics.runtime.streaming.savepoints.files)."""
        storage = Storage(self.root)
        base = storage.path(SAVEPOINTS)
        if not storage.exists(base):
            return []
        names = sorted(n for n in storage.listdir(base) if _SAVEPOINT.fullmatch(n))
        return [storage.path(SAVEPOINTS, n) for n in names if storage.exists(storage.path(SAVEPOINTS, n, "savepoint.json"))]

    @property
    def streaming(self) -> bool:
        """Whether it is a streaming job (``start()``), not one of ``execute()``."""
        return self.state.mode is not None

    def label(self) -> str:
        graph = self.graph
        if graph is None:
            return f"{self.name}: damaged ({self.problem})"
        skipped = f", {self.skipped} bad record{'s' if self.skipped != 1 else ''} skipped" if self.skipped else ""
        if self.streaming:
            state = self.state
            text = (f"{self.name}: {self.status}, streaming job in mode {state.mode}, phase {state.phase}, "
                    f"{counted(len(state.batches), 'micro-batch', 'micro-batches')}{skipped}")
        else:
            total = sum(v.parallelism for v in graph.job_vertices())
            text = f"{self.name}: {self.status}, {len(self.state.finished)}/{total} subtasks finished{skipped}"
        savepoints = self.savepoints
        if savepoints:
            latest = savepoints[-1].replace("\\", "/").rsplit("/", 1)[-1]
            text += f", {len(savepoints)} savepoint{'s' if len(savepoints) > 1 else ''} (latest {latest})"
        return text

    def subtasks(self) -> list[dict]:
        """One row per job-vertex subtask: what a resume would keep, what it would re-run, and why.

        Every subtask of the job: up to ``MAX_JSON_EXECUTION_VERTICES`` (about a million) rows
        for a graph at the limit. The recovery panel shows :meth:`overview` instead, which is
        bounded whatever the graph.
        """
        decided = self._decide()
        if decided is None:
            return []
        storage, decision, chains, vertices = decided
        return [self._row(storage, decision, chains, vertex, subtask) for vertex, subtask in vertices]

    def overview(self, rows_per_vertex: int = ROWS_PER_VERTEX, max_vertices: int = MAX_VERTICES) -> Overview:
        """What a resume keeps and re-runs, bounded: counts for every job vertex, rows for a few.

        Each of the first ``max_vertices`` job vertices lists the rows (as :meth:`subtasks`) of
        its first ``rows_per_vertex`` subtasks and counts the rest; the vertices after them are
        only counted. However large the recorded graph, at most ``max_vertices *
        rows_per_vertex`` rows are built, so the panel's table stays small.
        """
        decided = self._decide()
        if decided is None:
            return Overview([], 0, 0)
        storage, decision, chains, vertices = decided
        rerun_of = collections.Counter(vertex for vertex, _ in decision.rerun)
        groups = []
        hidden = hidden_subtasks = hidden_rerun = 0
        for vertex in self.graph.job_vertices():
            if len(groups) >= max_vertices:
                hidden += 1
                hidden_subtasks += vertex.parallelism
                hidden_rerun += rerun_of[vertex.name]
                continue
            rows = [self._row(storage, decision, chains, vertex.name, i)
                    for i in range(min(vertex.parallelism, rows_per_vertex))]
            groups.append(VertexRows(vertex.name, " + ".join(vertex.operators), vertex.parallelism,
                                     rerun_of[vertex.name], rows))
        return Overview(groups, len(vertices), len(decision.rerun), hidden, hidden_subtasks, hidden_rerun)

    def _decide(self):
        """(storage, the resume decision, each job vertex's chain, every subtask), or None without a readable graph."""
        graph = self.graph
        if graph is None:
            return None
        storage = Storage(self.root)
        vertices, inputs = subtask_inputs(graph)
        decision = decide_resume(vertices, inputs, self.state, functools.partial(file_intact, storage))
        chains = {v.name: v.operators for v in graph.job_vertices()}
        return storage, decision, chains, vertices

    def _row(self, storage, decision, chains, vertex: str, subtask: int) -> dict:
        event = self.state.finished.get((vertex, subtask))
        files = [] if event is None else event.get("files", [])
        if (vertex, subtask) in decision.rerun:
            verdict = f"re-run: {decision.reasons[(vertex, subtask)]}"
        elif (vertex, subtask) in decision.problems:  # checked because a sink or a re-run reads it
            verdict = "keep: finished, result intact"
        else:
            present = all(_present(storage, f["path"]) for f in files)
            verdict = "keep: finished, result not read again" + ("" if present else " (file missing)")
        return {"vertex": vertex, "operators": " + ".join(chains[vertex]), "subtask": subtask,
                "verdict": verdict, "files": ", ".join(f["path"] for f in files),
                "records": None if event is None else event.get("records_out")}


@dataclass(frozen=True)
class VertexRows:
    """One job vertex in :meth:`Job.overview`: its counts, and the rows of its first subtasks."""

    vertex: str  # "v1"
    operators: str  # its chain, "source + sort"
    subtasks: int  # its parallelism
    rerun: int  # how many of its subtasks a resume runs again
    rows: list  # rows (as Job.subtasks) of its first few subtasks, in subtask order

    @property
    def more(self) -> int:
        """Subtasks not listed in ``rows``."""
        return self.subtasks - len(self.rows)

    @property
    def more_rerun(self) -> int:
        """How many of the subtasks not listed a resume runs again."""
        return self.rerun - sum(not r["verdict"].startswith("keep") for r in self.rows)


@dataclass(frozen=True)
class Overview:
    """What a resume keeps and re-runs (:meth:`Job.overview`): bounded, whatever the graph's size."""

    groups: list  # VertexRows of the first job vertices
    subtasks: int  # every subtask of the job
    rerun: int  # how many a resume runs again
    hidden: int = 0  # job vertices after the listed ones, counted only
    hidden_subtasks: int = 0
    hidden_rerun: int = 0

    @property
    def keep(self) -> int:
        return self.subtasks - self.rerun


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
    """The job in the folder ``root``: its events replayed, its lock's holder; damaged rather than an error.

    Quiet: records skipped as torn or malformed are counted (``Job.skipped``), not warned about."""
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        return _read_job(root, name)


def _read_job(root: str, name: str) -> Job:
    damage = _folder_problem(root)
    events: list = []
    skipped = 0
    if damage is None:
        store = JobEventStore(Storage(root).path(EVENTS))
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
        elif not storage.exists(Storage(root).path(EVENTS)):
            continue
        jobs.append(read_job(root, name))
    return jobs


@dataclass
class Found:
    """The jobs ``find_jobs`` found, and where it looked: (place, how many jobs came from there)."""

    jobs: list
    looked: list


def find_jobs(job_dir: str, elsewhere: bool = True) -> Found:
    """The jobs in ``job_dir``, then (``elsewhere``) those this process ran and those in the
    user's job index (``fw_magics.recovery.index``), each job once, with where each came from."""
    jobs = list_jobs(job_dir)
    seen = {index.normalized_root(job.root) for job in jobs}
    looked = [(job_dir, len(jobs))]
    if elsewhere:
        for place, entries in (("this kernel's runs", index.ran_here()), (index.index_path(), index.registered())):
            added = 0
            for root, name in entries:
                if root not in seen:
                    seen.add(root)
                    jobs.append(read_job(root, name))
                    added += 1
            looked.append((place, added))
    return Found(jobs, looked)


def _has_event_folder(root: str) -> bool:
    try:
        return os.path.lexists(os.path.join(root, EVENTS))
    except OSError:
        return False


def discard(job: Job) -> None:
    """Delete a job's folder: its event log and results. Refused while a live process runs it."""
    holder = JobLock(job.root).held_by() if job.damage is None else None
    if holder is not None:
        raise JobLockedError(f"job {job.name!r} is being run by pid {holder.get('pid')} on {holder.get('host')}; "
                           "not discarded")
    Storage(job.root).remove_tree(job.root)
