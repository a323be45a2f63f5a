"""Pictures for the tutorials, where a table of numbers would be read slowly: plain SVG and HTML,
drawn here (nothing to install, no network), each with a text form that says the same.

* :func:`rescale_picture` (tutorial 7): where each operator-state unit goes when a job is restored
  at another parallelism: old subtasks on the left, new ones on the right, a line per move.
* :func:`switch_picture` (tutorials 6 and 8): a streaming job's backlog, the switch with its
  watermark W, and what the stream read after it, from the job's event log.
"""

from __future__ import annotations

import html
import json

__all__ = ["Picture", "rescale_moves", "rescale_picture", "savepoint_rescale_picture", "switch_picture"]

#: what a state's mode does on a restore, in a few words
MODE_WORDS = {"split": "each unit to one new subtask", "union": "every unit to every new subtask",
              "broadcast": "new subtask i copies old i % p"}
#: a colour per state name (rescale) or part (switch)
COLOURS = ("#4e79a7", "#f28e2b", "#59a14f", "#e15759", "#76b7b2", "#b07aa1")


class Picture:
    """A drawing a notebook shows as SVG or HTML; its ``repr`` is the same said in text."""

    def __init__(self, text: str, svg: str | None = None, html_: str | None = None):
        self.text, self.svg, self.html = text, svg, html_

    def _repr_svg_(self):
        return self.svg

    def _repr_html_(self):
        return self.html

    def __repr__(self) -> str:
        return self.text


# -- where each unit goes on a rescale ------------------------------------------------------------


def _label(unit) -> str:
    """A unit in a few characters: a split's file name, a string as it is, anything else as JSON."""
    if isinstance(unit, dict) and "file" in unit:
        return str(unit["file"])
    text = unit if isinstance(unit, str) else json.dumps(unit)
    return text if len(text) <= 24 else text[:23] + "…"


def _text_width(text: str) -> int:
    """An upper bound, in pixels, of ``text`` drawn in 12 px sans-serif (DejaVu Sans, the widest
    of the usual ones: m, w, M, W, @ and % up to 12 px, other capitals up to 9.5, the rest up to
    7.7): what a box or the picture needs to hold it uncut."""
    wide = sum(ch in "MWmw@%" for ch in text)
    capitals = sum(ch.isupper() for ch in text) - sum(ch in "MW" for ch in text)
    return int(12 * wide + 9.5 * capitals + 7.7 * (len(text) - wide - capitals)) + 1


def rescale_moves(old, new_parallelism: int, modes: dict) -> list[tuple]:
    """``(state, mode, old subtask, unit index, unit, new subtask)`` for every unit each new subtask
    receives when ``old`` (one dict of state name -> units per old subtask) is restored at
    ``new_parallelism`` (``fw_magics.state.assignment``: the rule a restore follows)."""
    from ..state import assignment

    moves = []
    for name, per_new in assignment(old, new_parallelism, modes).items():
        for new, positions in enumerate(per_new):
            moves.extend((name, modes[name], s, k, old[s][name][k], new) for s, k in positions)
    return moves


