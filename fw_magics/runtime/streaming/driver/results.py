"""What a streaming job shows: its events, its changelog, each key's latest row, its annotated graph.

``StreamingJob`` offers these (``JobResults`` is its base): they read only committed files --
the event log, the backlog's committed results (batch -1), a restored job's latest rows from its
savepoint (batch -2) and each micro-batch's changelog part with its commit marker -- so they give
the same answer while the job runs, after it stopped, and in another process.
"""

from __future__ import annotations

import datetime as dt

from ....datastream.job_graph import SINK
from ....errors import FullWindowError
from ....graph import JobGraph
from ....operators.co_process import side_outputs
from ....recovery.event_store import JobEventStore
from ....recovery.metrics import metrics_frame
from ....recovery.paths import EVENTS
from ....recovery.replay import JobState, replay
from ....spark.actions import run_action
from ..keyed.changelog import BATCH, KIND, SEQ, late_fields
from ..savepoints.restored import restored_rows
from .sink import changelog_frame, late_frame, latest_frame


class JobResults:
    """The reading half of a streaming job (``log``, ``spark``, ``storage``, ``output``, ``spec``,
    ``backlog``, ``plan`` and its phase are the job's)."""

    @property
    def mode(self) -> str:
        return self.plan.mode.value

    @property
    def mode_reason(self) -> str | None:
        """Why the job runs in its mode when its sources or its function decided it (FLIP-327's rule: an input
        made with ``backlog=False`` makes a mixed job a stream from the start; so does a keyed function with
        operator state), else None."""
        return self.plan.why

    @property
    def parallelism(self) -> int:
        return self.plan.parallelism

    @property
    def backlog_state_writes(self) -> int:
        """State writes made while in backlog (one per key with state, at most)."""
        return 0 if self.backlog is None else self.backlog.state_writes

    @property
    def dropped(self) -> dict:
        """Records not processed, counted: ``late`` (event time at or before the watermark, W's or
        Spark's) and ``undated`` (no event time), in the backlog and every micro-batch recorded."""
        totals = self.replayed().dropped
        if self.backlog is not None and self.backlog.finished:
            totals["undated"] += self.backlog.counts().get("undated", 0)
        return totals

    @property
    def skipped_files(self) -> list[dict]:
        """The source files the job does not read, ``{"file", "reason"}`` each (``on_bad_file="skip"``,
        or gone when it started again), in the order they were recorded."""
        return [{"file": file, "reason": reason} for file, reason in self.replayed().skipped.items()]

    def events(self) -> list[dict]:
        """The job's event log, in write order."""
        self.log.flush()
        return JobEventStore(self.storage.path(EVENTS)).read_events()

    def replayed(self) -> JobState:
        """What the job's event log says now (``fw_magics.recovery.replay``)."""
        return replay(self.events())

    def metrics(self):
        """One row per run of the job's work, read from its event log (the same after a restart and for a
        stopped job): the backlog's (``batch`` -1), then each committed micro-batch's, as pandas. Columns:
        ``batch``, ``started`` (UTC), ``duration_ms``, ``input_rows``, ``input_rows_per_second``,
        ``processed_rows_per_second``, ``watermark`` (UTC, NaT without one), ``watermark_gap_ms`` (the
        batch's start less W), ``late``, ``undated``, ``state_rows`` (keys holding state after it),
        ``state_rows_per_partition`` (a list, one count per state partition), ``files_behind`` /
        ``rows_behind`` (what the source had left to read; null where it cannot tell). docs/streaming.md
        says where each comes from."""
        return metrics_frame(self.replayed())

    def show(self, mode=None, sort=None, n: int = 20):
        """A view under the cell that follows the job while the kernel stays free: phase, W, lag, its results
        (``mode`` "update": each key's latest row, top ``n`` by ``sort``, a chart of that column; "append": the
        newest rows), charts of its metrics, and Stop / Savepoint / Stop with savepoint
        (``fw_magics.widgets.JobView``). A job that is a cell's last value shows this view too."""
        from ....widgets import show_job

        return show_job(self, mode=mode, sort=sort, n=n)

    def _repr_mimebundle_(self, include=None, exclude=None):
        """The job as a cell's last value: in a Jupyter kernel its live view (``show()``), the repr as its text;
        elsewhere (a terminal, a script) the repr alone: no view follows a job nobody can see."""
        text = {"text/plain": repr(self)}
        try:
            from IPython import get_ipython

            in_kernel = getattr(get_ipython(), "kernel", None) is not None
        except ImportError:
            in_kernel = False
        if not in_kernel:
            return text
        bundle = dict(self.show()._repr_mimebundle_(include=include, exclude=exclude) or {})
        return {**bundle, **text}

    def changelog_frame(self):
        """Every committed changelog row as a Spark DataFrame (the output columns, kind, seq, batch)."""
        restored = restored_rows(self.spark, self.storage, self.output, self.spec.key_names)
        backlog = None if self.backlog is None else self.backlog.outputs()
        return changelog_frame(self.spark, self.root, self.output, backlog, restored)

    def changelog(self):
        """The changelog as pandas: the output columns, then kind ("element"/"timer") and batch (-1: backlog;
        -2: a restored job's rows from its savepoint, each key's latest there)."""
        keys = [f"`{k}`" for k in self.spec.key_names]
        pdf = run_action(self.changelog_frame().orderBy(BATCH, *keys, SEQ).toPandas, self.spark)
        return pdf.drop(columns=[SEQ]).rename(columns={KIND: "kind", BATCH: "batch"})

    def latest(self):
        """One row per key, its latest result: the key column(s) first, then the result's columns
        (for a reduce, the reduced record's columns), sorted by key."""
        keys = [f"`{k}`" for k in self.spec.key_names]  # Spark sorts keys of every type (structs, binaries)
        frame = latest_frame(self.changelog_frame(), self.spec.key_names).orderBy(*keys)
        return run_action(frame.select(*[f"`{c}`" for c in self.output.names]).toPandas, self.spark)

    def late_records(self, side: str):
        """An interval join's late records of ``side`` ("left" or "right"), kept by
        ``side_output_left_late_data()`` / ``side_output_right_late_data()``, as pandas: that input's columns,
        then the micro-batch that met them (committed with it). In the backlog and in mode batch nothing is late."""
        kept = side_outputs(self.spec)
        if not kept:
            raise FullWindowError(
                f"job {self.job_name!r} keeps no late records: late_records is for an interval join with a side "
                "output (a.key_by(k).interval_join(b.key_by(k)).between(lo, hi).side_output_left_late_data() or "
                f"side_output_right_late_data()); this job runs {self.spec.label!r}")
        if side not in kept:
            raise FullWindowError(f"job {self.job_name!r} keeps the late records of {' and '.join(kept)} only; "
                                  f"got {side!r:.40}; accepted: {', '.join(repr(s) for s in kept)}")
        pdf = run_action(late_frame(self.spark, self.root, self.output, late_fields(self.spec), side).toPandas,
                         self.spark)
        return pdf.rename(columns={BATCH: "batch"})

    def backlog_outputs(self):
        """The rows the backlog emitted (the output columns), or None: what a sink gets as batch -1."""
        outputs = None if self.backlog is None else self.backlog.outputs()
        return None if outputs is None else outputs.select(*[f"`{c}`" for c in self.output.names])

    def job_graph(self) -> JobGraph:
        """The job graph with the source's backlog status and the job's phase as notes."""
        graph = JobGraph.from_json(self.graph.to_json())
        recorded = self.backlog.recorded if self.backlog is not None else None
        skipped = len(self.skipped_files)
        size = (recorded or {}) if self.plan.mode.has_backlog else {}  # files of a folder, rows of a table
        sources = graph.source_names()
        for name, input_size in zip(sources, size.get("inputs") or [size] * len(sources)):
            graph.annotate(name, backlog="true" if self.phase == "backlog" else "false",
                           backlog_files=input_size.get("files"), backlog_rows=input_size.get("rows"),
                           skipped_files=(skipped or None) if len(sources) == 1 else None)
        dropped = self.dropped
        graph.annotate(self.stateful.step.name, phase=self.phase, mode=self.mode, why=self.plan.why,
                       W=_moment(self.watermark),
                       late=dropped["late"] or None, undated=dropped["undated"] or None)
        graph.annotate(SINK, micro_batches=len(self.recorded) or None)
        return graph

    def __repr__(self) -> str:
        w = "" if self.watermark is None else f", W {_moment(self.watermark)}"
        try:
            dropped = "".join(f", {n} {kind}" for kind, n in self.dropped.items() if n)
        except Exception:  # a repr never fails: the log may be unreadable
            dropped = ""
        restarts = getattr(self, "restarts", 0)
        restarted = f", {restarts} restart{'' if restarts == 1 else 's'}" if restarts else ""
        why = f" ({self.plan.why})" if self.plan.why else ""
        kept = ""
        if self.phase in ("stopped", "failed", "finished"):
            try:  # a stopped job over a table's changes keeps its slot (and the server its log)
                kept = self.source.kept_on_server(self.root)
                kept = f"; {kept}" if kept else ""
            except Exception:  # a repr never fails
                kept = ""
        return (f"StreamingJob({self.job_name!r}, {self.mode}{why}: phase {self.phase}, "
                f"{len(self.recorded)} micro-batch{'' if len(self.recorded) == 1 else 'es'}{w}{dropped}{restarted}"
                f"{kept})")


def _moment(millis: int | None) -> str | None:
    """W as the drawing and the repr show it: a UTC time to the millisecond ("2024-01-01 00:01:40.000Z"), not epoch ms."""
    if millis is None:
        return None
    moment = dt.datetime(1970, 1, 1, tzinfo=dt.timezone.utc) + dt.timedelta(milliseconds=millis)
    return moment.strftime("%Y-%m-%d %H:%M:%S.") + f"{moment.microsecond // 1000:03d}Z"
