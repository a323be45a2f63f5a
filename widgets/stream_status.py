"""What a streaming job's graph view shows: its phase, backlog progress, the switch, micro-batches.

Pure Python over the job's events (``fw_magics.recovery.events``), the same whether they come
live through the runtime hooks or are read back from the event log, so a view of a finished or
killed job shows what a live one showed.
"""

from __future__ import annotations

import datetime as dt
import html

from fw_magics.graph.render import counted
from fw_magics.recovery.replay import JobState, replay

#: how many of the latest micro-batches the panel lists
SHOWN_BATCHES = 5


def stream_status(events, tasks=None) -> dict:
    """The state a streaming job's events (or their ``JobState``, ``fw_magics.recovery.replay``) leave it in.

    ``tasks``: the backlog batch job's Spark tasks ``(done, total)`` while it runs (the
    ``backlog_progress`` hook), which the events do not carry. Keys: ``job``, ``mode``, ``phase``,
    ``runs``, ``backlog_files`` or ``backlog_rows``, ``backlog_done`` (subtasks committed), ``subtasks``, ``tasks``,
    ``watermark`` (W, epoch ms), ``state_writes``, ``batches`` (the micro-batch events), ``cause``,
    ``restarts`` (by the job's restart strategy, this start) and ``failure`` (the last one restarted from).
    """
    job = events if isinstance(events, JobState) else replay(events)
    position = job.backlog or {}
    return {"job": job.job, "mode": job.mode, "phase": job.phase, "runs": job.runs,
            "backlog_files": position.get("files"), "backlog_rows": position.get("rows"),
            "backlog_done": len({subtask for _, subtask in job.finished}), "subtasks": job.stream_parallelism,
            "tasks": tasks if job.phase == "backlog" else None, "watermark": job.latest_watermark,
            "state_writes": job.state_writes, "batches": list(job.batches.values()), "cause": job.phase_cause,
            "restarts": job.restarts, "failure": job.failure}


def moment(ms) -> str:
    """Epoch milliseconds as a UTC time, or "none"."""
    if ms is None:
        return "none"
    stamp = dt.datetime(1970, 1, 1, tzinfo=dt.timezone.utc) + dt.timedelta(milliseconds=ms)
    return stamp.strftime("%Y-%m-%d %H:%M:%S.%f")[:-3] + " UTC"


def _backlog_text(status) -> str:
    files, rows = status["backlog_files"], status["backlog_rows"]
    of = f" of {files:,} files" if files is not None else f" of {rows:,} rows" if rows is not None else ""
    if status["phase"] == "backlog":
        if status["tasks"] is not None:
            return f"backlog{of}: {status['tasks'][0]:,}/{status['tasks'][1]:,} tasks"
        subtasks = status["subtasks"]
        return f"backlog{of}: {status['backlog_done']:,}/{subtasks if subtasks is not None else '?'} subtasks"
    if status["mode"] == "stream":
        return "no backlog (plain stream)"
    return f"backlog done{of}" if status["backlog_done"] else "backlog"


def operator_states(graph, status) -> dict:
    """operator -> {"state", "text"} for the canvas: source(s), keyed operator(s), sink(s)."""
    phase = status["phase"]
    targets, origins = {e.target for e in graph.edges}, {e.source for e in graph.edges}
    sources = {op.name for op in graph.operators if op.name not in targets}
    sinks = {op.name for op in graph.operators if op.name not in origins} - sources
    batches = status["batches"]
    last = batches[-1] if batches else None
    ended = {"finished": "finished", "stopped": "finished", "failed": "failed"}
    out = {}
    for op in graph.operators:
        if op.name in sources:
            state = "running" if phase in ("backlog", "stream", "switching") else ended.get(phase, "pending")
            text = _backlog_text(status) if phase in ("backlog", "switching") else (
                "fresh files" if phase == "stream" else _backlog_text(status))
        elif op.name in sinks:
            state = "running" if phase == "stream" else ended.get(phase, "pending")
            text = (f"micro-batch {last['batch']}: {last['input_rows']:,} rows in" if last
                    else ("backlog results" if status["backlog_done"] else "no output yet"))
        else:
            state = "running" if phase in ("backlog", "switching", "stream") else ended.get(phase, "pending")
            text = f"phase {phase or '?'}"
            if status["watermark"] is not None and phase != "backlog":
                text += f" · W {moment(status['watermark'])}"
            if last is not None:
                text += f" · {last['state_rows_updated']:,} state rows"
        out[op.name] = {"state": state, "text": text}
    return out


def _ms(value) -> str:
    return "" if value is None else f"{value:,}"


def panel_html(status) -> str:
    """The live panel under the graph: phase, backlog progress, the switch, the latest micro-batches."""
    phase = status["phase"] or "not started"
    parts = [f"<b>phase</b> <span class='fw-stream-phase'>{html.escape(phase)}</span>"]
    if status["mode"]:
        parts.append(f"<b>mode</b> {html.escape(status['mode'])}")
    if status["runs"] > 1:
        parts.append(f"<b>started</b> {status['runs']} times")
    if status["restarts"]:
        times = "once" if status["restarts"] == 1 else f"{status['restarts']} times"
        parts.append(f"<b>restarted</b> {times} <span class='fw-stream-failure'>after "
                     f"{html.escape(str(status['failure']))}</span>")
    lines = [" &middot; ".join(parts)]
    if status["mode"] != "stream":
        total = (status["tasks"] or (None, None))[1] or status["subtasks"] or 1
        done = status["tasks"][0] if status["tasks"] else (
            status["backlog_done"] if phase == "backlog" else total if status["backlog_done"] else 0)
        lines.append(f"<span class='fw-stream-backlog'>{html.escape(_backlog_text(status))}</span> "
                     f"<progress max='{total}' value='{min(done, total)}'></progress>")
    if status["watermark"] is not None or status["state_writes"] is not None:
        writes = "" if status["state_writes"] is None else f", {status['state_writes']:,} state writes in backlog"
        lines.append(f"<span class='fw-stream-switch'>switch at W = {html.escape(moment(status['watermark']))}"
                     f"{writes}</span>")
    if status["cause"]:
        lines.append(f"<span class='fw-stream-cause'>{html.escape(str(status['cause']))}</span>")
    batches = status["batches"][-SHOWN_BATCHES:]
    if batches:
        rows = "".join(
            f"<tr><td>{b['batch']}</td><td>{b['input_rows']:,}</td><td>{b['state_rows_updated']:,}</td>"
            f"<td>{html.escape(moment(b.get('watermark')))}</td>"
            f"<td>{_ms(b.get('duration_ms'))}</td></tr>"
            for b in batches)
        lines.append("<table class='fw-stream-batches'><tr><th>micro-batch</th><th>input rows</th>"
                     f"<th>state rows</th><th>watermark</th><th>ms</th></tr>{rows}</table>"
                     f"<small>{counted(len(status['batches']), 'micro-batch', 'micro-batches')} in all</small>")
    return "<div class='fw-stream'>" + "<br>".join(lines) + "</div>"
