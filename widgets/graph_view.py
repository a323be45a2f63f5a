"""GraphView: the job-graph widget (canvas, attributes panel, what-if control, live state)."""

from __future__ import annotations

import html

import ipywidgets as W

from fw_magics.graph.render import counted, legend_html, node_ids, summary, to_html, to_svg

from . import live
from .canvas import GraphCanvas
from .model import operator_info, operator_states, vertex_states, what_if
from .rescale_view import RescaleControls, rescale_rows, savepoint_label, table_html

STATE_LEGEND = (
    "Outline and badge give each operator's state in a run: "
    "<b>pending</b> grey dotted, <b>running</b> blue, <b>finished</b> green, "
    "<b>failed</b> red dotted, <b>recovered</b> (kept from an earlier run) purple dashed; "
    "a what-if restart is a red dashed outline with a 'restarts n/p' badge. "
    "Ctrl or Cmd + wheel, a pinch or the buttons zoom; the wheel or a drag pans; "
    "<i>fit</i> shows the whole graph, <i>reset</i> as much as fits with no text under 11 px."
)


def _yes(flag: bool) -> str:
    return "yes" if flag else "no"


class GraphView(W.VBox):
    """The job graph of a DataStream, a JobResult or a JobGraph, drawn by Graphviz.

    Click an operator (or ``select(name)``) to see its attributes; pick a subtask to fail
    (or ``what_if(name, subtask)``) to see what region failover and restart-all restart.
    Given savepoints (``offer_savepoints``, done by ``show_graph(job)``), pick one and a
    parallelism (or ``rescale_savepoint(path, n)``) to see where each state unit goes. While ``execute()`` runs a job with this graph in this kernel, operators show their
    live state and record counts.
    """

    def __init__(self, graph, stream=None, title: str | None = None, follow: bool = True):
        self.graph = graph
        self._stream = stream
        self._fragments: dict[str, str] | None = None
        self._static: dict[str, str] | None = None  # the drawing for where widgets do not render
        self.vertex_of = {op: v.name for v in graph.job_vertices() for op in v.operators}
        ids = node_ids(graph)
        self.canvas = GraphCanvas(svg=to_svg(graph, legend=False, caption=False, badges=True),
                                  operators={ids[name]: name for name in ids})
        self.header = W.HTML(f"<b>{html.escape(title or 'job graph')}</b> &mdash; "
                             f"{html.escape(summary(graph).splitlines()[0])}")
        self.details = W.HTML("<i>Click an operator to see its attributes.</i>")
        self.details.add_class("fw-details")
        self.state_panel = W.VBox([])  # a streaming job's state inspector (inspect_state)
        self.state_panel.add_class("fw-state-panel")
        self.inspectors: dict = {}
        self._no_state = None
        names = [op.name for op in graph.operators]
        self.fail_operator = W.Dropdown(options=names, description="fail", layout=W.Layout(width="auto"),
                                        style={"description_width": "initial"})
        self.fail_subtask = W.BoundedIntText(value=0, min=0, max=graph.operator(names[0]).parallelism - 1,
                                             description="subtask", layout=W.Layout(width="130px"),
                                             style={"description_width": "initial"})
        # the toggle keeps its two buttons on one row; the row of controls wraps as a whole
        self.mode = W.ToggleButtons(options=[("region failover", "region"), ("restart all", "all")],
                                    value="region", tooltips=["FLIP-1: restart the failed pipelined region",
                                                              "restart every task of the job"],
                                    style={"button_width": "auto"}, layout=W.Layout(width="auto", flex="0 0 auto"))
        self.mode.add_class("fw-whatif-mode")
        self.fail_button = W.Button(description="What restarts?", button_style="warning")
        self.fail_button.add_class("fw-whatif-fail")
        self.clear_button = W.Button(description="clear")
        self.whatif_text = W.HTML("")
        self.whatif_text.add_class("fw-whatif-result")
        self.legend = W.HTML(legend_html(graph, more=f"<div style='margin-top:4px'>{STATE_LEGEND}</div>"))
        self.stream_panel = W.HTML("")  # a streaming job's phase, backlog, switch, micro-batches
        self.stream_panel.add_class("fw-stream-panel")
        self.stream = None  # the last status show_stream drew
        self.last_what_if = None
        self.rescale_text = W.HTML("")
        self.rescale_text.add_class("fw-rescale-result")
        self.last_rescale = None
        self.last_rescale_operators = None
        self.rescale_controls = RescaleControls(lambda path, n: self.rescale_savepoint(path, n))
        self.fail_operator.observe(self._on_fail_operator, "value")
        self.fail_button.on_click(lambda _: self.what_if(self.fail_operator.value, self.fail_subtask.value))
        self.clear_button.on_click(lambda _: self.clear())
        self.mode.observe(lambda _: self._show_what_if(), "value")
        self.canvas.observe(self._on_select, "selected")
        controls = W.HBox([self.fail_operator, self.fail_subtask, self.mode, self.fail_button, self.clear_button],
                          layout=W.Layout(flex_flow="row wrap", align_items="center"))
        controls.add_class("fw-whatif-controls")
        super().__init__([self.header, self.legend, self.canvas, self.stream_panel, self.details, self.state_panel,
                          controls, self.whatif_text, self.rescale_controls, self.rescale_text])
        self.add_class("fw-graph-view")
        if follow:
            live.watch(self)

    # -- selection ------------------------------------------------------------------------

    @property
    def selected(self) -> str:
        return self.canvas.selected

    def select(self, name: str) -> None:
        self.graph.operator(name)  # a clear error for an unknown name
        self.canvas.selected = name

    def _on_select(self, change) -> None:
        name = change["new"]
        self.details.value = self._details_html(name) if name else ""
        if name:  # the what-if row follows the click: "what if this one fails?" is one press away
            self._pick(name)
        self._show_state_panel(name)

    def inspect_state(self, inspectors: dict, no_state) -> None:
        """Selecting an operator of ``inspectors`` (name -> ``StateInspector``) shows its inspector; selecting
        another says in one line why it has nothing to inspect (``no_state(name)``)."""
        self.inspectors, self._no_state = dict(inspectors), no_state
        self._show_state_panel(self.selected)

    def _show_state_panel(self, name: str) -> None:
        inspector = self.inspectors.get(name)
        if inspector is not None:
            self.state_panel.children = [inspector]
            inspector.opened()
        elif name and self._no_state is not None:
            line = W.HTML(f"<i>{html.escape(self._no_state(name))}</i>")
            line.add_class("fw-state-none")
            self.state_panel.children = [line]
        else:
            self.state_panel.children = []

    def _pick(self, name: str, subtask: int | None = None) -> None:
        """Show ``name`` (and ``subtask``) in the what-if row."""
        if self.fail_operator.value != name:
            self.fail_operator.value = name  # sets the subtask's bounds (_on_fail_operator)
        if subtask is not None:
            self.fail_subtask.value = subtask

    def attributes(self, name: str) -> dict:
        """What the attributes panel shows for ``name``, the Spark plan fragment included."""
        info = operator_info(self.graph, name)
        info["plan"] = self.plan_fragment(name)
        return info

    def plan_fragment(self, name: str) -> str:
        if self._stream is None:
            return "(no DataStream here: only the job graph was given, e.g. read from an event log)"
        if self._fragments is None:
            from .plan_fragments import plan_fragments

            try:
                self._fragments = plan_fragments(self._stream, self.graph)
            except Exception as error:  # the drawing must not break because planning did
                return f"(Spark could not plan it: {type(error).__name__}: {str(error).splitlines()[0][:200]})"
        return self._fragments.get(name, "")

    def _details_html(self, name: str) -> str:
        a = self.attributes(name)
        rows = [
            ("operator", a["name"]), ("kind", a["kind"]), ("parallelism", a["parallelism"]),
            ("output only after end of input", _yes(a["output_only_after_end_of_stream"])),
            ("internal sorter", _yes(a["internal_sorter_supported"])),
            ("chainable", _yes(a["chainable"])),
            ("chain", " + ".join(a["chain"])), ("pipelined regions", a["regions"]),
            ("inputs", ", ".join(f"{s} ({r}, {p})" for s, r, p in a["inputs"]) or "none (a source)"),
            ("outputs", ", ".join(f"{t} ({r}, {p})" for t, r, p in a["outputs"]) or "none (a sink)"),
        ]
        table = "".join(f"<tr><th style='text-align:left'>{html.escape(k)}</th>"
                        f"<td style='text-align:left' data-key='{html.escape(k)}'>{html.escape(str(v))}</td></tr>"
                        for k, v in rows)
        return (f"<div class='fw-attributes'><table>{table}</table>"
                f"<div><b>Spark plan fragment</b></div><pre>{html.escape(a['plan'])}</pre></div>")

    # -- what if ----------------------------------------------------------------------------

    def _on_fail_operator(self, change) -> None:
        self.fail_subtask.max = self.graph.operator(change["new"]).parallelism - 1

    def what_if(self, operator: str, subtask: int = 0, mode: str | None = None):
        """Highlight what restarts if ``operator[subtask]`` fails; returns the WhatIf."""
        if mode is not None:
            self.mode.value = mode
        self.last_what_if = what_if(self.graph, operator, int(subtask))
        self._pick(operator, int(subtask))
        self._show_what_if()
        return self.last_what_if

    def _show_what_if(self) -> None:
        w = self.last_what_if
        if w is None:
            return
        mode = self.mode.value
        counts = w.per_operator(mode)
        self.canvas.highlighted = {op: f"restarts {n}/{self.graph.operator(op).parallelism}"
                                   for op, n in counts.items()}
        shown = "region failover" if mode == "region" else "restart-all"
        n = len(w.restarted(mode))
        self.whatif_text.value = (f"<span class='fw-whatif-sentence'>{html.escape(w.sentence())}</span> "
                                  f"Highlighted ({shown}): <b class='fw-whatif-count'>{n:,}</b> "
                                  f"subtask{'' if n == 1 else 's'} in {counted(len(counts), 'operator')}.")

    def rescale_what_if(self, snapshots, new_parallelism: int) -> list[tuple]:
        """What-if for a restore at ``new_parallelism`` (FLIP-8): which old subtask's operator-state units
        go to which new subtask, as a table under the graph.

        ``snapshots``: one operator's subtask snapshots (``{name: {"mode", "units"}}`` per old
        subtask), e.g. ``fw.load_savepoint(path).operator_state["files(orders)"]``. Returns the rows
        ``(state, mode, old subtask, unit, new subtask)``; the moves come from
        ``fw_magics.state.assignment`` (Flink's round-robin repartitioner).
        """
        rows = rescale_rows(snapshots, new_parallelism)
        self.last_rescale = rows
        self.rescale_text.value = (f"<b>Restore at parallelism {new_parallelism}</b> (from {len(snapshots)}): "
                                   + table_html(rows))
        return rows

    def offer_savepoints(self, paths, parallelism: int | None = None) -> None:
        """Show the rescale row with ``paths`` (savepoint directories) to choose from."""
        self.rescale_controls.offer(paths, parallelism)

    def rescale_savepoint(self, path, new_parallelism: int, restored: bool = False) -> dict:
        """The rescale what-if of every operator with state in the savepoint at ``path``.

        Returns ``{operator: rows}`` (rows as :meth:`rescale_what_if`'s), draws one table per
        operator, and badges each operator on the graph ``state p -> n``. ``restored``: the job
        shown *was* restored from it at ``new_parallelism`` (the table says where its units came from).
        """
        from fw_magics.runtime.streaming.savepoints.files import load_savepoint

        savepoint = load_savepoint(path)
        old = savepoint.parallelism
        found = {name: rescale_rows(snapshots, new_parallelism)
                 for name, snapshots in savepoint.operator_state.items()}
        self.last_rescale = [row for rows in found.values() for row in rows]
        self.last_rescale_operators = found
        verb = "Restored" if restored else "Restore"
        batch = savepoint.document.get("batch")
        after = f", after micro-batch {batch}" if isinstance(batch, int) and batch >= 0 else ""
        parts = [f"<b>{verb} at parallelism {new_parallelism}</b> from "
                 f"<code title='{html.escape(savepoint.path, quote=True)}'>"
                 f"{html.escape(savepoint_label(savepoint.path))}</code> (taken at parallelism {old}{after}): "
                 "which old subtask's units go to which new subtask."]
        for name, rows in found.items():
            parts.append(f"<div><b>{html.escape(name)}</b></div>" + table_html(rows))
        self.rescale_text.value = "".join(parts)
        self.canvas.highlighted = {name: f"state {old} \u2192 {new_parallelism}" for name in found
                                   if name in {op.name for op in self.graph.operators}}
        self.rescale_controls.show(path, new_parallelism)  # the row says what the table shows
        return found

    @property
    def highlighted(self) -> dict:
        return dict(self.canvas.highlighted)

    def clear(self) -> None:
        self.last_what_if = None
        self.canvas.highlighted = {}
        self.whatif_text.value = ""

    # -- states -----------------------------------------------------------------------------

    def show_events(self, events, recovered=(), running=None, tasks=None) -> None:
        """Colour operators by the state the events (or their ``JobState``) leave them in (see model.vertex_states)."""
        self.canvas.states = operator_states(self.graph, vertex_states(self.graph, events, recovered, running, tasks))

    def show_stream(self, status: dict, graph=None) -> None:
        """Show a streaming job's status (``stream_status``): operator badges and the panel; with
        ``graph`` (the job's annotated graph), redraw the drawing with its notes (backlog, phase, W)."""
        from .stream_status import operator_states, panel_html

        if graph is not None and graph.fingerprint() == self.graph.fingerprint():
            self.graph, self._static = graph, None  # the notes show in the static drawing too
            self.canvas.svg = to_svg(graph, legend=False, caption=False, badges=True)
        self.stream = status
        self.canvas.states = operator_states(self.graph, status)
        self.stream_panel.value = panel_html(status)

    @property
    def states(self) -> dict:
        return {op: s["state"] for op, s in self.canvas.states.items()}

    # -- static fallback ----------------------------------------------------------------------

    def _repr_mimebundle_(self, include=None, exclude=None):
        """The live widget where widgets render; the static drawing (HTML, SVG) and a text
        summary everywhere else."""
        bundle = dict(super()._repr_mimebundle_(include=include, exclude=exclude) or {})
        if self._static is None:
            self._static = {"text/html": to_html(self.graph), "image/svg+xml": to_svg(self.graph)}
        bundle.update(self._static)
        bundle["text/plain"] = summary(self.graph)
        return bundle

