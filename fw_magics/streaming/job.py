"""StreamingJob: one keyed job over a source with a backlog, in mixed, stream or batch mode.

``start()`` takes the job's lock, reads the job's event log and continues from where it got to
(``phases.resume_phase``), or records the backlog and starts afresh. A driver thread then runs
what is left: the backlog engine (only its unfinished subtasks), the switch, and the streaming
query, which Spark runs in the background from then on. A reduce or aggregate (``_holds``)
starts its query while the backlog runs, its fresh source held back until the handover
(``backlog/handover.json``, written at the switch): the query's planning, start and first
(empty) micro-batch, about 7 s at any size, then cost nothing at the switch. ``start()``
returns at once with the running job; ``process_all_available()`` waits for it.

Everything the job does is an event in ``<job_dir>/<job_name>/events``: the submission (with the
graph), each start (``stream_started``), the backlog (``backlog_recorded``), each backlog
subtask (``subtask_finished``, vertex ``v1``), the phases, the switch with W, each micro-batch.
The same events, and the progress of the backlog's Spark job, go to the runtime's hooks
(``stream_phase``, ``backlog_progress``, ``micro_batch``) for the widgets. Other files in the
job directory: ``source/manifest.json`` (the backlog and every file seen), ``backlog/watermark.json``
(W), ``results/v1/`` (each backlog subtask's outputs and state), ``checkpoint/`` (Spark's),
``changelog/batch=<id>/`` (each micro-batch's rows).
"""

from __future__ import annotations

import json
import re
import threading
import uuid
import warnings

from .. import hooks
from ..errors import FullWindowError, JobStorageError, ResumeError, error_summary
from ..graph import JobGraph
from ..keyed_process import MIN_WATERMARK
from ..process_function import OPERATOR
from ..recovery import JobEventStore, JobLock, events, safe_job_path
from ..recovery.filesystem import Storage
from ..recovery.integrity import file_intact
from ..runtime.job import default_job_dir
from ..runtime.result_files import committed, folder_in_the_way
from ..streams.job_graph import SINK
from ..watermarks import effective_watermark
from . import backlog
from .changelog import BACKLOG_BATCH, BATCH, KIND, SEQ
from .phases import ENDED, StreamLog, can_change, check_mode, replay_stream, resume_phase
from .query import STATE_STORE, keyed_query_frame
from .seed import HANDOVER, MAX_KEYS, BacklogSeed, lazy_key_types, timer_keys, write_handover
from .sink import ChangelogSink, changelog_frame, check_sink, deliver, latest_frame
from .sources import source_of

AVAILABLE_NOW = "available_now"
DEFAULT_TRIGGER = "1 second"
PROGRESS_POLL_S = 0.2  # how often a running job reads its query's progress
BACKLOG_POLL_S = 1.0  # ... while its backlog runs (a warm-up query has nothing to record; only a failure)
WATERMARK_FILE = ("backlog", "watermark.json")


def start(stateful, job_dir=None, job_name=None, mode="mixed", sink=None, trigger=None,
          max_files_per_trigger=None, from_savepoint=None, parallelism=None) -> StreamingJob:
    """Start or continue the job of ``stateful`` (a StatefulStream); see ``StatefulStream.start``."""
    check_mode(mode)
    operator = stateful.spec.kind == OPERATOR
    if parallelism is not None and (isinstance(parallelism, bool) or not isinstance(parallelism, int)
                                    or parallelism < 1):
        raise FullWindowError(f"parallelism {parallelism!r}; accepted: None (the job's) or an integer >= 1")
    savepoint = None
    if from_savepoint is not None:
        if mode != "mixed" and not operator:
            raise FullWindowError(f"from_savepoint restores a job in mode 'mixed'; got mode {mode!r}")
        from .savepoint_files import load_savepoint

        savepoint = load_savepoint(from_savepoint)
    check_sink(sink)
    if trigger is not None and trigger != AVAILABLE_NOW and (not isinstance(trigger, str) or not trigger.strip()):
        raise FullWindowError(
            f"trigger {trigger!r}; accepted: None ({DEFAULT_TRIGGER!r}), a processing-time interval such as "
            f"'5 seconds', or {AVAILABLE_NOW!r} (process what is there, then stop)"
        )
    if max_files_per_trigger is not None and (isinstance(max_files_per_trigger, bool)
                                              or not isinstance(max_files_per_trigger, int)
                                              or max_files_per_trigger < 1):
        raise FullWindowError(f"max_files_per_trigger {max_files_per_trigger!r}; accepted: None or an integer >= 1")
    source = source_of(stateful)
    name = default_name(stateful) if job_name is None else job_name
    root = safe_job_path(job_dir or default_job_dir(), name)
    if operator:
        from .operator_job import OperatorJob as job_class
    else:
        job_class = StreamingJob
    job = job_class(stateful, source, root, name, mode, sink, trigger, max_files_per_trigger)
    job.open(parallelism, savepoint)
    return job


