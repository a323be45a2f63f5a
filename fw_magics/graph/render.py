"""Drawing the job graph: DOT text for Graphviz, SVG and HTML for notebooks, a plain-text summary.

The drawing stays at operator level however many subtasks there are. Chained operators are
boxed together; blocking edges are dashed and labelled "blocking", pipelined edges solid and
labelled "pipelined", chained edges bold. Operators whose subtasks lie in the same pipelined
regions share a fill colour, and every label also spells the region numbers out, so colour
is never the only cue. Each label carries the operator's kind, parallelism and FLIP-331
attributes (the tooltip has them all); a legend explains the styles and colours.

The drawing is made for a notebook's output area (about 950 px wide): left to right while
that stays narrow (``drawing_size`` estimates it from the graph's shape: the longest chain
sets the width), else top to bottom (the widest level sets it). In the SVG the title and
legend are a caption under the drawing, where they take no width from it; in the notebook's
HTML the legend is one line that unfolds (``<details>``), and the drawing shrinks to the
cell's width only down to the scale where its smallest text is still 11 px: a wider one
scrolls sideways instead.
"""

from __future__ import annotations

import hashlib
import html
import math
import re
import shutil
import subprocess

from ..errors import FullWindowError, GraphvizNotFound
from . import drawing_size as size

# ColorBrewer "Set3": light fills that keep black text readable.
PALETTE = ("#8dd3c7", "#ffffb3", "#bebada", "#fb8072", "#80b1d3", "#fdb462",
           "#b3de69", "#fccde5", "#d9d9d9", "#bc80bd", "#ccebc5", "#ffed6f")
EDGE_STYLES = {"blocking": "dashed", "pipelined": "solid", "chained": "bold"}
LEGEND_EDGES = (
    ("blocking", "blocking: the consumer starts after the producer finished"),
    ("pipelined", "pipelined: records stream while both run"),
    ("chained", "chained: fused into one task"),
)
LEGEND_COLOURS = len(PALETTE)  # region swatches shown in the legend at most
SWATCHES_PER_ROW = 4  # region swatches side by side in the SVG's legend
SPAN_RUNS = 4  # runs of region numbers spelled out in a label before it is shortened

FIT_WIDTH = 700  # points (933 px): wider than this left to right, a drawing goes top to bottom
MIN_TEXT_PX = 11  # the smallest text on screen: the HTML and the widget never shrink below it
PX_PER_PT = 4 / 3  # CSS pixels per point at a drawing's natural size
SMALLEST_FONT = min(size.NODE_FONT, size.EDGE_FONT)  # points
READABLE_SCALE = MIN_TEXT_PX / (SMALLEST_FONT * PX_PER_PT)  # the smallest scale the HTML shows
BADGE_LINES = 2  # lines kept free at the bottom of each operator's box for the widget's badges
BADGE_WIDTH = 2.2  # inches: the narrowest box in the widget, so a badge line fits in it


def _escape(text: str) -> str:
    """Text for a double-quoted DOT string (backslashes, quotes and newlines escaped)."""
    return str(text).replace("\\", "\\\\").replace('"', '\\"').replace("\n", "\\n")


def _label(*lines: str) -> str:
    return '"' + "\\n".join(_escape(line) for line in lines) + '"'


def region_span(numbers) -> str:
    """Region numbers in words: "region 3", "regions 1-4", "regions 1-3,7 (5 in all)"."""
    numbers = sorted(numbers)
    if len(numbers) == 1:
        return f"region {numbers[0]}"
    runs: list[list[int]] = []
    for n in numbers:
        if runs and n == runs[-1][1] + 1:
            runs[-1][1] = n
        else:
            runs.append([n, n])
    text = ",".join(f"{a}-{b}" if a != b else str(a) for a, b in runs[:SPAN_RUNS])
    if len(runs) > SPAN_RUNS:
        text += f",... ({len(numbers):,} in all)"
    return f"regions {text}"


def counted(n: int, word: str, plural: str | None = None) -> str:
    """A counted word: 1 chain, 3 chains, 100,000 subtasks; 1 micro-batch, 2 micro-batches."""
    return f"{n:,} {word if n == 1 else plural or word + 's'}"


def _colours(graph) -> tuple[dict, dict]:
    """Each operator's region span, and one fill colour per distinct span, in topological order."""
    layout = graph.layout()
    span = {name: region_span(r + 1 for r in layout.operator_regions[name]) for name in layout.operators}
    colour: dict[str, str] = {}
    for name in layout.operators:
        colour.setdefault(span[name], PALETTE[len(colour) % len(PALETTE)])
    return span, colour