def rescale_picture(old, new_parallelism: int, modes: dict, title: str | None = None) -> Picture:
    """Where each unit of ``old`` goes when restored at ``new_parallelism`` (see
    :func:`rescale_moves`): each old subtask's units on the left, each new subtask's on the right,
    a line from a unit to every new subtask that gets it, one colour per state."""
    moves = rescale_moves(old, new_parallelism, modes)
    names = sorted(modes)
    colour = {name: COLOURS[i % len(COLOURS)] for i, name in enumerate(names)}
    left_chips = {(name, s, k): f"{name}: {_label(old[s][name][k])}"
                  for s in range(len(old)) for name in names for k in range(len(old[s].get(name, ())))}
    right_chips = {move: f"{move[0]}: {_label(move[4])}  (from {move[2]})" for move in moves}
    legend = [f"{name}: {modes[name]} ({MODE_WORDS.get(modes[name], '')})" for name in names]
    # every box as wide as its longest chip, the picture as wide as its widest line: nothing is cut
    chip, gap, head, pad = 20, 4, 22, 6
    width = max([200] + [_text_width(t) + 30 for t in (*left_chips.values(), *right_chips.values())])
    left_x, right_x = 10, 10 + width + 170

    def column(boxes):
        """y of each chip; boxes: [(title, [key, ...])]; returns (parts, {key: y}, height)."""
        parts, where, y = [], {}, 40
        for box_title, keys in boxes:
            height = head + max(len(keys), 1) * (chip + gap) + pad
            parts.append((y, height, box_title, keys))
            for i, key in enumerate(keys):
                where[key] = y + head + i * (chip + gap)
            y += height + 12
        return parts, where, y

    left_boxes = [(f"subtask {s}", [key for key in left_chips if key[1] == s]) for s in range(len(old))]
    right_boxes = [(f"subtask {j}", [m for m in moves if m[5] == j]) for j in range(new_parallelism)]
    left, left_y, h1 = column(left_boxes)
    right, right_y, h2 = column(right_boxes)
    line_height = 16
    bottom = max(h1, h2) + 2
    total_width = max([right_x + width + 10] + [left_x + _text_width(line) + 10 for line in legend])
    svg = [f"<svg xmlns='http://www.w3.org/2000/svg' width='{total_width}' "
           f"height='{bottom + line_height * (len(legend) - 1) + 8}' font-family='sans-serif' font-size='12'>",
           f"<text x='{left_x}' y='20' font-weight='bold'>before: parallelism {len(old)}</text>",
           f"<text x='{right_x}' y='20' font-weight='bold'>after: parallelism {new_parallelism}</text>"]
    for x, parts in ((left_x, left), (right_x, right)):
        for y, height, box_title, _ in parts:
            svg.append(f"<rect x='{x}' y='{y}' width='{width}' height='{height}' rx='6' fill='#f7f7f7' "
                       "stroke='#999'/>")
            svg.append(f"<text x='{x + 8}' y='{y + 15}' fill='#555'>{box_title}</text>")
    for name, mode, s, k, unit, new in moves:  # the lines first, the chips over them
        y1, y2 = left_y[(name, s, k)] + chip / 2, right_y[(name, mode, s, k, unit, new)] + chip / 2
        svg.append(f"<line x1='{left_x + width - 8}' y1='{y1}' x2='{right_x + 8}' y2='{y2}' "
                   f"stroke='{colour[name]}' stroke-width='1.5' opacity='0.7'/>")

    def draw_chip(x, y, name, text):
        svg.append(f"<rect x='{x + 8}' y='{y}' width='{width - 16}' height='{chip}' rx='4' fill='white' "
                   f"stroke='{colour[name]}' stroke-width='2'/>")
        svg.append(f"<text x='{x + 14}' y='{y + 14}'>{html.escape(text)}</text>")

    for key, text in left_chips.items():
        draw_chip(left_x, left_y[key], key[0], text)
    for move, text in right_chips.items():
        draw_chip(right_x, right_y[move], move[0], text)
    for i, line in enumerate(legend):  # the caption: a line per state, its mode and what the mode does
        svg.append(f"<text x='{left_x}' y='{bottom + i * line_height}' fill='#555'>{html.escape(line)}</text>")
    svg.append("</svg>")
    lines = [title] if title else []
    for j in range(new_parallelism):
        got = [f"{name} {_label(unit)} (from {s})" for name, _, s, _, unit, new in moves if new == j]
        lines.append(f"new subtask {j}: {', '.join(got) or 'nothing'}")
    return Picture("\n".join(lines), svg="".join(svg))


def savepoint_rescale_picture(savepoint, operator: str, new_parallelism: int) -> Picture:
    """:func:`rescale_picture` of one operator's state in a savepoint (a path or a loaded one),
    each state in the mode it was saved with."""
    from .savepoints import operator_snapshots

    snapshots = operator_snapshots(savepoint, operator)
    modes = {name: entry["mode"] for snapshot in snapshots for name, entry in snapshot.items()}
    old = [{name: entry["units"] for name, entry in snapshot.items()} for snapshot in snapshots]
    return rescale_picture(old, new_parallelism, modes, title=f"{operator} restored at {new_parallelism}")


# -- the backlog, the switch and the stream ---------------------------------------------------------


def _when(millis) -> str:
    import datetime as dt

    if millis is None:
        return "none (no event time)"
    moment = dt.datetime.fromtimestamp(millis / 1000, tz=dt.timezone.utc)
    return moment.strftime("%Y-%m-%d %H:%M:%S UTC")


def _counted(n: int, word: str, words: str | None = None) -> str:
    """1 micro-batch, 3 micro-batches."""
    return f"{n:,} {word if n == 1 else words or word + 's'}"


