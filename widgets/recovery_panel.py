"""RecoveryPanel: the jobs in a job directory, each one's event log replayed step by step."""

from __future__ import annotations

import html
import os
import threading

import ipywidgets as W

from fw_magics.connectors.registry import kept_on_server
from fw_magics.datastream.datastream import DataStream
from fw_magics.datastream.job_graph import build_graph
from fw_magics.errors import Interrupted, JobLockedError, ResumeError, error_summary
from fw_magics.graph.render import counted
from fw_magics.recovery.jobs import Job, discard, find_jobs, read_job
from fw_magics.spark.actions import Scope

from .graph_view import GraphView
from .model import describe_event

RESUMABLE = ("interrupted", "failed", "cancelled")


def _absolute(path: str) -> str:
    return os.path.abspath(path) if "://" not in path else path


def _namespace() -> dict:
    try:
        from IPython import get_ipython
    except ImportError:
        return {}
    shell = get_ipython()
    return shell.user_ns if shell is not None else {}


def kept(job: Job) -> str | None:
    """What a streaming job that is not running keeps on a server (a CDC job's replication slot), or None."""
    if not job.streaming or job.status in ("running", "damaged"):
        return None
    try:
        return kept_on_server(job.state.source, job.root)
    except Exception:  # a damaged position file: the panel still lists the job
        return None


def find_stream(namespace: dict, job: Job):
    """A DataStream in ``namespace`` whose job graph is the one recorded for ``job``, or None."""
    candidates = [v for v in namespace.values() if isinstance(v, DataStream)]
    candidates.sort(key=lambda s: s.name != job.name)  # same-named streams first
    for stream in candidates:
        try:
            if build_graph(stream).fingerprint() == job.state.fingerprint:
                return stream
        except Exception:  # a stream that cannot be planned is simply not this job's
            continue
    return None


