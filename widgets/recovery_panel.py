"""RecoveryPanel: the jobs in a job directory, each one's event log replayed step by step."""

from __future__ import annotations

import html

import ipywidgets as W

from fw_magics.errors import JobLockedError, ResumeError, error_summary
from fw_magics.recovery.jobs import Job, discard, list_jobs, read_job
from fw_magics.streams.datastream import DataStream
from fw_magics.streams.job_graph import build_graph

from .graph_view import GraphView
from .model import describe_event


def _namespace() -> dict:
    try:
        from IPython import get_ipython
    except ImportError:
        return {}
    shell = get_ipython()
    return shell.user_ns if shell is not None else {}


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
    """Jobs found in ``job_dir`` (default: ``$FW_JOB_DIR`` or ``.fw-jobs``) with their state.

    Pick a job to step or scrub through its event timeline while the graph colours its
    vertices in step; see which subtasks a resume keeps and which it re-runs; Resume it when
    its DataStream is defined in this kernel; Discard it after a confirmation.
    """

    def __init__(self, job_dir: str | None = None, namespace: dict | None = None):
        from fw_magics.runtime.job import default_job_dir

        self.job_dir = job_dir or default_job_dir()
        self.namespace = namespace if namespace is not None else _namespace()
        self.job: Job | None = None
        self.graph_view: GraphView | None = None
        self.title = W.HTML()
        self.jobs = W.Select(options=[], rows=5, layout=W.Layout(width="520px"))
        self.jobs.add_class("fw-jobs")
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
        self.jobs.observe(lambda change: self.open_job(change["new"]) if change["new"] else None, "value")
        self.step.observe(lambda change: self._show_step(change["new"]), "value")
        self.back.on_click(lambda _: self._move(-1))
        self.forward.on_click(lambda _: self._move(+1))
        self.resume_button.on_click(lambda _: self.resume())
        self.discard_button.on_click(lambda _: self._ask_discard())
        self.confirm_yes.on_click(lambda _: self.discard())
        self.confirm_no.on_click(lambda _: self._hide_confirm())
        self.detail = W.VBox([
            self.status, W.HBox([self.play, self.back, self.step, self.forward]), self.event, self.graph_box,
            self.subtask_table, W.HBox([self.resume_button, self.discard_button]), self.confirm,
        ])
        self.stream = self.result = None
        super().__init__([self.title, W.HBox([self.jobs, self.refresh_button]), self.detail, self.message])
        self.add_class("fw-recovery-panel")
        self.refresh()

    # -- the list of jobs -----------------------------------------------------------------------

    def refresh(self) -> None:
        """Re-read the job directory and the open job's log."""
        found = list_jobs(self.job_dir)
        self.title.value = (f"<b>Jobs in {html.escape(self.job_dir)}</b>: {len(found)} found"
                            + ("" if found else " (run ds.execute() to record one)"))
        current = self.job.name if self.job is not None else None
        names = [job.name for job in found]
        self.jobs.options = [(job.label(), job.name) for job in found]
        if not names:
            self.job = None
            self.detail.layout.display = "none"
            return
        target = current if current in names else names[0]
        if self.jobs.value != target:
            self.jobs.value = target  # opens it (open_job)
        else:
            self.open_job(target)

    def open_job(self, name: str) -> None:
        """Show one job: status, timeline at its end, graph, subtasks, what Resume would do."""
        self.detail.layout.display = None
        self.job = job = read_job(f"{self.job_dir.rstrip('/')}/{name}", name)
        graph = job.graph
        self.graph_view = GraphView(graph, title=f"job {name!r}", follow=False) if graph is not None else None
        self.graph_box.children = [self.graph_view] if self.graph_view is not None else []
        self.status.value = self._status_html(job)
        self.step.max = self.play.max = len(job.events)
        self.step.value = len(job.events)
        self._show_step(len(job.events))
        self.subtask_table.value = self._subtasks_html(job)
        self._update_resume()
        self._hide_confirm()

    def _status_html(self, job: Job) -> str:
        words = {
            "finished": "finished: every subtask's result is committed",
            "failed": "failed (its last event is job_failed)",
            "running": f"running now in pid {job.holder.get('pid') if job.holder else '?'}",
            "interrupted": "interrupted: the process running it died before the job ended",
            "damaged": f"damaged: {job.problem}",
        }[job.status]
        return (f"<span class='fw-status' data-status='{job.status}'><b>{html.escape(job.name)}</b>: "
                f"{html.escape(words)}</span> ({len(job.events)} events in {html.escape(job.root)})")

    @staticmethod
    def _subtasks_html(job: Job) -> str:
        rows = job.subtasks()
        keep = sum(r["verdict"].startswith("keep") for r in rows)
        head = (f"<div class='fw-subtask-summary'>A resume keeps <b>{keep}</b> and re-runs "
                f"<b>{len(rows) - keep}</b> of {len(rows)} subtasks.</div>")
        cells = "".join(
            f"<tr data-verdict='{html.escape(r['verdict'].split(':')[0])}'><td>{r['vertex']}[{r['subtask']}]</td>"
            f"<td>{html.escape(r['operators'])}</td><td>{html.escape(r['verdict'])}</td>"
            f"<td>{html.escape(r['files'] or '-')}</td><td>{'' if r['records'] is None else r['records']}</td></tr>"
            for r in rows)
        return (head + "<table><tr><th>subtask</th><th>operators</th><th>on resume</th><th>result file</th>"
                f"<th>records</th></tr>{cells}</table>")

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
        self.event.value = (f"<code>{k}/{len(self.job.events)}</code> "
                            + (html.escape(describe_event(events[-1])) if events else "before the first event"))

    # -- resume and discard ----------------------------------------------------------------------------

    def _update_resume(self) -> None:
        job = self.job
        self.stream = find_stream(self.namespace, job) if job.status in ("interrupted", "failed") else None
        self.resume_button.disabled = self.stream is None
        if job.status in ("finished", "running"):
            self.message.value = f"Nothing to resume: the job is {job.status}."
        elif job.status == "damaged":
            self.message.value = html.escape(
                f"The panel cannot resume this job: {job.problem}. Run the cell that builds its DataStream with "
                f"execute(job_name={job.name!r}, resume='repair') to re-derive the graph from it and keep the "
                "finished work, or with resume='never' (or Discard) to start afresh.")
        elif self.stream is None:
            cell = job.cell
            where = (f" It was submitted from the cell:<pre>{html.escape(cell.strip()[:600])}</pre>" if cell else "")
            self.message.value = (f"To resume, define the job's DataStream in this kernel (run the cell that "
                                  f"builds it), then press Refresh.{where}")
        else:
            self.message.value = (f"Resume runs <code>{html.escape(self.stream.name)}</code>.execute(job_dir=..., "
                                  f"job_name={job.name!r}): only the subtasks marked re-run.")

    def resume(self):
        """Resume the open job with the matching DataStream of this kernel; returns its JobResult."""
        if self.job is None or self.stream is None:
            raise ResumeError("nothing to resume here: " + (self.message.value or "no job selected"))
        job = self.job
        self.resume_button.disabled = True
        self.message.value = f"Resuming {html.escape(job.name)}…"
        try:
            result = self.stream.execute(job_dir=self.job_dir, job_name=job.name, resume="require")
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

    def _ask_discard(self) -> None:
        files = sum(1 for r in self.job.subtasks() if r["files"])
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
