"""Drawing the job graph: DOT text for Graphviz, and SVG for notebooks.

Blocking edges are dashed and labelled, pipelined edges solid, chained operators boxed
together; each pipelined region has a colour AND a number in the node label (colour is
never the only cue); attributes are in each label and tooltip; a legend explains it all.
"""

from __future__ import annotations

import shutil
import subprocess

PALETTE = ["#cfe8ff", "#ffe0b3", "#d5f5d5", "#f8d0e0", "#e6dcff", "#fff3b0", "#d0f0f0", "#f0d8c8"]


def _quote(text: str) -> str:
    """A DOT string; label line breaks are written as the two characters \\n by the caller."""
    return '"' + str(text).replace('"', '\\"') + '"'


def _region_numbers(graph) -> dict[str, list[int]]:
    numbers: dict[str, set[int]] = {}
    for k, region in enumerate(graph.pipelined_regions(), start=1):
        for name, _ in region:
            numbers.setdefault(name, set()).add(k)
    return {name: sorted(ks) for name, ks in numbers.items()}


def _span(ks: list[int]) -> str:
    if len(ks) == 1:
        return f"region {ks[0]}"
    if ks == list(range(ks[0], ks[-1] + 1)):
        return f"regions {ks[0]}-{ks[-1]}"
    return "regions " + ",".join(map(str, ks))


def to_dot(graph) -> str:
    regions = _region_numbers(graph)
    lines = [
        "digraph job {",
        '  rankdir=LR; node [shape=box, style="rounded,filled", fontname="Helvetica", fontsize=11];',
        '  edge [fontname="Helvetica", fontsize=10];',
    ]
    for index, chain in enumerate(graph.chains()):
        lines.append(f'  subgraph cluster_chain{index} {{ label="chain {index + 1}"; style=dashed; color="#888888";')
        for name in chain:
            op = graph.operator(name)
            a = op.attributes
            ks = regions.get(name, [])
            flags = []
            if a.output_only_after_end_of_stream:
                flags.append("output only after end of input")
            if a.internal_sorter_supported:
                flags.append("internal sorter")
            label = "\\n".join([name, f"{op.kind or 'operator'} x{op.parallelism}", _span(ks), *flags])
            tooltip = (f"{name}: kind={op.kind}, parallelism={op.parallelism}, "
                       f"output_only_after_end_of_stream={a.output_only_after_end_of_stream}, "
                       f"internal_sorter_supported={a.internal_sorter_supported}, chainable={op.chainable}")
            colour = PALETTE[(ks[0] - 1) % len(PALETTE)] if len(ks) == 1 else "#eeeeee"
            lines.append(f"    {_quote(name)} [label={_quote(label)}, tooltip={_quote(tooltip)}, fillcolor={_quote(colour)}];")
        lines.append("  }")
    for edge in graph.edges:
        kind = graph.result_type(edge.source, edge.target)
        style = {"blocking": "dashed", "pipelined": "solid", "chained": "bold"}[kind]
        label = f"{kind}\\n{edge.pattern.replace('_', '-')}"
        lines.append(f"  {_quote(edge.source)} -> {_quote(edge.target)} [style={style}, label={_quote(label)}];")
    lines += [
        '  subgraph cluster_legend { label="legend"; style=solid; color="#bbbbbb"; fontsize=10;',
        '    l1 [shape=plaintext, style="", label=""]; l2 [shape=plaintext, style="", label=""];',
        '    l3 [shape=plaintext, style="", label=""]; l4 [shape=plaintext, style="", label=""];',
        '    l5 [shape=plaintext, style="", label=""]; l6 [shape=plaintext, style="", label=""];',
        '    l1 -> l2 [style=dashed, label="blocking: consumer starts after producer finished"];',
        '    l3 -> l4 [style=solid, label="pipelined: records stream while both run"];',
        '    l5 -> l6 [style=bold, label="chained: fused into one task"];',
        "  }",
        "}",
    ]
    return "\n".join(lines)


def to_svg(graph) -> str | None:
    """SVG from Graphviz's dot, or None when dot is not installed."""
    dot = shutil.which("dot")
    if dot is None:
        return None
    done = subprocess.run([dot, "-Tsvg"], input=to_dot(graph), capture_output=True, text=True, timeout=120)
    return done.stdout if done.returncode == 0 else None


def summary(graph) -> str:
    regions = graph.pipelined_regions()
    lines = [f"JobGraph ({graph.mode}): {len(graph.operators)} operators, {len(graph.chains())} chains, "
             f"{len(regions)} pipelined regions"]
    for edge in graph.edges:
        lines.append(f"  {edge.source} -> {edge.target}: {graph.result_type(edge.source, edge.target)} ({edge.pattern})")
    return "\n".join(lines)


def mimebundle(graph) -> dict:
    bundle = {"text/plain": summary(graph), "text/vnd.graphviz": to_dot(graph)}
    svg = to_svg(graph)
    if svg is not None:
        bundle["image/svg+xml"] = svg
    return bundle