def node_ids(graph) -> dict[str, str]:
    """Each operator's DOT node id ("op0", "op1", ...), also the <title> of its SVG group."""
    return {o.name: f"op{k}" for k, o in enumerate(graph.operators)}


def title(graph) -> str:
    """One line: mode, operators, chains, subtasks and regions."""
    return (f"{graph.mode} job: {counted(len(graph.operators), 'operator')} in "
            f"{counted(len(graph.chains()), 'chain')}, {counted(len(graph.execution_vertices()), 'subtask')} "
            f"in {counted(len(graph.pipelined_regions()), 'pipelined region')}")


def _node_lines(op, span: str, notes: dict | None = None) -> list[str]:
    """An operator box's lines: name, kind and parallelism, region, attributes, then a run's notes."""
    a = op.attributes
    flags = [text for text, on in (("output only after end of input", a.output_only_after_end_of_stream),
                                   ("internal sorter", a.internal_sorter_supported),
                                   ("not chainable", not op.chainable)) if on]
    noted = [f"{key}: {value}" for key, value in (notes or {}).items()]
    return [op.name, f"{op.kind or 'operator'}, parallelism {op.parallelism}", span, *flags, *noted]


def _edge_lines(graph, edge) -> list[str]:
    p, q = graph.operator(edge.source).parallelism, graph.operator(edge.target).parallelism
    return [graph.result_type(edge.source, edge.target),
            edge.pattern.replace("_", "-") + (f" {p}->{q}" if p != q else "")]


def rankdir(graph, badges: bool = False) -> str:
    """"LR" while the drawing left to right is at most FIT_WIDTH points wide (or narrower than
    top to bottom would be), else "TB"."""
    span, _ = _colours(graph)
    nodes = {op.name: _node_lines(op, span[op.name], graph.annotations(op.name)) for op in graph.operators}
    edges = {(e.source, e.target): _edge_lines(graph, e) for e in graph.edges}
    least = BADGE_WIDTH * 72 if badges else 0
    across = size.estimate_width(graph, nodes, edges, "LR", least)
    if across <= FIT_WIDTH:
        return "LR"
    return "TB" if size.estimate_width(graph, nodes, edges, "TB", least) < across else "LR"


def to_dot(graph, *, direction: str | None = None, legend: bool = True, caption: bool = True,
           badges: bool = False) -> str:
    """The graph as Graphviz DOT text.

    ``direction``: "LR" or "TB" (default: ``rankdir(graph)``); ``legend`` and ``caption``: the
    legend and the title under the drawing; ``badges``: room in each box for the widget's badges.
    """
    span, colour = _colours(graph)
    node = node_ids(graph)
    direction = direction or rankdir(graph, badges)
    if direction not in ("LR", "TB"):
        raise FullWindowError(f"direction {direction!r}; accepted: 'LR' or 'TB'")
    lines = [
        "digraph job {",
        f'  graph [rankdir={direction}, fontname="Helvetica", fontsize=12];',
        f'  node [shape=box, style="rounded,filled", fontname="Helvetica", fontsize={size.NODE_FONT}'
        + (f", width={BADGE_WIDTH}" if badges else "") + "];",
        f'  edge [fontname="Helvetica", fontsize={size.EDGE_FONT}];',
    ]
    for k, chain in enumerate(graph.chains()):
        indent = "  "
        if len(chain) > 1:
            lines.append(f"  subgraph cluster_chain{k} {{")
            lines.append(f'    label={_label("chain: " + " + ".join(chain))}; style="dashed,rounded"; color="#555555";')
            indent = "    "
        for name in chain:
            op, notes = graph.operator(name), graph.annotations(name)
            text = _node_lines(op, span[name], notes) + [" "] * (BADGE_LINES if badges else 0)
            lines.append(indent + _operator_node(op, node[name], text, span[name], colour[span[name]], notes))
        if len(chain) > 1:
            lines.append("  }")
    for edge in graph.edges:
        kind = graph.result_type(edge.source, edge.target)
        lines.append(f"  {node[edge.source]} -> {node[edge.target]} "
                     f"[style={EDGE_STYLES[kind]}, label={_label(*_edge_lines(graph, edge))}];")
    if legend or caption:  # set last, so no cluster inherits it
        lines.append(f"  labelloc=b; labeljust=l; label=<{_caption(graph, colour, legend, caption)}>;")
    lines.append("}")
    return "\n".join(lines)


