"""GraphCanvas: the clickable, zoomable SVG of a job graph, an anywidget whose files ship in the package."""

from __future__ import annotations

import pathlib

import anywidget
import traitlets

from fw_magics.graph.render import BADGE_LINES

STATIC = pathlib.Path(__file__).parent / "static"


class GraphCanvas(anywidget.AnyWidget):
    """Draws Graphviz's SVG; clicks set ``selected``; Python sets ``highlighted`` and ``states``.

    ``badge_lines``: the lines left free at the bottom of every box (``to_svg(..., badges=True)``)
    where the badges go, so that none reaches past its box, a chain's frame or the drawing.
    """

    _esm = (STATIC / "graph.js").read_text(encoding="utf-8")
    _css = (STATIC / "graph.css").read_text(encoding="utf-8")

    svg = traitlets.Unicode("").tag(sync=True)
    operators = traitlets.Dict().tag(sync=True)  # SVG node id -> operator name
    badge_lines = traitlets.Int(BADGE_LINES).tag(sync=True)
    selected = traitlets.Unicode("").tag(sync=True)
    highlighted = traitlets.Dict().tag(sync=True)  # operator -> badge text
    states = traitlets.Dict().tag(sync=True)  # operator -> {"state": ..., "text": ...}
