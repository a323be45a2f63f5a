"""What a running job's view (``job.show()``, ``widgets/job_view.py``) draws: pure Python, no Spark, no widget.

``Results`` folds committed changelog rows, micro-batch by micro-batch, into what the view lists: in update
mode each key's latest row (a key whose last row withdrew it has none), in append mode the newest rows.
Both are capped, so a view left open for hours holds bounded memory: ``KEPT_KEYS`` keys (the keys updated
least recently leave the view first, never the job) and ``KEPT_ROWS`` newest rows. ``table_html``,
``header_html`` and ``chart_svg`` turn rows and ``job.metrics()``'s rows (``recovery/metrics.py``) into HTML
and inline SVG: nothing to install, nothing fetched.
"""

from __future__ import annotations

import enum
import html
import numbers
from collections import OrderedDict, deque

from fw_magics.errors import FullWindowError
from fw_magics.operators.base import REMOVED

#: Keys whose latest row the view keeps (update mode), rows it keeps (append mode), micro-batches charted.
KEPT_KEYS = 10_000
KEPT_ROWS = 200
CHARTED_BATCHES = 30
#: Rows listed by default.
SHOWN = 20
KIND, BATCH = "kind", "batch"


#: The units a duration is said in, largest first (milliseconds each).
DURATION_UNITS = ((86_400_000, "days"), (3_600_000, "h"), (60_000, "min"), (1_000, "s"))


def duration_text(ms: float) -> str:
    """``ms`` in the largest unit of which it holds at least two, read at a glance: ``2.5 s``, ``2.5 min``,
    ``36.0 h``, ``1,064 days`` (a watermark gap over 2024's data was ``91,896,399.0 s``)."""
    for size, unit in DURATION_UNITS:
        if abs(ms) >= 2 * size or unit == "s":
            return f"{ms / size:,.0f} days" if unit == "days" else f"{ms / size:,.1f} {unit}"
    raise AssertionError("unreachable: seconds take any rest")


class Mode(enum.Enum):
    """How the view lists results: each key's latest row (``update``) or the newest changelog rows (``append``)."""

    UPDATE = "update"
    APPEND = "append"

    @classmethod
    def parse(cls, value, keyed: bool) -> Mode:
        accepted = ", ".join(repr(m.value) for m in cls if keyed or m is cls.APPEND)
        if isinstance(value, cls):
            mode = value
        else:
            try:
                mode = cls(value)
            except ValueError:
                raise FullWindowError(f"view mode {value!r:.40}; accepted: {accepted}") from None
        if mode is cls.UPDATE and not keyed:
            raise FullWindowError(f"view mode 'update' needs the job's key columns, which it does not know here; "
                             f"accepted: {accepted}")
        return mode


class Results:
    """The rows the view lists, taken one committed micro-batch at a time (``take``), in batch order."""

    def __init__(self, key_names=(), kept_keys: int = KEPT_KEYS, kept_rows: int = KEPT_ROWS):
        self.key_names = tuple(key_names)
        self.kept_keys = kept_keys
        self.latest: OrderedDict = OrderedDict()  # key tuple -> its latest row, least recently updated first
        self.newest: deque = deque(maxlen=kept_rows)
        self.last_batch: int | None = None  # the greatest batch taken: batches come in order, each once
        self.columns: list[str] = []

    def take(self, batch: int, rows: list[dict]) -> None:
        """One micro-batch's rows (the output columns and ``kind``), in their changelog order; a batch not
        after the last one taken is ignored (read twice, or committed again by a restarted query)."""
        if not self.wants(batch):
            return
        self.last_batch = batch
        for row in rows:
            if not self.columns:
                self.columns = [c for c in row if c != KIND]
            kept = {**row, BATCH: batch}
            self.newest.append(kept)
            if not self.key_names:
                continue
            key = tuple(row.get(k) for k in self.key_names)
            if row.get(KIND) == REMOVED:
                self.latest.pop(key, None)
                continue
            self.latest[key] = kept
            self.latest.move_to_end(key)
            if len(self.latest) > self.kept_keys:
                self.latest.popitem(last=False)

    def wants(self, batch: int) -> bool:
        return self.last_batch is None or batch > self.last_batch

    def top(self, column: str | None = None, n: int = SHOWN, descending: bool = True) -> list[dict]:
        """The latest rows of ``n`` keys: by ``column`` (nulls last), else the keys in order."""
        rows = list(self.latest.values())
        if column is None:
            return sorted(rows, key=lambda r: _order(tuple(r.get(k) for k in self.key_names)))[:n]
        present = [r for r in rows if r.get(column) is not None]
        present.sort(key=lambda r: _order(r[column]), reverse=descending)
        return (present + [r for r in rows if r.get(column) is None])[:n]

    def recent(self, n: int = SHOWN) -> list[dict]:
        """The ``n`` newest rows, newest first."""
        return list(reversed(self.newest))[:n]


