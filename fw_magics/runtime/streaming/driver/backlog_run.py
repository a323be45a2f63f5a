"""A keyed job's backlog as its job log records it: W, the subtasks still to run, and what they leave.

The backlog engine (``backlog``) runs in Spark's tasks; this is the driver's side of it, handed
the job's ``JobLog`` (to record each subtask) and what the job is, not the job itself:

* ``watermark()``: W, read back when recorded (``backlog/watermark.json``, read as untrusted, a
  bounded regular file), else one aggregate over the backlog, written first;
* ``run()``: the subtasks not finished (or whose committed file is no longer intact) as one
  sorted Spark batch job, each committed subtask recorded as ``subtask_finished`` on vertex
  ``v1`` (a failure keeps those that committed);
* ``results()``, ``states()``, ``outputs()``, ``files()``: what the finished backlog hands on:
  its committed files as DataFrames (every key's state, the outputs it emitted) and as paths.
"""

from __future__ import annotations

import json

from .... import hooks
from ....errors import FullWindowError, JobStorageError
from ....recovery import events
from ....recovery.integrity import file_intact
from ....recovery.paths import WATERMARK
from ....values.event_time import valid_watermark
from ...batch.result_files import committed, folder_in_the_way
from ..keyed import backlog
from ..keyed.seed import Handed

#: The largest watermark file read back.
MAX_WATERMARK_BYTES = 1 << 16


