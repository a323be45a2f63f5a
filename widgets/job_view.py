"""JobView: a streaming job under its cell (``job.show()``), updating itself while the kernel stays free.

A background thread wakes on the job's hooks (``micro_batch``, ``stream_phase``), and reads the job only when a
new micro-batch committed or its phase changed, at most every ``MIN_INTERVAL_S``: the metrics from the event
log (``recovery/metrics.py``, as ``job.metrics()``), the new micro-batches' changelog parts from their
committed Parquet files (pyarrow: no Spark job competes with the stream; the backlog's and a restored
savepoint's part are read once, through Spark, when the backlog is over). What it draws is ``job_view_model.py``'s.
Stop, Savepoint and Stop with savepoint call the job's own ``stop()`` and ``savepoint()``. A keyed job's view
ends with "State of a key", folded: opened, it is the job's ``StateInspector`` (``state_inspector.py``, as under
``show_graph(job)``: a key typed or picked, its state at each kept micro-batch and savepoint). A job that is not
running in this kernel (stopped, finished, or found by name after a kernel restart) is shown read-only.
"""

from __future__ import annotations

import html
import threading
import time

import ipywidgets as W
import pyarrow.dataset as pads
import pyarrow.fs as pafs

from fw_magics import hooks
from fw_magics.errors import FullWindowError, FwMagicsError, error_summary
from fw_magics.operators.co_process import LATE_KINDS
from fw_magics.recovery.metrics import rows as metric_rows
from fw_magics.recovery.replay import JobState
from fw_magics.runtime.streaming.driver.phases import ENDED
from fw_magics.runtime.streaming.driver.sink import batch_dir, committed_batches
from fw_magics.runtime.streaming.keyed.changelog import BATCH, KIND, SEQ
from fw_magics.runtime.streaming.savepoints.files import list_savepoints

from .job_view_model import (
    CHARTED_BATCHES,
    KEPT_ROWS,
    SHOWN,
    Mode,
    Results,
    batches_text,
    chart_svg,
    header_html,
    result_chart_svg,
    table_html,
)
from .state_inspector import for_job

#: The least time between two reads of the job; the longest a woken view waits for a hook before it looks anyway.
MIN_INTERVAL_S = 0.25
POLL_S = 1.0
_BY_KEY = "(key)"


def read_part(root: str, batch: int) -> list[dict]:
    """One committed micro-batch's changelog rows (output columns and ``kind``), in their written order."""
    path = batch_dir(root, batch)
    filesystem = None
    if "://" in path and not path.startswith("file:"):
        filesystem, path = pafs.FileSystem.from_uri(path)
    table = pads.dataset(path, format="parquet", filesystem=filesystem).to_table()
    if SEQ in table.column_names:
        table = table.sort_by(SEQ)
    rows = []
    for row in table.to_pylist():
        if row.get(KIND) in LATE_KINDS.values():  # an interval join's side output: not a result
            continue
        rows.append({("kind" if c == KIND else c): v for c, v in row.items()
                     if c not in (SEQ, BATCH) and not c.startswith("__fw_in")})
    return rows