def _order(value):
    """A sort key that never compares a number with a string or None."""
    if isinstance(value, tuple):
        return tuple(_order(v) for v in value)
    return (value is None, isinstance(value, str), value if value is not None else 0)


def _cell(value) -> str:
    if value is None:
        return "<td class='fw-null'>null</td>"
    if isinstance(value, float):
        return f"<td>{value:,.4g}</td>"
    return f"<td>{html.escape(str(value))[:80]}</td>"


def table_html(columns: list[str], rows: list[dict], caption: str = "") -> str:
    """An HTML table of ``rows`` under ``columns`` (every value escaped)."""
    head = "".join(f"<th>{html.escape(str(c))}</th>" for c in columns)
    body = "".join("<tr>" + "".join(_cell(row.get(c)) for c in columns) + "</tr>" for row in rows)
    cap = f"<caption>{html.escape(caption)}</caption>" if caption else ""
    empty = "" if rows else f"<tr><td colspan='{max(len(columns), 1)}'>no rows yet</td></tr>"
    return f"<table class='fw-job-results'>{cap}<thead><tr>{head}</tr></thead><tbody>{body}{empty}</tbody></table>"


def batches_text(n: int) -> str:
    """'1 micro-batch', '2 micro-batches'."""
    return f"{n:,} micro-batch{'' if n == 1 else 'es'}"


def header_html(status: dict) -> str:
    """The job's name, phase, W, lag and micro-batches; its failure's one line; 'read-only' when it is."""
    from .stream_status import moment

    last = status.get("last") or {}
    lag = [f"{last[k]:,} {k.split('_')[0]} behind" for k in ("files_behind", "rows_behind") if last.get(k) is not None]
    parts = [f"<b>{html.escape(str(status.get('job')))}</b>", f"phase <b class='fw-phase'>{status.get('phase')}</b>",
             f"W {moment(status.get('watermark'))}", batches_text(status.get("batches", 0)),
             "lag: " + (", ".join(lag) if lag else "unknown" if last else "none yet")]
    if last.get("watermark_gap_ms") is not None:
        parts.append(f"watermark gap {duration_text(last['watermark_gap_ms'])}")
    text = " · ".join(parts)
    if status.get("read_only"):
        text += " · <i>read-only (the job is not running in this kernel)</i>"
    failure = status.get("failure")
    if failure:
        text += f"<div class='fw-job-failure' style='color:#b00'>{html.escape(str(failure))}</div>"
    return f"<div class='fw-job-header'>{text}</div>"


# -- charts ------------------------------------------------------------------------------------------------

WIDTH, HEIGHT, PAD = 230, 90, 18
COLOURS = ("#1f77b4", "#ff7f0e")


def _polyline(values: list, top: float, colour: str) -> str:
    points = [(i, v) for i, v in enumerate(values) if v is not None]
    if not points:
        return ""
    step = (WIDTH - 2 * PAD) / max(len(values) - 1, 1)
    coords = " ".join(f"{PAD + i * step:.1f},{HEIGHT - PAD - (v / top if top else 0) * (HEIGHT - 2 * PAD):.1f}"
                      for i, v in points)
    return f"<polyline fill='none' stroke='{colour}' stroke-width='1.5' points='{coords}'/>"


def _panel(title: str, series: list[tuple[str, list]], bars: bool = False) -> str:
    values = [v for _, vs in series for v in vs if v is not None]
    top = max(values) if values else 0
    top = top if top > 0 else 1
    inner = ""
    if bars:
        counts = series[0][1] if series else []
        width = (WIDTH - 2 * PAD) / max(len(counts), 1)
        for i, count in enumerate(counts):
            h = (count or 0) / top * (HEIGHT - 2 * PAD)
            inner += (f"<rect x='{PAD + i * width + 1:.1f}' y='{HEIGHT - PAD - h:.1f}' width='{max(width - 2, 1):.1f}' "
                      f"height='{h:.1f}' fill='{COLOURS[0]}'><title>partition {i}: {count}</title></rect>")
    else:
        inner = "".join(_polyline(vs, top, COLOURS[i % 2]) for i, (_, vs) in enumerate(series))
    legend = " / ".join(html.escape(name) for name, _ in series)
    return (f"<svg class='fw-chart' xmlns='http://www.w3.org/2000/svg' width='{WIDTH}' height='{HEIGHT}' "
            f"viewBox='0 0 {WIDTH} {HEIGHT}' role='img' aria-label='{html.escape(title)}'>"
            f"<text x='{PAD}' y='12' font-size='11'>{html.escape(title)}</text>"
            f"<text x='{WIDTH - 4}' y='12' font-size='10' text-anchor='end'>max {top:,.4g}</text>"
            f"<line x1='{PAD}' y1='{HEIGHT - PAD}' x2='{WIDTH - PAD}' y2='{HEIGHT - PAD}' stroke='#999'/>"
            f"{inner}<text x='{PAD}' y='{HEIGHT - 4}' font-size='9'>{legend}</text></svg>")