def default_name(stateful) -> str:
    """A job name from the source and the operator: "orders-reduce-add"."""
    step = stateful.source.step.lineage()[0]
    label = f"{step.detail.get('label', 'stream')}-{stateful.spec.kind}-{stateful.spec.label}"
    return re.sub(r"[^A-Za-z0-9_.\- ]+", "_", label).strip(" .")[:200] or "stream"


def _current_cell() -> str | None:
    try:
        from IPython import get_ipython
    except ImportError:
        return None
    shell = get_ipython()
    history = shell.user_ns.get("_ih") if shell is not None else None
    return history[-1] if history else None


def _held(progress) -> bool:
    """Whether a micro-batch ran while its source was held (the warm-up during the backlog)."""
    sources = getattr(progress, "sources", None) or []
    try:
        return bool(sources) and bool(json.loads(sources[0].endOffset or "{}").get("held"))
    except (ValueError, AttributeError):
        return False


def _watermark_ms(progress) -> int | None:
    """Spark's watermark of a progress report, in epoch ms (None when there is none yet)."""
    import datetime as dt

    text = (getattr(progress, "eventTime", None) or {}).get("watermark")
    if not text:
        return None
    moment = dt.datetime.fromisoformat(text.replace("Z", "+00:00"))
    value = (moment - dt.datetime(1970, 1, 1, tzinfo=dt.timezone.utc)) // dt.timedelta(milliseconds=1)
    return value if value > 0 else None


