"""How an unbounded stream shows itself as a cell's value: what it reads, its schema, its event time, what is
there to read now (the backlog a job starting now would take) and how to start it; no Spark job runs.

A bounded stream shows a preview of each partition (``preview``); an unbounded one cannot: Spark refuses to
collect a streaming DataFrame ("Queries with streaming sources must be executed with writeStream.start()"),
and what there is to read keeps growing. The source says in its own words what it reads and what is there
(``connectors.base.OneInput.reads_in_words``, ``there_now``).
"""

from __future__ import annotations

import html
from dataclasses import dataclass


@dataclass(frozen=True)
class Summary:
    """The lines an unbounded stream shows: a title, then (label, text) pairs."""

    title: str
    lines: tuple[tuple[str, str], ...]


def summary(stream) -> Summary:
    """What ``stream`` (unbounded) shows: asked of its source, nothing read but a listing or a table's bounds."""
    from ..connectors.registry import source_for

    first = stream.step.lineage()[0]
    source = source_for(first.detail, stream.schema) if len(stream.step.lineage()) == 1 else None
    schema = ", ".join(f"{f.name}: {f.dataType.simpleString()}" for f in stream.schema.fields)
    lines = [("schema", schema)]
    if source is None:
        lines.insert(0, ("reads", f"a streaming DataFrame ({first.detail.get('source', 'derived')})"))
        lines.append(("to run it", "it has no source with a backlog for start(): run its DataFrame with Spark's own "
                                   "writeStream (.to_dataframe().writeStream...), or read the data with "
                                   "fw.from_files(...) or fw.from_table(...)"))
        return Summary(f"DataStream {stream.name!r}: unbounded, nothing runs until it is started", tuple(lines))
    lines.insert(0, ("reads", source.reads_in_words()))
    if source.event_time is not None:
        late = "dropped and counted" if source.on_late == "drop" else "fail the job"
        lines.append(("event time", f"{source.event_time}, watermark {_duration(source.delay_ms)} behind the "
                                    f"greatest seen; late records {late}"))
    now = source.there_now()
    if not source.has_backlog:
        lines.append(("backlog", "none (backlog=False): a job reads what is there as a stream from the first record"
                                 + (f"; there now: {now}" if now else "")))
    elif now is not None:
        lines.append(("backlog", f"{now} there now; a job's first start takes what is there then as its backlog "
                                 "(recorded, read as a batch), then reads what comes after as a stream"))
    lines.append(("to start it", ".key_by('<column>').reduce(fn) (or .aggregate(fn), .process(fn)), or .process(fn) "
                                 "without a key, then .start(); or a %%fwstream cell (%%fwstream? lists its words)"))
    lines.append(("its records", "a job's results: job.latest(), job.changelog(); as a Spark DataFrame: "
                                 ".to_dataframe() (streaming)"))
    return Summary(f"DataStream {stream.name!r}: unbounded, nothing runs until it is started", tuple(lines))


def _duration(ms: int) -> str:
    for unit, size in (("days", 86_400_000), ("hours", 3_600_000), ("minutes", 60_000), ("seconds", 1000)):
        if ms and ms % size == 0:
            return f"{ms // size:,} {unit[:-1] if ms == size else unit}"
    return f"{ms:,} ms"


def render_text(shown: Summary) -> str:
    width = max(len(label) for label, _ in shown.lines)
    return "\n".join([shown.title] + [f"  {label.ljust(width)}  {text}" for label, text in shown.lines])


def render_html(shown: Summary) -> str:
    esc = html.escape
    rows = "".join(f'<tr><th style="text-align:left;vertical-align:top">{esc(label)}</th>'
                   f'<td style="text-align:left">{esc(text)}</td></tr>' for label, text in shown.lines)
    return f'<div class="fw-stream fw-unbounded"><p><b>{esc(shown.title)}</b></p><table>{rows}</table></div>'


def mimebundle(stream) -> dict[str, str]:
    """text/plain and text/html of an unbounded stream."""
    shown = summary(stream)
    return {"text/plain": render_text(shown), "text/html": render_html(shown)}