def chart_svg(metrics: list[dict], last: int = CHARTED_BATCHES) -> str:
    """Five small charts over the last ``last`` micro-batches (``job.metrics()``'s rows, the backlog's left
    out): input vs processed rate, duration, watermark gap, late rows, and the state rows per partition after
    the newest one."""
    batches = [m for m in metrics if m.get("batch", 0) >= 0][-last:]
    column = {name: [m.get(name) for m in batches] for name in
              ("input_rows_per_second", "processed_rows_per_second", "duration_ms", "watermark_gap_ms")}
    per_partition = next((m["state_rows_per_partition"] for m in reversed(batches)
                          if m.get("state_rows_per_partition")), [])
    panels = [
        _panel("rows/s", [("input", column["input_rows_per_second"]),
                          ("processed", column["processed_rows_per_second"])]),
        _panel("duration (ms)", [("per micro-batch", column["duration_ms"])]),
        _panel("watermark gap (ms)", [("start less W", column["watermark_gap_ms"])]),
        _panel("late rows", [("per micro-batch", [m.get("late") for m in batches])]),
        _panel("state rows per partition", [("now", list(per_partition))], bars=True),
    ]
    return f"<div class='fw-job-charts' style='display:flex;flex-wrap:wrap;gap:6px'>{''.join(panels)}</div>"


#: Keys a result column's chart shows (the view's top rows, at most this many).
CHARTED_KEYS = 12


def result_chart_svg(rows: list[dict], column: str | None, key_names: tuple) -> str:
    """A bar per key of ``column`` over the view's top ``rows`` (update mode, sorted by that column), the key
    under its bar and both on hover; empty when no column is chosen or it holds no number."""
    if column is None:
        return ""
    bars = [(tuple(r.get(k) for k in key_names), r.get(column)) for r in rows[:CHARTED_KEYS]]
    bars = [(key, value) for key, value in bars  # numbers of Python, numpy (the backlog's rows) or pyarrow
            if isinstance(value, numbers.Real) and not isinstance(value, bool) and value == value]
    if not bars:
        return ""
    width = WIDTH * 2
    top = max(max(v for _, v in bars), 0) or 1
    low = min(min(v for _, v in bars), 0)
    span = (top - low) or 1
    step = (width - 2 * PAD) / len(bars)
    zero = HEIGHT - PAD - (0 - low) / span * (HEIGHT - 2 * PAD)
    inner = ""
    for i, (key, value) in enumerate(bars):
        label = html.escape(", ".join(str(k) for k in key))
        y = HEIGHT - PAD - (value - low) / span * (HEIGHT - 2 * PAD)
        inner += (f"<rect x='{PAD + i * step + 1:.1f}' y='{min(y, zero):.1f}' width='{max(step - 2, 1):.1f}' "
                  f"height='{abs(zero - y):.1f}' fill='{COLOURS[1]}'><title>{label}: {value:,}</title></rect>"
                  f"<text x='{PAD + (i + 0.5) * step:.1f}' y='{HEIGHT - 4}' font-size='9' text-anchor='middle'>"
                  f"{label[:8]}</text>")
    title = html.escape(f"{column} of the top {len(bars)} keys")
    return (f"<svg class='fw-chart fw-result-chart' xmlns='http://www.w3.org/2000/svg' width='{width}' "
            f"height='{HEIGHT}' viewBox='0 0 {width} {HEIGHT}' role='img' aria-label='{title}'>"
            f"<text x='{PAD}' y='12' font-size='11'>{title}</text>"
            f"<text x='{width - 4}' y='12' font-size='10' text-anchor='end'>max {top:,.4g}</text>"
            f"<line x1='{PAD}' y1='{zero:.1f}' x2='{width - PAD}' y2='{zero:.1f}' stroke='#999'/>{inner}</svg>")
