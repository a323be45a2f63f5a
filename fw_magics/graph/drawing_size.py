"""How wide the drawing of a job graph would be, from the graph's shape alone (no Graphviz run).

``render`` lays a graph out left to right while that stays narrow enough for a notebook's
output area, and top to bottom otherwise. The estimate follows what ``dot`` does: operators
sit in levels (the longest path from a source), a labelled edge adds a rank of its own for
the label between two levels, and text is as wide as the font says. Left to right, the
levels line up across the page (the longest chain sets the width); top to bottom, the
operators of one level sit side by side (the widest level sets it).

Widths are in points, Graphviz's unit (1 pt = 4/3 CSS px at the drawing's natural size).
"""

from __future__ import annotations

# Advance widths (thousandths of an em) of the characters " " to "~" in DejaVu Sans, the font
# fontconfig gives Graphviz and Chromium for "Helvetica" on Debian; real Helvetica is narrower,
# so elsewhere the estimate errs on the wide side. Measured with dot's own text layout.
_WIDTHS = dict(zip(map(chr, range(32, 127)), (
    315, 398, 458, 840, 638, 953, 780, 278, 390, 390, 503, 840, 315, 360, 315, 338, 638, 638, 638, 638,
    638, 638, 638, 638, 638, 638, 338, 338, 840, 840, 840, 533, 998, 710, 683, 698, 773, 630, 578, 773,
    750, 293, 293, 653, 555, 863, 750, 788, 600, 788, 698, 638, 594, 735, 683, 990, 683, 608, 683, 390,
    338, 390, 840, 503, 503, 615, 638, 546, 638, 611, 345, 638, 638, 278, 278, 578, 278, 975, 638, 608,
    638, 638, 389, 518, 390, 638, 593, 818, 593, 593, 525, 638, 338, 638, 840)))
_OTHER = 700  # any other character: about a capital letter

NODE_FONT = 11  # points, operator labels
EDGE_FONT = 10  # points, edge labels and the legend
NODE_PAD = 16  # dot's default node margin, 0.11 in on each side
NODE_MIN_WIDTH = 54  # dot's default minimum node width, 0.75 in
RANK_SEP = 36  # dot's default ranksep, 0.5 in
NODE_SEP = 18  # dot's default nodesep, 0.25 in
EDGE_LABEL_PAD = 4
MARGIN = 8  # the graph's own margin, 4 pt on each side
CLUSTER_PAD = 16  # a chain's frame, 8 pt on each side
CLUSTER_FONT = 12  # points, a chain frame's title (the graph's font size)
VIRTUAL = 18  # the room an edge takes where it passes a rank


def text_width(text: str, size: float) -> float:
    """The width of one line of ``text`` at ``size`` points."""
    return sum(_WIDTHS.get(c, _OTHER) for c in text) * size / 1000


def label_width(lines, size: float) -> float:
    return max((text_width(line, size) for line in lines), default=0.0)


def levels(graph) -> dict[str, int]:
    """Each operator's level, as dot ranks it: first the longest path from a source to it;
    then, as dot keeps edges short, an operator with more outputs than inputs moves down
    next to its consumers (a source feeding a late join sits just before it), and one with
    more inputs than outputs moves up next to its producers."""
    level: dict[str, int] = {}
    inputs: dict[str, list[str]] = {}
    outputs: dict[str, list[str]] = {}
    for edge in graph.edges:
        inputs.setdefault(edge.target, []).append(edge.source)
        outputs.setdefault(edge.source, []).append(edge.target)
    order = graph.topological_order()
    for name in order:
        level[name] = max((level[s] + 1 for s in inputs.get(name, ())), default=0)
    for _ in range(2):
        for name in reversed(order):
            ins, outs = inputs.get(name, ()), outputs.get(name, ())
            if outs and len(outs) > len(ins):
                level[name] = min(level[t] for t in outs) - 1
        for name in order:
            ins, outs = inputs.get(name, ()), outputs.get(name, ())
            if ins and len(ins) > len(outs):
                level[name] = max(level[s] for s in ins) + 1
    low = min(level.values(), default=0)
    return {name: k - low for name, k in level.items()}


def estimate_width(graph, node_lines: dict, edge_lines: dict, rankdir: str, min_node_width: float = 0) -> float:
    """The drawing's width in points laid out ``rankdir`` ("LR" or "TB").

    ``node_lines``: operator name -> its label's lines; ``edge_lines``: (source, target) -> the
    edge label's lines.
    """
    level = levels(graph)
    node = {name: max(NODE_MIN_WIDTH, min_node_width, label_width(lines, NODE_FONT) + NODE_PAD)
            for name, lines in node_lines.items()}
    label = {key: label_width(lines, EDGE_FONT) + EDGE_LABEL_PAD for key, lines in edge_lines.items()}
    frames = [(chain, text_width("chain: " + " + ".join(chain), CLUSTER_FONT) + CLUSTER_PAD)
              for chain in graph.chains() if len(chain) > 1]
    depth = max(level.values(), default=0) + 1
    if rankdir == "LR":  # levels across the page, a label rank between two of them
        column = [0.0] * depth
        for name, w in node.items():
            column[level[name]] = max(column[level[name]], w)
        gap = [0.0] * depth  # gap[k]: between level k and k + 1
        for (source, _), w in label.items():
            gap[level[source]] = max(gap[level[source]], w)
        step = [column[k] + (RANK_SEP + gap[k] if k < depth - 1 else 0) for k in range(depth)]
        width = sum(step)
        for chain, title in frames:  # a frame's title wider than what the frame holds widens it
            first, last = level[chain[0]], level[chain[-1]]
            held = sum(step[first:last]) + column[last]
            width += max(0.0, title - held - CLUSTER_PAD)
        return width + MARGIN + (CLUSTER_PAD if frames else 0)
    # TB: the operators of a level side by side, and between two levels a rank of edge labels.
    # An edge's label sits at the middle rank of the ranks it spans (a node rank when it skips
    # a level); every other rank it passes holds a thin virtual node of it.
    row = [0.0] * depth
    for name, w in node.items():
        row[level[name]] += w + NODE_SEP
    between = [0.0] * depth  # between[k]: the label rank under level k
    for key, w in label.items():
        top, bottom = level[key[0]], level[key[1]]
        middle = top + bottom  # in ranks counted twice as fine: node ranks even, label ranks odd
        for rank in range(2 * top + 1, 2 * bottom):
            held = (w if rank == middle else VIRTUAL) + NODE_SEP
            if rank % 2:
                between[rank // 2] += held
            else:
                row[rank // 2] += held
    widest = max(max(row), max(between)) - NODE_SEP
    widest = max([widest] + [title + CLUSTER_PAD for _, title in frames])
    return widest + MARGIN + (CLUSTER_PAD if frames else 0)