class RecoveryPanel(W.VBox):
    """Jobs with their state: those in ``job_dir`` and (``elsewhere``) the jobs this kernel ran
    and those in the user's job index (``fw_magics.recovery.index``).

    ``job_dir`` defaults to ``$FW_JOB_DIR`` or ``.fw-jobs``. ``elsewhere`` defaults to True when
    no ``job_dir`` is given (``%fw_recover``) and to False when one is (``%fw_recover DIR``
    looks in DIR only). Pick a job to step or scrub through its
    event timeline while the graph colours its vertices in step; see which subtasks a resume
    keeps and which it re-runs; Resume it when its DataStream is defined in this kernel (the
    button turns into Stop while the resume runs); Discard it after a confirmation.
    """

    def __init__(self, job_dir: str | None = None, namespace: dict | None = None, elsewhere: bool | None = None):
        from fw_magics.recovery.paths import default_job_dir

        self.elsewhere = job_dir is None if elsewhere is None else elsewhere
        self.job_dir = job_dir or default_job_dir()
        self.namespace = namespace if namespace is not None else _namespace()
        self.job: Job | None = None
        self.found: list[Job] = []
        self._scope: Scope | None = None  # the running resume's, while the button is Stop
        self._worker: threading.Thread | None = None
        self.graph_view: GraphView | None = None
        self.title = W.HTML()
        self.jobs = W.Select(options=[], rows=5, layout=W.Layout(width="520px"))
        self.jobs.add_class("fw-jobs")
        self.filter = W.Text(placeholder="filter: part of a name, status or folder", continuous_update=True,
                             layout=W.Layout(width="520px"))
        self.filter.add_class("fw-jobs-filter")
        self.refresh_button = W.Button(description="Refresh", icon="refresh")
        self.status = W.HTML()
        self.status.add_class("fw-job-status")
        self.step = W.IntSlider(value=0, min=0, max=0, description="event", continuous_update=True,
                                layout=W.Layout(width="520px"))
        self.step.add_class("fw-timeline")
        self.play = W.Play(value=0, min=0, max=0, interval=400, description="replay")
        W.jslink((self.play, "value"), (self.step, "value"))
        self.back = W.Button(description="◀ step", layout=W.Layout(width="90px"))
        self.forward = W.Button(description="step ▶", layout=W.Layout(width="90px"))
        self.event = W.HTML()
        self.event.add_class("fw-event")
        self.graph_box = W.VBox()
        self.subtask_table = W.HTML()
        self.subtask_table.add_class("fw-subtasks")
        self.resume_button = W.Button(description="Resume", button_style="success", icon="play")
        self.resume_button.add_class("fw-resume")
        self.discard_button = W.Button(description="Discard…", button_style="danger", icon="trash")
        self.discard_button.add_class("fw-discard")
        self.message = W.HTML()
        self.message.add_class("fw-message")
        self.confirm_text = W.HTML()
        self.confirm_yes = W.Button(description="Yes, discard it", button_style="danger")
        self.confirm_yes.add_class("fw-discard-yes")
        self.confirm_no = W.Button(description="Cancel")
        self.confirm = W.HBox([self.confirm_text, self.confirm_yes, self.confirm_no],
                              layout=W.Layout(display="none"))
        self.refresh_button.on_click(lambda _: self.refresh())
        self.filter.observe(lambda _: self._list(), "value")
        self.jobs.observe(lambda change: self.open_job(change["new"]) if change["new"] else None, "value")
        self.step.observe(lambda change: self._show_step(change["new"]), "value")
        self.back.on_click(lambda _: self._move(-1))
        self.forward.on_click(lambda _: self._move(+1))
        self.resume_button.on_click(lambda _: self._resume_or_stop())
        self.discard_button.on_click(lambda _: self._ask_discard())
        self.confirm_yes.on_click(lambda _: self.discard())
        self.confirm_no.on_click(lambda _: self._hide_confirm())
        self.detail = W.VBox([
            self.status, W.HBox([self.play, self.back, self.step, self.forward]), self.event, self.graph_box,
            self.subtask_table, W.HBox([self.resume_button, self.discard_button]), self.confirm,
        ])
        self.stream = self.result = None
        super().__init__([self.title, W.HBox([W.VBox([self.filter, self.jobs]), self.refresh_button]), self.detail,
                          self.message])
        self.add_class("fw-recovery-panel")
        self.refresh()

    # -- the list of jobs -----------------------------------------------------------------------

    def refresh(self) -> None:
        """Re-read where the jobs are and the open job's log."""
        found = find_jobs(self.job_dir, self.elsewhere)
        here = [job for job in found.jobs if self._here(job)]  # this folder's first, the rest by folder
        self.found = here + sorted((job for job in found.jobs if not self._here(job)),
                                   key=lambda job: (os.path.dirname(job.root), job.name))
        self.title.value = self._title_html(found.looked, len(found.jobs))
        current = self.job.root if self.job is not None else None
        keys = self._keys()
        self._list()
        if not self.found:
            self.job = None
            self.detail.layout.display = "none"
            return
        listed = [value for _, value in self.jobs.options]
        target = keys.get(current) if keys.get(current) in listed else (listed[0] if listed else None)
        if target is None:  # the filter hides every job
            return
        if self.jobs.value != target:
            self.jobs.value = target  # opens it (open_job)
        else:
            self.open_job(target)

    def _keys(self) -> dict[str, str]:
        """Each listed job's value in the list: its name, or its folder where names repeat."""
        names = [job.name for job in self.found]
        return {job.root: job.name if names.count(job.name) == 1 else job.root for job in self.found}

    def _list(self) -> None:
        """The list shows the jobs whose label holds the filter's text (any case); the open job stays listed."""
        keys, wanted = self._keys(), self.filter.value.strip().lower()
        labels = [(self._label(job), keys[job.root]) for job in self.found]
        self.jobs.options = [(label, key) for label, key in labels
                             if wanted in label.lower() or (self.job is not None and key == keys.get(self.job.root))]

    def _here(self, job: Job) -> bool:
        """Whether ``job`` is in the panel's own folder."""
        parent = job.root.rsplit("/", 1)[0]
        return parent.rstrip("/") == self.job_dir.rstrip("/") or parent == _absolute(self.job_dir)

    def _label(self, job: Job) -> str:
        label = job.label()
        held = kept(job)
        label = f"{label}; {held.split(', which', 1)[0]}" if held else label
        return label if self._here(job) else f"{label} (in {job.root.rsplit('/', 1)[0]})"

    def _title_html(self, looked, count: int) -> str:
        def place(where: str, n: int) -> str:
            if where == "this kernel's runs":
                return f"{n} more run in this kernel" if n else "none other run in this kernel"
            if where.endswith(".json"):
                return f"{n} more in your job index <code>{html.escape(where)}</code>"
            return f"{n} in <code>{html.escape(where)}</code>"

        head = f"<b>Jobs</b>: {count} found" + ("" if count else " (run ds.execute() to record one)")
        return (f"{head}<div class='fw-looked'>Looked in: "
                + "; ".join(place(where, n) for where, n in looked) + ".</div>")

    def open_job(self, key: str) -> None:
        """Show one job (by name, or by its folder): status, timeline at its end, graph, subtasks, Resume."""
        job = self._find(key)
        if job is None:
            raise ResumeError(f"no job {key!r} here; listed: {', '.join(j.name for j in self.found) or 'none'}")
        keys = self._keys()
        if self.jobs.value != keys[job.root]:
            self.jobs.value = keys[job.root]  # the list follows, and calls back here
            return
        self.detail.layout.display = None
        self.job = job = read_job(job.root, job.name)
        graph = job.graph
        name = job.name
        self.graph_view = GraphView(graph, title=f"job {name!r}", follow=False) if graph is not None else None
        self.graph_box.children = [self.graph_view] if self.graph_view is not None else []
        self.status.value = self._status_html(job)
        self.step.max = self.play.max = len(job.events)
        self.step.value = len(job.events)
        self._show_step(len(job.events))
        self.subtask_table.value = self._subtasks_html(job)
        self._update_resume()
        self._hide_confirm()

    def _find(self, key: str) -> Job | None:
        by_root = {job.root: job for job in self.found}
        if key in by_root:
            return by_root[key]
        return next((job for job in self.found if job.name == key), None)

    def _status_html(self, job: Job) -> str:
        words = {
            "finished": "finished: every subtask's result is committed",
            "failed": "failed (its last event is job_failed)",
            "running": f"running now in pid {job.holder.get('pid') if job.holder else '?'}",
            "interrupted": "interrupted: the process running it died before the job ended",
            "cancelled": "cancelled: stopped by the user (Kernel > Interrupt or Stop), or its process exited (a "
                         "kernel restart), before it ended",
            "stopped": "stopped: job.stop(), or the end of an available_now run; start() continues it",
            "damaged": f"damaged: {job.problem}",
        }[job.status]
        stream = ""
        if job.streaming:
            from .stream_status import moment, stream_status

            s = stream_status(job.state)
            switch = "" if s["watermark"] is None else f", switched at W = {moment(s['watermark'])}"
            stream = (f"<div class='fw-stream-summary'>streaming job, {html.escape(str(s['mode']))} mode: "
                      f"phase {html.escape(str(s['phase']))}{html.escape(switch)}, "
                      f"{counted(len(s['batches']), 'micro-batch', 'micro-batches')}</div>")
            held = kept(job)
            if held:
                stream += f"<div class='fw-kept'>This job {html.escape(held)}.</div>"
        return (f"<span class='fw-status' data-status='{job.status}'><b>{html.escape(job.name)}</b>: "
                f"{html.escape(words)}</span> ({len(job.events)} events in {html.escape(job.root)}){stream}")

    @staticmethod
    def _subtasks_html(job: Job) -> str:
        """What a resume keeps and re-runs: counts for the whole job, rows for the first subtasks.

        Bounded (``Job.overview``): each of the first job vertices lists its first subtasks and
        says how many more it has and how many of those re-run; later vertices are counted in
        one line. A job of a million subtasks gives a table of a few hundred rows.
        """
        overview = job.overview()
        head = (f"<div class='fw-subtask-summary'>A resume keeps <b>{overview.keep:,}</b> and re-runs "
                f"<b>{overview.rerun:,}</b> of {overview.subtasks:,} subtasks.</div>")
        cells = []
        for group in overview.groups:
            cells += [
                f"<tr data-verdict='{html.escape(r['verdict'].split(':')[0])}'><td>{r['vertex']}[{r['subtask']}]</td>"
                f"<td>{html.escape(r['operators'])}</td><td>{html.escape(r['verdict'])}</td>"
                f"<td>{html.escape(r['files'] or '-')}</td><td>{'' if r['records'] is None else html.escape(str(r['records']))}"
                "</td></tr>"
                for r in group.rows]
            if group.more:
                cells.append(_more_row(f"{group.more:,} more subtask{'s' * (group.more != 1)} of {group.vertex} "
                                       f"({group.operators})", group.more, group.more_rerun))
        if overview.hidden:
            cells.append(_more_row(f"{overview.hidden:,} more job vertices, {overview.hidden_subtasks:,} subtasks",
                                   overview.hidden_subtasks, overview.hidden_rerun))
        return (head + "<table><tr><th>subtask</th><th>operators</th><th>on resume</th><th>result file</th>"
                f"<th>records</th></tr>{''.join(cells)}</table>")

    # -- the timeline ------------------------------------------------------------------------------

    def _move(self, delta: int) -> None:
        self.step.value = max(0, min(self.step.max, self.step.value + delta))

    def _show_step(self, k: int) -> None:
        """Replay the first ``k`` events: the graph shows the state they leave the job in."""
        if self.job is None:
            return
        events = self.job.events[:k]
        if self.graph_view is not None:
            self.graph_view.show_events(events)
            if self.job.streaming:  # a streaming job: its phases
                from .stream_status import stream_status

                self.graph_view.show_stream(stream_status(events))
        self.event.value = (f"<code>{k}/{len(self.job.events)}</code> "
                            + (html.escape(describe_event(events[-1])) if events else "before the first event"))

    # -- resume and discard ----------------------------------------------------------------------------

    def _update_resume(self) -> None:
        job = self.job
        self.stream = find_stream(self.namespace, job) if job.status in RESUMABLE and not job.streaming else None
        if self._worker is None:
            self.resume_button.disabled = self.stream is None
        if job.status in ("finished", "running"):
            self.message.value = f"Nothing to resume: the job is {job.status}."
        elif job.status == "damaged":
            self.message.value = html.escape(
                f"The panel cannot resume this job: {job.problem}. Run the cell that builds its DataStream with "
                f"execute(job_name={job.name!r}, resume='repair') to re-derive the graph from it and keep the "
                "finished work, or with resume='never' (or Discard) to start afresh.")
        elif job.streaming:
            cell = job.cell
            where = (f" It was started from the cell:<pre>{html.escape(cell.strip()[:600])}</pre>" if cell else "")
            self.message.value = (f"A streaming job continues where it got to when its <code>start()</code> runs again "
                                  f"with job_name={html.escape(repr(job.name))} (a changed function is refused; "
                                  f"reset=True, or Discard, starts it afresh).{where}")
        elif self.stream is None:
            cell = job.cell
            where = (f" It was submitted from the cell:<pre>{html.escape(cell.strip()[:600])}</pre>" if cell else "")
            self.message.value = (f"To resume, define the job's DataStream in this kernel (run the cell that "
                                  f"builds it), then press Refresh.{where}")
        else:
            self.message.value = (f"Resume runs <code>{html.escape(self.stream.name)}</code>.execute(job_dir=..., "
                                  f"job_name={job.name!r}): only the subtasks marked re-run; Stop cancels it.")

    def resume(self):
        """Resume the open job with the matching DataStream of this kernel; returns its JobResult.

        Runs in the calling thread (the Resume button runs it in a thread of its own, so that
        the button can stop it). Stopped (``Interrupted``), the job is cancelled and can be
        resumed again later.
        """
        if self.job is None or self.stream is None:
            raise ResumeError("nothing to resume here: " + (self.message.value or "no job selected"))
        job = self.job
        if self._worker is None:
            self.resume_button.disabled = True
        self.message.value = f"Resuming {html.escape(job.name)}…"
        try:
            result = self.stream.execute(job_dir=job.root.rsplit("/", 1)[0], job_name=job.name, resume="require")
        except Interrupted as stop:
            self.refresh()
            self.message.value = (f"<span class='fw-resume-stopped'>Stopped: {html.escape(str(stop))}. "
                                  "What finished is kept; Resume goes on from there.</span>")
            raise
        except Exception as error:
            self.refresh()  # the log now has the failed attempt; then say why, over refresh's hint
            self.message.value = (f"<span class='fw-resume-failed'>Resume failed: "
                                  f"{html.escape(error_summary(error))}</span>")
            raise
        self.refresh()
        self.message.value = (f"<span class='fw-resumed'>Resumed: {len(result.ran)} execution vertices ran, "
                              f"{len(result.recovered)} recovered; the job is finished.</span>")
        self.result = result
        return result

    @property
    def running(self) -> bool:
        """Whether a resume started by the button is running (the button shows Stop)."""
        return self._worker is not None

    def _resume_or_stop(self) -> None:
        if self._worker is not None:
            self.stop()
        else:
            self._start_resume()

    def _start_resume(self) -> None:
        """The Resume button: resume in a thread, the button turned into Stop until it ends."""
        if self.job is None or self.stream is None:
            return
        scope = self._scope = Scope()

        def work():
            try:
                with scope:
                    self.resume()
            except BaseException:  # resume() has said what happened in the panel
                pass
            finally:
                self._worker = self._scope = None
                self._button_resumes()

        self._worker = threading.Thread(target=work, name="fw-magics resume", daemon=True)
        self.resume_button.description, self.resume_button.icon = "Stop", "stop"
        self.resume_button.button_style, self.resume_button.disabled = "danger", False
        self.resume_button.add_class("fw-stop")
        self._worker.start()

    def stop(self) -> None:
        """Stop the resume the button started: its Spark jobs are cancelled at once."""
        scope = self._scope
        if scope is not None:
            self.message.value = "Stopping: cancelling its Spark jobs…"
            scope.cancel()

    def wait(self, timeout: float | None = None) -> bool:
        """Wait for a resume started by the button to end; True when none is running any more."""
        worker = self._worker
        if worker is not None:
            worker.join(timeout)
        return self._worker is None

    def _button_resumes(self) -> None:
        self.resume_button.remove_class("fw-stop")
        self.resume_button.description, self.resume_button.icon = "Resume", "play"
        self.resume_button.button_style = "success"
        self.resume_button.disabled = self.stream is None or self.job is None or self.job.status not in RESUMABLE

    def _ask_discard(self) -> None:
        files = sum(1 for event in self.job.state.finished.values() if event.get("files"))  # not per row: bounded
        self.confirm_text.value = (f"Delete job <b>{html.escape(self.job.name)}</b>, its event log and "
                                   f"{files} result files? This cannot be undone.")
        self.confirm.layout.display = None

    def _hide_confirm(self) -> None:
        self.confirm.layout.display = "none"

    def discard(self) -> None:
        """Delete the open job (the confirmation's Yes button)."""
        name = self.job.name
        try:
            discard(self.job)
        except JobLockedError as error:
            self.message.value = html.escape(str(error))
            return
        finally:
            self._hide_confirm()
        self.job = None
        self.refresh()
        self.message.value = f"Discarded {html.escape(name)}."


def _more_row(what: str, count: int, rerun: int) -> str:
    """The row standing for subtasks the table does not list: how many, and what a resume does with them."""
    return (f"<tr class='fw-more'><td colspan='5'>… {html.escape(what)}: a resume keeps {count - rerun:,} "
            f"and re-runs {rerun:,} of them</td></tr>")