def _operator_node(op, node_id: str, lines: list[str], span: str, fill: str, notes: dict | None = None) -> str:
    a = op.attributes
    tooltip = _label(f"{op.name}: kind={op.kind}, parallelism={op.parallelism}, "
                     f"output_only_after_end_of_stream={a.output_only_after_end_of_stream}, "
                     f"internal_sorter_supported={a.internal_sorter_supported}, chainable={op.chainable}; {span}"
                     + "".join(f"; {key}: {value}" for key, value in (notes or {}).items()))
    return f'{node_id} [label={_label(*lines)}, tooltip={tooltip}, fillcolor="{fill}"];'


def _caption(graph, colour: dict, legend: bool, caption: bool) -> str:
    """The HTML-like label under the drawing: the title, then a sample line per edge style and
    the region colours, several to a row."""
    rows = []
    if caption:
        rows.append(f'<FONT POINT-SIZE="12">{html.escape(title(graph))}</FONT>')
    if legend:
        sample = '<TD FIXEDSIZE="TRUE" WIDTH="36" HEIGHT="10" BORDER="{width}" SIDES="B" STYLE="{style}"></TD>'
        edges = ['<TR><TD COLSPAN="2" ALIGN="LEFT"><B>legend</B></TD></TR>']
        for kind, text in LEGEND_EDGES:
            width, style = (3, "solid") if kind == "chained" else (1, EDGE_STYLES[kind])
            edges.append(f'<TR>{sample.format(width=width, style=style)}<TD ALIGN="LEFT">{html.escape(text)}</TD></TR>')
        rows.append(_table(edges))
        swatches = [f'<TD FIXEDSIZE="TRUE" WIDTH="24" HEIGHT="12" BGCOLOR="{fill}" BORDER="1" STYLE="rounded"></TD>'
                    f'<TD ALIGN="LEFT">fill: {html.escape(span)}</TD>'
                    for span, fill in list(colour.items())[:LEGEND_COLOURS]]
        if len(colour) > LEGEND_COLOURS:
            swatches.append(f'<TD></TD><TD ALIGN="LEFT">... {len(colour) - LEGEND_COLOURS} more colours</TD>')
        rows += [_table(["<TR>" + "".join(swatches[k:k + SWATCHES_PER_ROW]) + "</TR>"])
                 for k in range(0, len(swatches), SWATCHES_PER_ROW)]
    return f'<FONT POINT-SIZE="{size.EDGE_FONT}">' + _table(f'<TR><TD ALIGN="LEFT">{row}</TD></TR>' for row in rows) + "</FONT>"


def _table(rows) -> str:
    return '<TABLE ALIGN="LEFT" BORDER="0" CELLBORDER="0" CELLSPACING="2" CELLPADDING="1">' + "".join(rows) + "</TABLE>"


def to_svg(graph, **options) -> str:
    """SVG rendered by Graphviz's ``dot``: GraphvizNotFound if it is missing, RuntimeError if it fails.

    ``options`` as for ``to_dot``.
    """
    dot = shutil.which("dot")
    if dot is None:
        raise GraphvizNotFound("Graphviz's 'dot' is not installed (apt-get install graphviz, or brew install "
                           "graphviz); JobGraph.to_dot() gives the DOT text without it")
    done = subprocess.run([dot, "-Tsvg"], input=to_dot(graph, **options), capture_output=True, text=True,
                          encoding="utf-8", timeout=120, check=False)
    if done.returncode != 0:
        first = (done.stderr.strip().splitlines() or ["no message"])[0]
        raise RuntimeError(f"Graphviz's dot failed with exit code {done.returncode}: {first}")
    return done.stdout


# -- HTML for notebooks ----------------------------------------------------------------------------

_LINE = '<span style="display:inline-block;width:28px;vertical-align:middle;border-top:{}"></span>'
_SAMPLES = {"blocking": _LINE.format("1.5px dashed #000"), "pipelined": _LINE.format("1.5px solid #000"),
            "chained": _LINE.format("3px solid #000")}
_SWATCH = ('<span style="display:inline-block;width:14px;height:10px;vertical-align:middle;'
           'border:1px solid #000;border-radius:3px;background:{}"></span>')


def legend_html(graph, more: str = "") -> str:
    """The legend as one line that unfolds (``<details>``): edge styles and region colours;
    ``more`` (HTML) is added to the unfolded part."""
    _, colour = _colours(graph)
    swatches = "".join(_SWATCH.format(fill) for fill in list(colour.values())[:LEGEND_COLOURS])
    line = (" &nbsp; ".join(f"{_SAMPLES[kind]} {kind}" for kind, _ in LEGEND_EDGES)
            + f" &nbsp; {swatches} fill: pipelined regions")
    rows = [f"<div>{_SAMPLES[kind]} {html.escape(text)}</div>" for kind, text in LEGEND_EDGES]
    rows += [f'<span style="margin-right:12px;white-space:nowrap">{_SWATCH.format(fill)} {html.escape(span)}</span>'
             for span, fill in list(colour.items())[:LEGEND_COLOURS]]
    if len(colour) > LEGEND_COLOURS:
        rows.append(f"<span>... {len(colour) - LEGEND_COLOURS} more colours</span>")
    return (f'<details class="fw-legend" style="font-size:12px;line-height:1.6;margin:2px 0 4px">'
            f'<summary style="cursor:pointer">legend: {line}</summary>'
            f'<div style="padding:2px 0 0 16px">{"".join(rows)}{more}</div></details>')