class JobView(W.VBox):
    """A streaming job's live view. ``job``: a running ``StreamingJob`` (``job.show()``), or None with ``recorded``
    (a ``recovery.jobs.Job`` read from its folder: ``fw_magics.widgets.show_job(name)``), shown read-only.

    ``mode``: "update" (each key's latest row; needs the key columns) or "append" (the newest rows);
    ``sort``: the column the top ``n`` rows are chosen by (largest first; default: by key).
    """

    def __init__(self, job=None, recorded=None, key_names=None, mode=None, sort: str | None = None, n: int = SHOWN):
        # first: a refused view (a bad mode or sort below) is still closed when collected, which needs these
        self._closed, self._wake = threading.Event(), threading.Event()
        self._hooks, self._thread = [], None
        self.job, self.recorded = job, recorded
        self.root = job.root if job is not None else recorded.root
        self.name = job.job_name if job is not None else recorded.name
        keys = tuple(key_names if key_names is not None else getattr(getattr(job, "spec", None), "key_names", ()) or ())
        self.mode = Mode.parse(mode or (Mode.UPDATE if keys else Mode.APPEND), keyed=bool(keys))
        self.results = Results(keys)
        self.metrics: list[dict] = []
        self.status: dict = {}
        self.message_text = ""
        self.refreshes = 0  # how many times the view read the job (tests, the benchmark)
        self._seen = None  # (micro-batches recorded, phase) at the last read
        self._lock = threading.RLock()
        self.header = W.HTML()
        self.header.add_class("fw-job-view-header")
        self.mode_pick = W.ToggleButtons(options=[m.value for m in Mode if keys or m is Mode.APPEND],
                                         value=self.mode.value, description="results")
        # a running job's result columns are known now: the chosen one is set before any front end shows it
        columns = list(getattr(job, "output", None).names) if job is not None and keys else []
        if sort is not None and columns and sort not in columns:
            raise FullWindowError(f"sort={sort!r:.60}: not a result column of job {self.name!r}; accepted: "
                                  f"{', '.join(columns)} (or None: by key)")
        self.sort_pick = W.Dropdown(options=[_BY_KEY, *columns], value=sort if sort in columns else _BY_KEY,
                                    description="top by", layout=W.Layout(width="220px"))
        self.count = W.BoundedIntText(value=n, min=1, max=KEPT_ROWS, description="rows",
                                      layout=W.Layout(width="140px"))
        self.sort = sort
        self.table = W.HTML()
        self.table.add_class("fw-job-results")
        self.result_chart = W.HTML()  # the chosen column of the top keys (update mode, top by a column)
        self.charts = W.HTML()
        self.charts.add_class("fw-job-charts")
        self.stop_button = W.Button(description="Stop", icon="stop", button_style="danger")
        self.savepoint_button = W.Button(description="Savepoint", icon="save")
        self.stop_savepoint_button = W.Button(description="Stop with savepoint", icon="save",
                                              layout=W.Layout(width="auto"))
        for button in self.buttons:
            button.add_class("fw-job-" + button.description.lower().replace(" ", "-"))
        self.stop_button.on_click(lambda _: self._in_thread(self.stop))
        self.savepoint_button.on_click(lambda _: self._in_thread(self.savepoint))
        self.stop_savepoint_button.on_click(lambda _: self._in_thread(self.stop_with_savepoint))
        self.message = W.HTML()
        self.message.add_class("fw-job-message")
        self.savepoints = W.HTML()
        for control in (self.mode_pick, self.sort_pick, self.count):
            control.observe(lambda _: self._draw_results(), "value")
        # a keyed job in this kernel: its inspector, folded until opened (opening offers keys: a Spark read)
        self.state_inspector = for_job(job) if job is not None else None
        self.state_fold = W.Accordion([] if self.state_inspector is None else [self.state_inspector],
                                      selected_index=None)
        if self.state_inspector is not None:
            self.state_fold.set_title(0, "State of a key")
            self.state_fold.observe(lambda change: change["new"] == 0 and self.state_inspector.opened(),
                                    "selected_index")
        self.state_fold.add_class("fw-job-state")
        super().__init__([self.header, W.HBox([self.stop_button, self.savepoint_button, self.stop_savepoint_button]),
                          self.message, W.HBox([self.mode_pick, self.sort_pick, self.count]), self.table,
                          self.result_chart, self.charts, self.savepoints,
                          *([self.state_fold] if self.state_inspector is not None else [])])
        self.add_class("fw-job-view")
        if self.live:
            # the first read now, in the cell: what it shows where widgets do not render is the job's state
            self._earlier = self._read(earlier=False)
            self._hooks = [hooks.register("micro_batch", self._on_hook), hooks.register("stream_phase", self._on_hook)]
            self._thread = threading.Thread(target=self._follow, name=f"fw-job-view {self.name}", daemon=True)
            self._thread.start()
        else:
            self.refresh()

    def _repr_mimebundle_(self, **kwargs):
        """The live widget where widgets render; elsewhere (nbconvert, GitHub, a terminal) what it showed when
        displayed: its header, table and charts as HTML, and one line of text."""
        bundle = dict(super()._repr_mimebundle_(**kwargs) or {})
        with self._lock:
            bundle["text/html"] = "".join(part.value for part in (self.header, self.table, self.result_chart,
                                                                  self.charts))
            bundle["text/plain"] = (f"JobView of job {self.name!r}: phase {self.status.get('phase', '?')}, "
                                    + batches_text(self.status.get("batches", 0)))
        return bundle

    @property
    def buttons(self) -> tuple:
        return self.stop_button, self.savepoint_button, self.stop_savepoint_button

    @property
    def live(self) -> bool:
        """Whether the job runs in this kernel (buttons enabled, the view follows it)."""
        return self.job is not None and self.job.phase not in ENDED and not self._closed.is_set()

    # -- following the job ---------------------------------------------------------------------------------

    def _on_hook(self, job, *_) -> None:
        if job is self.job:
            self._wake.set()

    def _read(self, earlier: bool) -> bool:
        """One read of the job and a redraw; ``earlier``: whether the backlog's part is read already (once the
        backlog has committed it, through Spark). Returns that, after this read. Never fails the job: the view
        says what went wrong."""
        loaded = not earlier and self.job.phase != "backlog"
        if loaded:
            earlier = True
            try:
                self._load_earlier_parts()
            except Exception as error:
                self._say(f"the backlog's rows are not shown: {error_summary(error)}")
        try:
            self.refresh(force=loaded or self._seen is None)
        except Exception as error:
            self._say(f"view not updated: {error_summary(error)}")
        return earlier

    def _follow(self) -> None:
        earlier = self._earlier
        while not self._closed.is_set():
            began = time.monotonic()
            earlier = self._read(earlier)
            if self.job.phase in ENDED and self._seen is not None and self._seen[1] in ENDED:
                break
            self._closed.wait(max(0.0, MIN_INTERVAL_S - (time.monotonic() - began)))
            self._wake.wait(POLL_S)
            self._wake.clear()
        self._unhook()

    def _load_earlier_parts(self) -> None:
        """The backlog's rows (batch -1) and a restored savepoint's (-2), once, through the job's own reader."""
        if getattr(self.job, "backlog", None) is None and not getattr(self.job, "restored_from", None):
            return
        from pyspark.sql import functions as F

        from fw_magics.spark.actions import run_action

        frame = self.job.changelog_frame().where(F.col(BATCH) < 0).orderBy(BATCH, SEQ)
        pdf = run_action(frame.toPandas, self.job.spark)
        with self._lock:
            for batch in sorted(set(pdf[BATCH])):
                part = pdf[pdf[BATCH] == batch].drop(columns=[BATCH, SEQ]).rename(columns={KIND: "kind"})
                self.results.take(int(batch), part.to_dict("records"))

    def refresh(self, force: bool = False) -> bool:
        """Read the job again when a micro-batch committed or its phase changed since the last read; redraw.
        Returns whether it read."""
        with self._lock:
            seen = (len(self.job.recorded), self.job.phase) if self.job is not None else None
            if not force and seen is not None and seen == self._seen:
                return False
            state = self.job.replayed() if self.job is not None else self.recorded.state
            for batch in committed_batches(self.root):
                if self.results.wants(batch):
                    self.results.take(batch, read_part(self.root, batch))
            self.metrics = metric_rows(state)[-CHARTED_BATCHES - 1:]  # the charts' and the header's: bounded
            self._seen = seen
            self.refreshes += 1
            self._draw(state)
            return True

    # -- drawing ---------------------------------------------------------------------------------------------

    def _draw(self, state: JobState) -> None:
        phase = self.job.phase if self.job is not None else state.phase or state.status
        failure = state.failure if phase == "failed" or state.status == "failed" else None
        if self.job is not None and self.job.phase == "failed" and self.job.exception is not None:
            failure = error_summary(self.job.exception)
        self.status = {"job": self.name, "phase": phase, "watermark": state.latest_watermark,
                       "batches": len(state.batches), "last": self.metrics[-1] if self.metrics else None,
                       "failure": failure, "read_only": not self.live}
        self.header.value = header_html(self.status)
        self.charts.value = chart_svg(self.metrics)
        paths = list_savepoints(self.root) if "://" not in self.root else []
        self.savepoints.value = ("savepoints: " + ", ".join(f"<code>{p}</code>" for p in paths)) if paths else ""
        for button in self.buttons:
            button.disabled = not self.live
        self._draw_results()

    def _draw_results(self) -> None:
        with self._lock:
            columns = self.results.columns
            options = [_BY_KEY, *columns] if self.results.key_names else [_BY_KEY]
            if list(self.sort_pick.options) != options:
                # options and value in one message: sent apart, a front end answers the new options with the
                # first one's index and the chosen column is lost (seen in JupyterLab, tests/browser)
                with self.sort_pick.hold_sync():
                    self.sort_pick.options = options
                    if self.sort in columns:
                        self.sort_pick.value = self.sort
            mode, n = Mode(self.mode_pick.value), self.count.value
            if mode is Mode.UPDATE:
                column = None if self.sort_pick.value == _BY_KEY else self.sort_pick.value
                rows = self.results.top(column, n)
                caption = (f"latest row of {len(rows)} of {len(self.results.latest):,} keys"
                           + (f", top by {column}" if column else ""))
                self.result_chart.value = result_chart_svg(rows, column, self.results.key_names)
            else:
                rows, caption = self.results.recent(n), f"newest {n} changelog rows"
                self.result_chart.value = ""
            self.table.value = table_html([*columns, "batch"], rows, caption)

    def _say(self, text: str) -> None:
        self.message_text = text
        self.message.value = f"<span>{html.escape(text)}</span>"

    # -- the buttons: the job's own API ---------------------------------------------------------------------

    def _in_thread(self, action) -> None:
        threading.Thread(target=action, name=f"fw-job-view-action {self.name}", daemon=True).start()

    def _act(self, what: str, action):
        """Run ``action`` (the job's API); a refusal or failure is one line in the view; then redraw."""
        if self.job is None:
            self._say(f"{what}: the job is not running in this kernel (a read-only view)")
            return None
        for button in self.buttons:
            button.disabled = True
        try:
            return action()
        except FwMagicsError as error:
            self._say(f"{what} refused: {error}")
        except Exception as error:
            self._say(f"{what} failed: {error_summary(error)}")
        finally:
            self._wake.set()
            try:
                self.refresh(force=True)
            except Exception as error:
                self._say(f"view not updated: {error_summary(error)}")
        return None

    def stop(self) -> None:
        """``job.stop()``."""
        self._act("stop", lambda: self.job.stop())
        if self.job is not None and self.job.phase in ENDED:
            self._say(f"job {self.name!r} {self.job.phase}")

    def savepoint(self) -> str | None:
        """``job.savepoint()``: its path, also said in the view."""
        path = self._act("savepoint", lambda: self.job.savepoint())
        if path:
            self._say(f"savepoint written: {path}")
        return path

    def stop_with_savepoint(self) -> str | None:
        """``job.savepoint()``, then ``job.stop()``: a micro-batch that commits between the two is read again
        by a job restored from the savepoint (its position is the savepoint's)."""
        def both():
            path = self.job.savepoint()
            self.job.stop()
            return path

        path = self._act("stop with savepoint", both)
        if path:
            self._say(f"savepoint written: {path}; job {self.job.phase}")
        return path

    def _unhook(self) -> None:
        for hook in self._hooks:
            hook.unregister()
        self._hooks = []

    def close(self) -> None:
        """Stop following the job (the job goes on)."""
        self._closed.set()
        self._wake.set()
        self._unhook()
        super().close()
