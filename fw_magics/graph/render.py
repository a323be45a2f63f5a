"""Drawing the job graph: DOT text for Graphviz, SVG for notebooks, a plain-text summary.

The drawing stays at operator level however many subtasks there are. Chained operators are
boxed together; blocking edges are dashed and labelled "blocking", pipelined edges solid and
labelled "pipelined", chained edges bold. Operators whose subtasks lie in the same pipelined
regions share a fill colour, and every label also spells the region numbers out, so colour
is never the only cue. Each label carries the operator's kind, parallelism and FLIP-331
attributes (the tooltip has them all); a legend explains the styles and colours.
"""

from __future__ import annotations

import html
import shutil
import subprocess

from ..errors import GraphvizNotFound

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
SPAN_RUNS = 4  # runs of region numbers spelled out in a label before it is shortened


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


def _count(n: int, word: str) -> str:
    """A counted word: 1 chain, 3 chains, 100,000 subtasks."""
    return f"{n:,} {word}{'' if n == 1 else 's'}"


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


def to_dot(graph) -> str:
    """The graph as Graphviz DOT text."""
    span, colour = _colours(graph)
    node = node_ids(graph)
    chains = graph.chains()
    regions = len(graph.pipelined_regions())
    title = (f"{graph.mode} job: {_count(len(node), 'operator')} in {_count(len(chains), 'chain')}, "
             f"{_count(len(graph.execution_vertices()), 'subtask')} in {_count(regions, 'pipelined region')}")
    lines = [
        "digraph job {",
        '  graph [rankdir=LR, fontname="Helvetica", fontsize=12];',
        '  node [shape=box, style="rounded,filled", fontname="Helvetica", fontsize=11];',
        '  edge [fontname="Helvetica", fontsize=10];',
    ]
    for k, chain in enumerate(chains):
        indent = "  "
        if len(chain) > 1:
            lines.append(f"  subgraph cluster_chain{k} {{")
            lines.append(f'    label={_label("chain: " + " + ".join(chain))}; style="dashed,rounded"; color="#555555";')
            indent = "    "
        for name in chain:
            lines.append(indent + _operator_node(graph.operator(name), node[name], span[name], colour[span[name]],
                                                 graph.annotations(name)))
        if len(chain) > 1:
            lines.append("  }")
    for edge in graph.edges:
        kind = graph.result_type(edge.source, edge.target)
        p, q = graph.operator(edge.source).parallelism, graph.operator(edge.target).parallelism
        pattern = edge.pattern.replace("_", "-") + (f" {p}->{q}" if p != q else "")
        lines.append(f"  {node[edge.source]} -> {node[edge.target]} "
                     f"[style={EDGE_STYLES[kind]}, label={_label(kind, pattern)}];")
    lines += _legend(colour)
    lines.append(f"  labelloc=t; label={_label(title)};")  # set last, so no cluster inherits it
    lines.append("}")
    return "\n".join(lines)


def _operator_node(op, node_id: str, span: str, fill: str, notes: dict | None = None) -> str:
    a = op.attributes
    flags = [text for text, on in (("output only after end of input", a.output_only_after_end_of_stream),
                                   ("internal sorter", a.internal_sorter_supported),
                                   ("not chainable", not op.chainable)) if on]
    noted = [f"{key}: {value}" for key, value in (notes or {}).items()]
    label = _label(op.name, f"{op.kind or 'operator'}, parallelism {op.parallelism}", span, *flags, *noted)
    tooltip = _label(f"{op.name}: kind={op.kind}, parallelism={op.parallelism}, "
                     f"output_only_after_end_of_stream={a.output_only_after_end_of_stream}, "
                     f"internal_sorter_supported={a.internal_sorter_supported}, chainable={op.chainable}; {span}"
                     + "".join(f"; {n}" for n in noted))
    return f'{node_id} [label={label}, tooltip={tooltip}, fillcolor="{fill}"];'


def _legend(colour: dict) -> list[str]:
    """One node holding a table: a sample line per edge style, a swatch per region colour."""
    cell = '<TD WIDTH="36" BORDER="{width}" SIDES="B" STYLE="{style}" COLOR="black"></TD>'
    rows = ['<TR><TD COLSPAN="2"><B>legend</B></TD></TR>']
    for kind, text in LEGEND_EDGES:
        width, style = (3, "solid") if kind == "chained" else (1, EDGE_STYLES[kind])
        rows.append(f'<TR>{cell.format(width=width, style=style)}<TD ALIGN="LEFT">{html.escape(text)}</TD></TR>')
    for span, fill in list(colour.items())[:LEGEND_COLOURS]:
        rows.append(f'<TR><TD BGCOLOR="{fill}" BORDER="1" STYLE="rounded" COLOR="black"></TD>'
                    f'<TD ALIGN="LEFT">fill: {html.escape(span)}</TD></TR>')
    if len(colour) > LEGEND_COLOURS:
        rows.append(f'<TR><TD></TD><TD ALIGN="LEFT">... {len(colour) - LEGEND_COLOURS} more colours</TD></TR>')
    table = ('<TABLE BORDER="1" CELLBORDER="0" CELLSPACING="4" CELLPADDING="2" STYLE="rounded" COLOR="#999999">'
             + "".join(rows) + "</TABLE>")
    return [f'  legend [shape=plain, style="", fontsize=10, label=<{table}>];']


def to_svg(graph) -> str:
    """SVG rendered by Graphviz's ``dot``: GraphvizNotFound if it is missing, RuntimeError if it fails."""
    dot = shutil.which("dot")
    if dot is None:
        raise GraphvizNotFound("Graphviz's 'dot' is not installed (apt-get install graphviz, or brew install "
                           "graphviz); JobGraph.to_dot() gives the DOT text without it")
    done = subprocess.run([dot, "-Tsvg"], input=to_dot(graph), capture_output=True, text=True,
                          encoding="utf-8", timeout=120, check=False)
    if done.returncode != 0:
        first = (done.stderr.strip().splitlines() or ["no message"])[0]
        raise RuntimeError(f"Graphviz's dot failed with exit code {done.returncode}: {first}")
    return done.stdout


def summary(graph) -> str:
    """A plain-text description: counts, then one line per edge with its result type."""
    lines = [f"JobGraph ({graph.mode}, chaining {'on' if graph.chaining else 'off'}): "
             f"{_count(len(graph.operators), 'operator')} in {_count(len(graph.chains()), 'chain')}, "
             f"{_count(len(graph.execution_vertices()), 'subtask')} in "
             f"{_count(len(graph.pipelined_regions()), 'pipelined region')}"]
    for edge in graph.edges:
        lines.append(f"  {edge.source} -> {edge.target}: {graph.result_type(edge.source, edge.target)} "
                     f"({edge.pattern})")
    return "\n".join(lines)


def mimebundle(graph, include=None, exclude=None) -> dict:
    """IPython's rich display: SVG when Graphviz is installed, else the DOT text; always a summary."""
    wanted = {"text/plain", "text/vnd.graphviz"}
    if shutil.which("dot") is not None:
        wanted.add("image/svg+xml")
    if include is not None:
        wanted &= set(include)
    if exclude is not None:
        wanted -= set(exclude)
    render = {"text/plain": summary, "text/vnd.graphviz": to_dot, "image/svg+xml": to_svg}
    return {mime: render[mime](graph) for mime in sorted(wanted)}