def _stream_sentence(records: int, with_records: int, in_all: int, unit: str = "record") -> str:
    """What the stream read, in one sentence: 40 records, read by 1 of 3 micro-batches (...)."""
    if not in_all:
        return "no micro-batch yet"
    if not with_records:
        return f"nothing new yet ({_counted(in_all, 'micro-batch', 'micro-batches')}, each empty)"
    if with_records == in_all:
        return f"{_counted(records, unit)} read by {_counted(in_all, 'micro-batch', 'micro-batches')}"
    return (f"{_counted(records, unit)} read by {with_records} of {in_all} micro-batches "
            "(the others found nothing new)")


#: What a backlog's recorded size counts (a folder's files, a table's rows), in the order shown.
_SIZES = ("files", "rows")


def switch_picture(job) -> Picture:
    """A streaming job's life as one bar, from its event log (``job.events()``): the backlog (what
    the source recorded at the first start, read as one batch job, its state writes), the switch
    with its watermark W, then the stream's micro-batches with the records each read. Widths
    follow the records read; the stream gets at least a fifth of the bar, so that it shows."""
    from ..recovery.events import BACKLOG_RECORDED, MICRO_BATCH, SWITCH

    events = job.events()
    recorded = next((e["position"] for e in events if e["type"] == BACKLOG_RECORDED), None)
    switch = next((e for e in events if e["type"] == SWITCH), None)
    batches = [e for e in events if e["type"] == MICRO_BATCH]
    backlog = (switch or {}).get("records") or 0
    streamed = sum(e.get("input_rows") or 0 for e in batches)
    sizes = {k: (recorded or {}).get(k) for k in _SIZES}
    what = ", ".join(_counted(v, k.rstrip("s")) for k, v in sizes.items() if isinstance(v, int))
    if switch:
        # the records only when they are not what the size already says (a table's rows are its records)
        records = _counted(backlog, "record")
        size = what if sizes.get("rows") == backlog else f"{what} ({records})" if what else records
        backlog_words = (f"backlog: {size} read by one batch job with "
                         f"{_counted(switch.get('state_writes') or 0, 'state write')}")
    else:
        backlog_words = f"backlog: {what or 'recorded'}, not read yet" if recorded is not None else "no backlog"
    switch_words = f"switch: W = {_when(switch.get('watermark'))}" if switch else "no switch yet"
    with_rows = [e for e in batches if e.get("input_rows")]
    # a table's records are its rows: the stream says "rows" as the backlog does (one noun for one thing)
    unit = "row" if isinstance(sizes.get("rows"), int) and not isinstance(sizes.get("files"), int) else "record"
    stream_words = f"stream: {_stream_sentence(streamed, len(with_rows), len(batches), unit)}"
    text = f"{backlog_words} | {switch_words} | {stream_words}"
    total = backlog + streamed
    stream_share = 0.0 if not batches else max(0.2, streamed / total if total else 0.2)
    stream_share = min(stream_share, 0.8 if switch else 1.0)
    backlog_share = 1.0 - stream_share if switch else 0.0
    cells = []
    if switch:
        cells.append(f"<div title='{html.escape(backlog_words)}' style='flex:{backlog_share:.4f};background:{COLOURS[0]};"
                     "color:white;padding:6px 8px;border-right:3px solid #222'>backlog · one batch</div>")
    per_batch = [e.get("input_rows") or 0 for e in with_rows]
    for rows, e in zip(per_batch, with_rows):
        share = stream_share * (rows / streamed) if streamed else 0
        cells.append(f"<div title='micro-batch {e.get('batch')}: {_counted(rows, unit)}' style='flex:{share:.4f};"
                     f"background:{COLOURS[1]};border-left:1px solid white;color:white;padding:6px 4px;"
                     f"overflow:hidden;white-space:nowrap'>{e.get('batch')}</div>")
    if not with_rows and batches:
        cells.append(f"<div style='flex:{stream_share:.4f};background:#ddd;padding:6px 8px'>stream (nothing new yet)"
                     "</div>")
    bar = "<div style='display:flex;font:12px sans-serif;min-width:420px;max-width:760px'>" + "".join(cells) + "</div>"
    legend = (f"<div style='font:12px sans-serif;margin-top:4px;max-width:760px'>"
              f"<span style='color:{COLOURS[0]}'>■</span> {html.escape(backlog_words)}<br>"
              f"<b>|</b> {html.escape(switch_words)}<br>"
              f"<span style='color:{COLOURS[1]}'>■</span> {html.escape(stream_words)}. "
              "Each block is a micro-batch, by its number.</div>")
    return Picture(text, html_=bar + legend)