class Backlog:
    """The backlog of one job (see the module docstring); ``finished``: subtask -> its event."""

    def __init__(self, job, finished: dict, attempts: int):
        self.log, self.spark, self.spec, self.source = job.log, job.spark, job.spec, job.source
        self.output, self.vertex, self.parallelism = job.output, job.vertex, job.parallelism
        self.root, self.storage = job.root, job.log.storage
        self.subject = job  # what the backlog_progress hooks are told about
        self.finished = dict(finished)
        self.attempts = attempts
        self.state_writes = 0
        self._counted: dict[int, dict] = {}  # subtask -> its sidecar's counters, read once
        self.recorded: dict | None = None  # the backlog's position, as recorded at the first start

    # -- W --------------------------------------------------------------------------------------

    def watermark(self) -> int | None:
        """W: read back when recorded, else one aggregate over the backlog, written as JSON first."""
        where = self.storage.path(WATERMARK)
        try:
            with self.storage.open_inside(WATERMARK, MAX_WATERMARK_BYTES) as f:
                doc = json.loads(f.read())
        except FileNotFoundError:
            doc = None
        except (OSError, ValueError, UnicodeDecodeError) as error:
            raise JobStorageError(f"{where} cannot be read back ({error}); the job directory is damaged") from None
        if doc is not None:
            if not isinstance(doc, dict) or "watermark" not in doc:
                raise JobStorageError(f"{where} is not a watermark fw-magics wrote; the job directory is damaged")
            if not valid_watermark(doc["watermark"]):
                raise JobStorageError(f"{where} has watermark {doc['watermark']!r:.60}; accepted: null or epoch "
                                      "milliseconds of the years 1 to 9999; the job directory is damaged")
            return doc["watermark"]
        frame = self.source.backlog_frame(self.spark, self.root)
        w, tops = backlog.switch_watermark(frame, self.spec.event_time, self.source.delays)
        doc = {"watermark": w, "max_event_time": max(tops.values(), default=None),
               "delay_ms": max(self.source.delays.values())}
        if None not in tops and tops:  # two inputs: each one's that has records, for its fresh stream (carrier_source)
            doc["tops"] = {str(tag): t for tag, t in tops.items()}
        self.storage.write_bytes(where, json.dumps(doc).encode())
        return w

    # -- running --------------------------------------------------------------------------------

    def todo(self) -> set[int]:
        """Subtasks to run: not finished, or whose committed file is no longer intact."""
        todo = set(range(self.parallelism))
        for subtask, event in list(self.finished.items()):
            problem = next(filter(None, (file_intact(self.storage, f) for f in event.get("files", []))), None)
            if problem is None:
                todo.discard(subtask)
            else:
                del self.finished[subtask]
                self.log.emit(events.subtask_reset(self.vertex, subtask, problem))
        return todo

    def run(self, watermark: int | None) -> None:
        """Run what is left of the backlog; every subtask that commits is recorded, even if others fail."""
        todo = self.todo()
        total = self.parallelism
        self._progress(total - len(todo), total)
        if todo:
            problem = folder_in_the_way(self.storage, self.vertex, todo)
            if problem is not None:
                raise JobStorageError(f"{self.log.where}: {problem}")
            attempt = self.attempts = self.attempts + 1  # a restart in this process runs the next one
            only = None if len(todo) == total else frozenset(todo)
            plan = backlog.BacklogPlan(self.spec, self.output, watermark, self.root, self.vertex, attempt, only)
            frame = backlog.engine_frame(self.source.backlog_frame(self.spark, self.root), self.spec, total,
                                         None if only is None else todo)
            forward = None
            if hooks.registered("backlog_progress"):
                forward = hooks.register("vertex_progress", lambda name, done, all_: (
                    self._progress(done, all_) if name == self.vertex else None))
            try:
                backlog.run(frame, plan, total)
            finally:
                if forward is not None:
                    forward.unregister()
                self._record_committed(todo, attempt)  # what did commit survives a failure
            missing = todo - set(self.finished)
            if missing:
                raise RuntimeError(f"backlog subtasks {sorted(missing)} produced no committed result")
        self.state_writes = sum(self._counters(s).get("state_writes", 0) for s in self.finished)
        self._progress(total, total)
        undated = self.counts().get("undated", 0)
        if undated and self.source.on_late == "fail":
            raise FullWindowError(f"the backlog had {undated} record(s) without an event time: on_late='fail' "
                                  "stops the job; on_late='drop' (the default) counts and drops them")

    def _progress(self, done: int, total: int) -> None:
        hooks.trigger("backlog_progress", self.subject, done, total)

    def _record_committed(self, todo: set[int], attempt: int) -> None:
        for subtask, meta in committed(self.storage, self.vertex).items():
            if subtask in todo and meta.get("attempt") == attempt and subtask not in self.finished:
                record = {"path": meta["path"], "size": meta["size"], "sha256": meta["sha256"]}
                counters = self._counted[subtask] = meta.get("counters", {})
                event = events.subtask_finished(self.vertex, subtask, attempt, records_in=counters.get("records"),
                                                records_out=meta["records"], bytes=meta["size"],
                                                duration=meta["duration"], files=[record])
                self.finished[subtask] = event
                self.log.emit(event)
        self.log.flush()

    def _counters(self, subtask: int) -> dict:
        """A finished subtask's counters, read from the sidecars once: ``committed()`` hashes every
        result file, which at millions of keys costs seconds a call (the switch, ``job.dropped``)."""
        if subtask not in self._counted:
            for done, meta in committed(self.storage, self.vertex).items():
                self._counted.setdefault(done, meta.get("counters", {}))
        return self._counted.get(subtask, {})

    def state_rows_per_partition(self, flavour) -> list[int] | None:
        """The keys each subtask left with state, which are the stream's state partitions' where ``flavour``
        sets the stream's state partition count (``handed``); None where it does not."""
        if not flavour.sets_state_partitions or not self.complete:
            return None
        return [self._counters(i).get("state_writes", 0) for i in range(self.parallelism)]

    def counts(self) -> dict:
        """The backlog's counters summed over its subtasks (records, keys, outputs, timers fired)."""
        sums: dict = {}
        for subtask in self.finished:
            for k, v in self._counters(subtask).items():
                if k != "state_writes":
                    sums[k] = sums.get(k, 0) + v
        return sums

    # -- what it hands on -----------------------------------------------------------------------

    @property
    def complete(self) -> bool:
        return len(self.finished) == self.parallelism

    def files(self) -> list[dict]:
        """Every subtask's committed file record (``path``, ``size``, ``sha256``), in subtask order."""
        return [self.finished[i]["files"][0] for i in range(self.parallelism)]

    def handed(self, flavour) -> Handed:
        """The handover of the backlog's state: its files, the stream's partitions where ``flavour``
        sets the stream's state partition count."""
        return Handed([(f["path"], f["sha256"]) for f in self.files()], flavour.sets_state_partitions)

    def results(self):
        """The committed backlog results (every subtask's file, one partition each), or None."""
        if not self.finished:
            return None
        paths = [self.finished[i]["files"][0]["path"] if i in self.finished else None
                 for i in range(self.parallelism)]
        return backlog.backlog_frame_of_results(self.spark, self.root, paths, self.output)

    def states(self):
        """The backlog's state rows (key columns, ``__fw_state``: every key with state at its end), or None."""
        results = self.results()
        return None if results is None else backlog.initial_state(results, self.spec.key_names)

    def outputs(self):
        """The changelog rows the backlog emitted (every column of the changelog), or None."""
        results = self.results()
        return None if results is None else backlog.backlog_outputs(results)