class StreamingJob:
    """A running (or finished) keyed streaming job; ``start()`` makes one.

    ``phase``: "backlog", "switching", "stream", "finished", "stopped" or "failed";
    ``watermark``: W, the backlog's greatest watermark (None before the backlog ran, or without
    event time); ``backlog_state_writes``: state writes made while in backlog (one per key with
    state, at most); ``query``: Spark's StreamingQuery once started.
    """

    def __init__(self, stateful, source, root, job_name, mode, sink, trigger, max_files):
        self.stateful, self.spec, self.source = stateful, stateful.spec, source
        self.root, self.job_name, self.mode = root, job_name, mode
        self.sink, self.trigger, self.max_files = sink, trigger, max_files
        self.spark = stateful.spark
        self.output = stateful.schema
        self.graph = stateful.job_graph()
        self.vertex = next(v.name for v in self.graph.job_vertices() if stateful.step.name in v.operators)
        self.parallelism = stateful.parallelism
        self.storage = Storage(root)
        self.store = JobEventStore(self.storage.path("events"))
        self.lock = JobLock(root)
        self.log = StreamLog()
        self.watermark: int | None = None
        self.backlog_state_writes = 0
        self.query = None
        self._phase: str | None = None
        self._error: BaseException | None = None
        self._cond = threading.Condition()
        self._recorded: set[int] = set()
        self._thread: threading.Thread | None = None
        self._stopping = False
        self._tag = f"fw-magics-{uuid.uuid4().hex[:12]}"
        self._query_name = f"fw-{job_name}-{uuid.uuid4().hex[:8]}"
        self._finished: dict[int, dict] = {}
        self._ended = False

    # -- starting ------------------------------------------------------------------------------

    def open(self, parallelism: int | None = None, savepoint=None) -> None:
        self.lock.acquire()
        try:
            self.log = replay_stream(self.store.read_events())
            if savepoint is not None and self.log.started and self.log.restored_from != savepoint.path:
                raise ResumeError(f"job {self.job_name!r} in {self.root} already ran; restore a savepoint under a new "
                                  "job_name (a restore starts a new job)")
            self._choose_parallelism(parallelism, savepoint if not self.log.started else None)
            if self.log.started:
                self._check_same()
            self.watermark = self.log.watermark
            self.spark.conf.set(*STATE_STORE)
            self.store.start()
            run = self.log.runs + 1
            if not self.log.started and savepoint is not None:
                self._restore(savepoint, run)
            elif not self.log.started:
                summary = self.source.record_backlog(self.root) if self.mode != "stream" else None
                self._emit(events.job_submitted(self.job_name, self.graph.to_json(), self.graph.fingerprint(),
                                                cell=_current_cell()))
                self._emit(events.stream_started(self.mode, run, self.source.describe(), self.parallelism))
                if summary is not None:
                    self._emit(events.backlog_recorded(summary))
                    self.log.backlog = summary
            else:
                self._emit(events.stream_started(self.mode, run, self.source.describe(), self.parallelism))
            self._recorded = set(self.log.batches)
            self._finished = dict(self.log.finished)
            if self.log.state_writes is not None:
                self.backlog_state_writes = self.log.state_writes
            phase = resume_phase(self.log, self.mode)
            self.store.flush()
        except BaseException:
            self.store.stop()
            self.lock.release()
            raise
        if phase == "finished":  # a batch job that has finished: nothing left to run
            self._phase, self._ended = "finished", True
            self._close()
            return
        self._set_phase(phase)
        self._thread = threading.Thread(target=self._drive, name=f"fw-stream {self.job_name}", daemon=True)
        self._thread.start()

    def _choose_parallelism(self, parallelism: int | None, savepoint) -> None:
        """The job's parallelism: the recorded one on a restart (a change is refused: Spark would keep the
        checkpoint's partitions without a word), else ``parallelism``, the savepoint's, or the stream's."""
        from .savepoint import graph_at

        recorded = self.log.parallelism if self.log.started else None
        if recorded is not None and parallelism is not None and parallelism != recorded:
            raise ResumeError(
                f"job {self.job_name!r} runs at parallelism {recorded}; a restart keeps its checkpoint's state "
                f"partitions (Spark ignores a new spark.sql.shuffle.partitions): take p = job.savepoint() and "
                f"start(..., from_savepoint=p, parallelism={parallelism}) under a new job_name")
        chosen = recorded or parallelism or (savepoint.parallelism if savepoint is not None else None)
        if chosen is not None and chosen != self.parallelism:
            self.parallelism = chosen
            self.graph = graph_at(self.graph, chosen)

    def _restore(self, savepoint, run: int) -> None:
        """The first start of a job restored from ``savepoint``: its source, state and W, then the stream."""
        from .savepoint import check_restorable

        check_restorable(savepoint, self.graph, self.source.describe(), self.spec.key_names, self.parallelism)
        detail = self._prepare_restore(savepoint)
        self.watermark = savepoint.document["watermark"]
        self._emit(events.job_submitted(self.job_name, self.graph.to_json(), self.graph.fingerprint(),
                                        cell=_current_cell()))
        self._emit(events.stream_started(self.mode, run, self.source.describe(), self.parallelism))
        self._emit(events.switch(self.watermark, **detail))
        self.log.switched, self.log.watermark, self.log.restored_from = True, self.watermark, savepoint.path

    def _prepare_restore(self, savepoint) -> dict:
        """Lay out the restored job's directory; returns the switch event's details."""
        from .savepoint import prepare_restore

        return prepare_restore(savepoint, self.storage, self.graph.operators[0].name, self.parallelism)

    def savepoint(self) -> str:
        """Write a savepoint after the last committed micro-batch (the job keeps running); returns its path.

        ``start(..., from_savepoint=path, parallelism=N)`` under a new job name restores it at any N >= 1.
        """
        from .savepoint import take_savepoint

        return take_savepoint(self)

    def _check_same(self) -> None:
        """Refuse, in one line, a job whose recorded graph, mode or source differs."""
        where = f"job {self.job_name!r} in {self.root}"
        if self.log.fingerprint != self.graph.fingerprint():
            changes = JobGraph.from_json(self.log.graph).diff(self.graph) if self.log.graph else ["unknown graph"]
            raise ResumeError(f"{where} was recorded for a different graph ({'; '.join(changes)}); "
                              "start it under another job_name, or delete its directory to start afresh")
        if self.log.mode != self.mode:
            raise ResumeError(f"{where} was started in mode {self.log.mode!r}, not {self.mode!r}; start it with "
                              f"mode={self.log.mode!r}, or under another job_name")
        recorded, now = self.log.source or {}, self.source.describe()
        changed = [k for k in now if recorded.get(k) != now[k]]
        if changed:
            k = changed[0]
            raise ResumeError(f"{where} was recorded for another source: its {k} was {recorded.get(k)!r}, "
                              f"now {now[k]!r}; start it under another job_name")

    # -- phases and events ------------------------------------------------------------------------

    @property
    def phase(self) -> str | None:
        return self._phase

    def _emit(self, event: dict) -> None:
        self.store.write_event(event)
        hooks.event_written(self.store, event)

    def _set_phase(self, phase: str, **detail) -> None:
        with self._cond:
            old = self._phase
            if old == phase or (old is not None and not can_change(self.mode, old, phase)):
                return
            self._phase = phase
            self._cond.notify_all()
        self._emit(events.phase_changed(phase, **detail))
        hooks.trigger("stream_phase", self, phase, detail)

    # -- the driver thread ------------------------------------------------------------------------

    def _drive(self) -> None:
        try:
            self.spark.addTag(self._tag)
            if self._phase == "backlog":
                self.watermark = self._switch_watermark()
                warm = self._warm_up()
                try:
                    self._run_backlog()
                finally:
                    if warm is not None:
                        warm.join()
                if self._stopping or self._ended:  # stopped, or the warm query failed
                    return
                if self.mode == "batch":
                    deliver(self.sink, self._backlog_outputs(), BACKLOG_BATCH)
                    self._emit(events.job_finished())
                    self._end("finished")
                    return
                if self.query is not None and self.backlog_seed() is None:
                    self._discard_warm_query()  # too many keys for the lazy seed: initialState after all
                self._emit(events.switch(self.watermark, state_writes=self.backlog_state_writes,
                                         **self._backlog_counts()))
                self._set_phase("switching", watermark=self.watermark)
                self.store.flush()
            if self._phase == "switching":
                deliver(self.sink, self._backlog_outputs(), BACKLOG_BATCH)  # again after a restart: idempotent
            if self._holds() and not self.storage.exists(self.storage.path(*HANDOVER)):
                seed = self.backlog_seed()  # (also a job that switched before handover files existed)
                write_handover(self.root, None if seed is None else [
                    self._finished[i]["files"][0] for i in range(self.parallelism)])
            if not self._stopping:
                if self.query is None:
                    self._start_query()
                if self._phase == "switching" and self._holds() and self.backlog_seed() is not None:
                    self._set_phase("stream")  # the state is the backlog's files: nothing to checkpoint first
        except BaseException as error:
            if self._stopping:
                return
            self._fail(error)
        finally:
            try:
                self.spark.removeTag(self._tag)
            except Exception:
                pass

    def _watermark_file(self) -> str:
        return self.storage.path(*WATERMARK_FILE)

    def _switch_watermark(self) -> int | None:
        """W: read back when recorded, else one aggregate over the backlog, written as JSON first."""
        path = self._watermark_file()
        if self.storage.exists(path):
            with self.storage.open(path) as f:
                return json.loads(f.read())["watermark"]
        frame = self.source.backlog_frame(self.spark, self.root)
        w, top = backlog.switch_watermark(frame, self.spec.event_time, self.source.delay_ms)
        doc = {"watermark": w, "max_event_time": top, "delay_ms": self.source.delay_ms}
        self.storage.write_bytes(path, json.dumps(doc).encode())
        return w

    def _backlog_todo(self) -> set[int]:
        """Backlog subtasks to run: not finished, or whose committed file is no longer intact."""
        todo = set(range(self.parallelism))
        for subtask, event in list(self._finished.items()):
            problem = next(filter(None, (file_intact(self.storage, f) for f in event.get("files", []))), None)
            if problem is None:
                todo.discard(subtask)
            else:
                del self._finished[subtask]
                self._emit(events.subtask_reset(self.vertex, subtask, problem))
        return todo

    def _holds(self) -> bool:
        """Whether the query starts while the backlog runs, its fresh source held until the handover:
        a mixed reduce or aggregate whose keys the lazy seed can look up, not restored from a savepoint
        (a process function's timers must go in through initialState, known only after the backlog)."""
        return (self.mode == "mixed" and self.spec.kind in ("reduce", "aggregate") and self.log.restored_from is None
                and lazy_key_types(self.spec.key.arrow_schema))

    def _hold_path(self) -> str | None:
        """The handover file the query's source and sink wait for (see ``_warm_up``), or None."""
        return self.storage.path(*HANDOVER) if self._holds() else None

    def _warm_up(self) -> threading.Thread | None:
        """Start the held query in a thread while the backlog runs (not for ``availableNow``, which
        would end on the held offset); a failure here is left to the start at the switch."""
        if not self._holds() or self.trigger == AVAILABLE_NOW:
            return None

        def go():
            try:
                self._start_query(warm=True)
            except Exception:
                pass
            if self._stopping or self._ended:  # stopped or failed meanwhile: leave nothing running
                self._stop_query()

        thread = threading.Thread(target=go, name=f"fw-stream-warm-up {self.job_name}", daemon=True)
        thread.start()
        return thread

    def _stop_query(self) -> None:
        if self.query is not None:
            try:
                self.query.stop()
            except Exception:
                pass

    def _discard_warm_query(self) -> None:
        """Stop the query started during the backlog and drop its checkpoint (offsets and an empty
        warm-up batch, no state): a fresh query takes the backlog's state through initialState."""
        query, self.query = self.query, None
        query.stop()
        path = self.storage.path("checkpoint")
        if self.storage.exists(path):
            self.storage.remove_tree(path)

    def _run_backlog(self) -> None:
        todo = self._backlog_todo()
        total = self.parallelism
        hooks.trigger("backlog_progress", self, total - len(todo), total)
        if todo:
            problem = folder_in_the_way(self.storage, self.vertex, todo)
            if problem is not None:
                raise JobStorageError(f"job {self.job_name!r} in {self.root}: {problem}")
            attempt = self.log.attempts + 1
            plan = backlog.BacklogPlan(self.spec, self.output, self.watermark, self.root, self.vertex, attempt,
                                       None if len(todo) == total else frozenset(todo))
            frame = backlog.engine_frame(self.source.backlog_frame(self.spark, self.root), self.spec, total,
                                         None if len(todo) == total else todo)
            forward = None
            if hooks.registered("backlog_progress"):
                forward = hooks.register("vertex_progress", lambda name, done, all_: (
                    hooks.trigger("backlog_progress", self, done, all_) if name == self.vertex else None))
            try:
                backlog.run(frame, plan)
            finally:
                if forward is not None:
                    forward.unregister()
                self._record_committed(todo, attempt)  # what did commit survives a failure
            missing = todo - set(self._finished)
            if missing:
                raise RuntimeError(f"backlog subtasks {sorted(missing)} produced no committed result")
        self.backlog_state_writes = sum(self._counters(s).get("state_writes", 0) for s in self._finished)
        hooks.trigger("backlog_progress", self, total, total)

    def _record_committed(self, todo: set[int], attempt: int) -> None:
        for subtask, meta in committed(self.storage, self.vertex).items():
            if subtask in todo and meta.get("attempt") == attempt and subtask not in self._finished:
                record = {"path": meta["path"], "size": meta["size"], "sha256": meta["sha256"]}
                counters = meta.get("counters", {})
                event = events.subtask_finished(self.vertex, subtask, attempt, records_in=counters.get("records"),
                                                records_out=meta["records"], bytes=meta["size"],
                                                duration=meta["duration"], files=[record])
                self._finished[subtask] = event
                self._emit(event)
        self.store.flush()

    def _counters(self, subtask: int) -> dict:
        meta = committed(self.storage, self.vertex).get(subtask, {})
        return meta.get("counters", {})

    def _backlog_counts(self) -> dict:
        sums: dict = {}
        for subtask in self._finished:
            for k, v in self._counters(subtask).items():
                if k != "state_writes":
                    sums[k] = sums.get(k, 0) + v
        return sums

    def _backlog_results(self):
        """The committed backlog results (every subtask's file, one partition each), or None."""
        if self.mode == "stream" or not self._finished:
            return None
        paths = [self._finished[i]["files"][0]["path"] if i in self._finished else None
                 for i in range(self.parallelism)]
        return backlog.backlog_frame_of_results(self.spark, self.root, paths, self.output)

    def backlog_states(self):
        """The backlog's state rows (key columns, ``__fw_state``: every key with state at its end), or None."""
        results = self._backlog_results()
        return None if results is None else backlog.initial_state(results, self.spec.key_names)

    def backlog_seed(self) -> BacklogSeed | None:
        """The backlog's keyed state as the stream reads it lazily, key by key (None: handed over eagerly)."""
        if self.mode != "mixed" or len(self._finished) != self.parallelism or self.backlog_state_writes > MAX_KEYS:
            return None
        if not lazy_key_types(self.spec.key.arrow_schema):
            return None
        return BacklogSeed(self.root, [self._finished[i]["files"][0] for i in range(self.parallelism)],
                           self.spec.key_names)

    def _backlog_outputs(self):
        results = self._backlog_results()
        if results is None:
            return None
        return backlog.backlog_outputs(results).select(*[f"`{c}`" for c in self.output.names])

    def _query_frame(self, warm: bool = False):
        """The streaming DataFrame of changelog rows the query writes (``warm``: started during the backlog)."""
        mixed = self.mode == "mixed"
        if mixed:
            from .savepoint import restored_initial_state

            seed = None
            initial = restored_initial_state(self.spark, self.storage)
            if warm:  # the backlog's files come with the handover
                seed = BacklogSeed(self.root, None, self.spec.key_names)
            elif initial is None and (initial := self.backlog_states()) is not None:
                seed = self.backlog_seed()
                if seed is not None:  # only keys with timers go in now (only a process function has
                    # timers); the others are read on their first fresh record
                    initial = timer_keys(initial) if self.spec.kind == "process" else None
            stream = self.source.fresh_stream(self.spark, self.root, self.max_files, self.parallelism,
                                              self._hold_path())
        else:
            initial, seed, stream = None, None, self.source.full_stream(self.spark, self.max_files)
        return keyed_query_frame(stream, self.spec, self.output, self.source.delay_ms,
                                 self.watermark if mixed else None, initial, seed)

    def _start_query(self, warm: bool = False) -> None:
        frame = self._query_frame(warm)
        writer = (frame.writeStream.foreachBatch(ChangelogSink(self.root, self.output.names, self.sink,
                                                               self._hold_path()))
                  .option("checkpointLocation", self.storage.path("checkpoint")).queryName(self._query_name))
        if self.trigger == AVAILABLE_NOW:
            writer = writer.trigger(availableNow=True)
        else:
            writer = writer.trigger(processingTime=self.trigger or DEFAULT_TRIGGER)
        threading.Thread(target=self._follow, name=f"fw-stream-progress {self.job_name}", daemon=True).start()
        partitions = "spark.sql.shuffle.partitions"
        before = self.spark.conf.get(partitions)
        self.spark.conf.set(partitions, str(self.parallelism))  # the state partitions of a fresh checkpoint
        try:
            query = writer.start()
        finally:
            self.spark.conf.set(partitions, before)
        with self._cond:
            self.query = query
            self._cond.notify_all()

    # -- progress -------------------------------------------------------------------------------

    def _follow(self) -> None:
        """Follow the query from a daemon thread: each committed micro-batch, and its end.

        Polled (``recentProgress``, ``isActive``) rather than heard through a
        ``StreamingQueryListener``: under Spark Connect a client listener keeps a non-daemon
        thread that blocks the interpreter's exit for as long as the listener is registered, and
        removing it can hang (pyspark joins that thread while holding the lock it needs to deliver
        a pending event). A poll makes no Spark call once the job has ended.
        """
        with self._cond:
            self._cond.wait_for(lambda: self.query is not None or self._ended)
        query = self.query
        if query is None:  # the job ended before its query started
            return
        while True:
            with self._cond:
                backlog = self._phase == "backlog"  # polled less, until the switch
                self._cond.wait_for(lambda: self._ended or self._stopping or (backlog and self._phase != "backlog"),
                                    BACKLOG_POLL_S if backlog else PROGRESS_POLL_S)
                if self._ended or self._stopping:
                    return
            try:
                self._sync_progress()
                if query.isActive:
                    continue
                exception = query.exception()
            except Exception as error:  # the session went away under us: say so once, then stop following
                if not (self._ended or self._stopping or query is not self.query):
                    warnings.warn(f"job {self.job_name!r}: stopped following its query ({error_summary(error)}); "
                                  "process_all_available() still reads its progress", stacklevel=1)
                return
            if query is not self.query:  # the warm-up query, discarded at the switch
                return
            self._terminated(exception)
            return

    def _record(self, progress) -> None:
        """One committed micro-batch: an event, a hook, and the phase "stream" after the switch.
        A warm-up batch (its source held, see ``_holds``) read nothing and is not one of the job's."""
        if _held(progress):
            return
        with self._cond:
            if progress.batchId in self._recorded or self._ended:
                return
            self._recorded.add(progress.batchId)
        operators = progress.stateOperators or []
        watermark = None
        if self.spec.event_time is not None:
            effective = effective_watermark(self.watermark if self.mode == "mixed" else None, _watermark_ms(progress))
            watermark = None if effective == MIN_WATERMARK else effective
        info = {
            "batch": progress.batchId, "input_rows": progress.numInputRows,
            "state_rows_updated": sum(op.numRowsUpdated for op in operators), "watermark": watermark,
            "dropped_by_watermark": sum(op.numRowsDroppedByWatermark for op in operators),
            "duration_ms": (progress.durationMs or {}).get("triggerExecution"),
        }
        self._emit(events.micro_batch(**info))
        hooks.trigger("micro_batch", self, info)
        if self._phase == "switching":
            self._set_phase("stream")

    def _sync_progress(self) -> None:
        query = self.query
        if query is None:
            return
        for progress in query.recentProgress:
            self._record(progress)

    def _terminated(self, exception) -> None:
        if self._stopping or self._ended:
            return
        if exception:
            self._fail(RuntimeError(str(exception).strip().splitlines()[0]))
        else:  # availableNow: everything there was is processed
            self._sync_progress()
            self._end("stopped")

    # -- waiting, reading, stopping ----------------------------------------------------------------

    def _reads_fresh(self) -> bool:
        """Whether the query reads fresh data: started, and not held (a query warming up during the
        backlog is held until its handover, and a held job is in "stream" once handed over)."""
        if self.query is None or self._phase == "backlog":
            return False
        return not (self._holds() and self._phase == "switching")

    def process_all_available(self, timeout: float | None = None) -> StreamingJob:
        """Return once every file present now is processed (and committed); re-raises a failure."""
        with self._cond:
            ready = self._cond.wait_for(lambda: self._reads_fresh() or self._phase in ENDED, timeout)
        if not ready:
            raise TimeoutError(f"job {self.job_name!r} did not reach its stream within {timeout} s")
        if self._error is not None:
            raise self._error
        query = self.query
        if query is not None and self._phase not in ENDED:
            try:
                if self.trigger == AVAILABLE_NOW:
                    query.awaitTermination()
                else:
                    query.processAllAvailable()
            except Exception as error:
                self._fail(error)
                raise
            self._sync_progress()
            if self.trigger == AVAILABLE_NOW:
                self._end("stopped")
        if self._error is not None:
            raise self._error
        if not self._ended:
            self.store.flush()
        return self

    def stop(self) -> None:
        """Stop the job (its query, or the backlog's Spark job) and release it; start() again continues it."""
        if self._ended:
            return
        self._stopping = True
        if self.query is not None:
            self.query.stop()
        if self._thread is not None and self._thread.is_alive():
            try:
                self.spark.interruptTag(self._tag)
            except Exception:
                pass
        if self._thread is not None:
            self._thread.join()
        self._stop_query()  # a thread started it while we were stopping
        self._sync_progress()
        self._end("stopped")

    def _fail(self, error: BaseException) -> None:
        with self._cond:
            if self._ended:
                return
            self._error = error
        self._stop_query()
        if self._thread is not None and self._thread.is_alive() and self._thread is not threading.current_thread():
            try:  # the backlog, when its warm query failed
                self.spark.interruptTag(self._tag)
            except Exception:
                pass
        self._emit(events.job_failed(error_summary(error)))
        self._end("failed", cause=error_summary(error))

    def _end(self, phase: str, **detail) -> None:
        """Record the last phase, release everything, and only then show the phase: whoever waits
        for the end (``process_all_available``) can start the job again at once."""
        with self._cond:
            if self._ended:
                return
            self._ended = True
        self._emit(events.phase_changed(phase, **detail))
        self._close()
        with self._cond:
            self._phase = phase
            self._cond.notify_all()
        hooks.trigger("stream_phase", self, phase, detail)

    def _close(self) -> None:
        self.store.flush()
        self.store.stop()
        self.lock.release()

    @property
    def exception(self) -> BaseException | None:
        """The error that failed the job, if it failed."""
        return self._error

    def events(self) -> list[dict]:
        """The job's event log, in write order."""
        if not self._ended:
            self.store.flush()
        return JobEventStore(self.storage.path("events")).read_events()

    def changelog_frame(self):
        """Every committed changelog row as a Spark DataFrame (the output columns, kind, seq, batch)."""
        from .changelog import changelog_schema
        from .savepoint import restored_latest

        restored = restored_latest(self.spark, self.storage, changelog_schema(self.output))
        return changelog_frame(self.spark, self.root, self.output, self._backlog_changelog(), restored)

    def _backlog_changelog(self):
        results = self._backlog_results()
        return None if results is None else backlog.backlog_outputs(results)

    def changelog(self):
        """The changelog as pandas: the output columns, then kind ("element"/"timer") and batch (-1: backlog;
        -2: a restored job's rows from its savepoint, each key's latest there)."""
        frame = self.changelog_frame()
        keys = [f"`{k}`" for k in self.spec.key_names]
        pdf = frame.orderBy(BATCH, *keys, SEQ).toPandas()
        return pdf.drop(columns=[SEQ]).rename(columns={KIND: "kind", BATCH: "batch"})

    def latest(self):
        """One row per key, its latest result: the key column(s) first, then the result's columns
        (for a reduce, the reduced record's columns), sorted by key."""
        frame = latest_frame(self.changelog_frame(), self.spec.key_names)
        pdf = frame.select(*[f"`{c}`" for c in self.output.names]).toPandas()
        return pdf.sort_values(list(self.spec.key_names), kind="stable").reset_index(drop=True)

    def job_graph(self) -> JobGraph:
        """The job graph with the source's backlog status and the job's phase as notes."""
        graph = JobGraph.from_json(self.graph.to_json())
        source = graph.operators[0].name
        in_backlog = self._phase == "backlog"
        backlog_files = (self.log.backlog or {}).get("files")
        graph.annotate(source, backlog="true" if in_backlog else "false",
                       backlog_files=backlog_files if self.mode != "stream" else None)
        graph.annotate(self.stateful.step.name, phase=self._phase, mode=self.mode,
                       watermark=self.watermark if self.watermark is not None else None)
        graph.annotate(SINK, micro_batches=len(self._recorded) or None)
        return graph

    def __repr__(self) -> str:
        w = "" if self.watermark is None else f", W={self.watermark}"
        return (f"StreamingJob({self.job_name!r}, {self.mode}: phase {self._phase}, "
                f"{len(self._recorded)} micro-batches{w})")

    def __enter__(self) -> StreamingJob:
        return self

    def __exit__(self, *exc) -> None:
        self.stop()