def inline_svg(svg: str, prefix: str) -> str:
    """Graphviz's SVG ready to sit in HTML: no XML prolog or comments, ids made unique by ``prefix``."""
    svg = svg[svg.index("<svg"):]
    svg = re.sub(r"<!--.*?-->\s*", "", svg, flags=re.S)
    return re.sub(r'\bid="', f'id="{prefix}', svg)


def natural_size(svg: str) -> tuple[float, float]:
    """The drawing's width and height in CSS pixels at its natural size (Graphviz writes points)."""
    found = re.search(r'<svg width="([\d.]+)pt" height="([\d.]+)pt"', svg)
    if not found:
        raise ValueError("not an SVG written by Graphviz: no width and height in points")
    return float(found.group(1)) * PX_PER_PT, float(found.group(2)) * PX_PER_PT


def to_html(graph) -> str:
    """The notebook's drawing: title, the folded legend, and the SVG at a readable scale.

    The SVG is as wide as the cell, at most its natural size and at least READABLE_SCALE of
    it; wider than that, its box scrolls sideways. Where the notebook is not trusted,
    JupyterLab strips the SVG from HTML but keeps its text: the drawing's box sets that text
    in a zero-size font (the SVG's own text has its size set, so it is not affected), and
    the text summary, hidden in the SVG, shows instead.
    """
    svg = to_svg(graph, legend=False, caption=False)
    width, _ = natural_size(svg)
    prefix = "fwg" + hashlib.sha1(svg.encode()).hexdigest()[:8] + "-"
    style = (f"display:block;width:100%;height:auto;max-width:{math.ceil(width)}px;"
             f"min-width:{math.ceil(width * READABLE_SCALE)}px")
    fallback = (f'<foreignObject style="display:none"><pre style="font-size:12px;line-height:1.4">'
                f"{html.escape(summary(graph))}</pre><div style='font-size:12px;line-height:1.4'><i>The drawing "
                f"shows once the cell has run or the notebook is trusted.</i></div></foreignObject>")
    svg = inline_svg(svg, prefix)
    svg = re.sub(r"<svg ([^>]*)>", lambda m: f'<svg class="fw-jobgraph-svg" style="{style}" {m.group(1)}>{fallback}',
                 svg, count=1)
    return (f'<div class="fw-jobgraph" style="max-width:100%">'
            f'<div style="font-size:13px">{html.escape(title(graph))}</div>{legend_html(graph)}'
            f'<div class="fw-jobgraph-scroll" style="overflow-x:auto;max-width:100%;font-size:0;line-height:0">'
            f"{svg}</div></div>")


def summary(graph) -> str:
    """A plain-text description: counts, then one line per edge with its result type."""
    lines = [f"JobGraph ({graph.mode}, chaining {'on' if graph.chaining else 'off'}): "
             f"{counted(len(graph.operators), 'operator')} in {counted(len(graph.chains()), 'chain')}, "
             f"{counted(len(graph.execution_vertices()), 'subtask')} in "
             f"{counted(len(graph.pipelined_regions()), 'pipelined region')}"]
    for edge in graph.edges:
        lines.append(f"  {edge.source} -> {edge.target}: {graph.result_type(edge.source, edge.target)} "
                     f"({edge.pattern})")
    return "\n".join(lines)


def mimebundle(graph, include=None, exclude=None) -> dict:
    """IPython's rich display: HTML and SVG when Graphviz is installed, else the DOT text; always a summary.

    Notebooks show the HTML (drawing, folded legend); the SVG, with its legend and title as a
    caption, is for whatever shows no HTML.
    """
    wanted = {"text/plain", "text/vnd.graphviz"}
    if shutil.which("dot") is not None:
        wanted |= {"image/svg+xml", "text/html"}
    if include is not None:
        wanted &= set(include)
    if exclude is not None:
        wanted -= set(exclude)
    render = {"text/plain": summary, "text/vnd.graphviz": to_dot, "image/svg+xml": to_svg, "text/html": to_html}
    return {mime: render[mime](graph) for mime in sorted(wanted)}
