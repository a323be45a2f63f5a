"""The rescale what-if of the job-graph widget (FLIP-8): where each operator-state unit goes on a restore.

Like the failover what-if, a row of controls under the graph: pick a savepoint of the job and a
new parallelism, press the button, and a table lists, per operator with state, each unit with
the old subtask that holds it and the new subtask that will (Flink's round-robin rule,
``fw_magics.state.assignment``); the operators whose state moves get a badge on the graph. For
a job that was restored from a savepoint, ``show_graph(job)`` fills the table at once: where
its units came from.
"""

from __future__ import annotations

import html
import json
import os

import ipywidgets as W

from fw_magics.state import assignment
from fw_magics.state.snapshots import subtask_modes

HEADER = ("<table class='fw-rescale'><tr><th>state</th><th>mode</th><th>old subtask</th><th>unit</th>"
          "<th>new subtask</th></tr>")


def unit_text(unit) -> str:
    """A state unit in one cell: a split's file (and whether it was read), else its JSON."""
    if isinstance(unit, dict) and "file" in unit:
        return f"{unit['file']} ({'read' if unit.get('read') else 'to read'})"
    return json.dumps(unit)[:80]


def savepoint_label(path: str) -> str:
    """A savepoint's name and its job's: ``savepoint-000001 of 'orders'`` (a job's savepoints are in
    ``<job folder>/savepoints/``; a savepoint found elsewhere is named with the folder it is in)."""
    path = os.path.normpath(path)
    parent = os.path.dirname(path)
    owner = os.path.dirname(parent) if os.path.basename(parent) == "savepoints" else parent
    return f"{os.path.basename(path)} of {os.path.basename(owner)!r}"


def savepoint_choices(paths) -> list[tuple[str, str]]:
    """``(label, path)`` per savepoint, each once however it was spelled (a restored job's savepoint
    may be among the ones listed too), in the order given; a label names the savepoint alone, or
    with its job's name (:func:`savepoint_label`) when two of them share a name (``savepoint-000001``
    of the job restored from, and of the restored job)."""
    unique = {}
    for path in paths:
        unique.setdefault(os.path.realpath(path), path)
    paths = list(unique.values())
    names = [os.path.basename(os.path.normpath(p)) for p in paths]
    return [(savepoint_label(p) if names.count(name) > 1 else name, p) for name, p in zip(names, paths)]


def rescale_rows(snapshots, new_parallelism: int) -> list[tuple]:
    """``(state, mode, old subtask, unit, new subtask)`` for every unit each new subtask receives."""
    modes = subtask_modes(snapshots)
    old = [{name: entry["units"] for name, entry in snapshot.items()} for snapshot in snapshots]
    rows = []
    for name, per_new in assignment(old, new_parallelism, modes).items():
        for new, positions in enumerate(per_new):
            rows.extend((name, modes[name], s, old[s][name][k], new) for s, k in positions)
    return rows


def table_html(rows) -> str:
    body = "".join(
        f"<tr><td>{html.escape(n)}</td><td>{m}</td><td>{s}</td><td>{html.escape(unit_text(u))}</td><td>{t}</td></tr>"
        for n, m, s, u, t in rows)
    return HEADER + body + "</table>"


class RescaleControls(W.HBox):
    """The what-if row: a savepoint, a parallelism, and the button that asks where the state goes."""

    def __init__(self, on_ask):
        self.savepoint = W.Dropdown(options=[], description="savepoint", layout=W.Layout(width="auto"),
                                    style={"description_width": "initial"})
        self.parallelism = W.BoundedIntText(value=1, min=1, max=4096, description="restore at parallelism",
                                            layout=W.Layout(width="210px"), style={"description_width": "initial"})
        # wide enough for its words: the default 148 px cut them to "Where does the s…"
        self.button = W.Button(description="Where does the state go?", button_style="info",
                               layout=W.Layout(width="auto", min_width="210px"))
        self.button.add_class("fw-rescale-ask")
        self.button.on_click(lambda _: on_ask(self.savepoint.value, self.parallelism.value))
        super().__init__([self.savepoint, self.parallelism, self.button],
                         layout=W.Layout(flex_flow="row wrap", align_items="center", display="none"))
        self.add_class("fw-rescale-controls")

    def show(self, path: str, parallelism: int) -> None:
        """Set the row to a what-if asked in code (``rescale_savepoint(path, n)``): its savepoint and n."""
        if path in [value for _, value in self.savepoint.options]:
            self.savepoint.value = path
        self.parallelism.value = max(self.parallelism.min, min(parallelism, self.parallelism.max))

    def offer(self, paths, parallelism: int | None = None) -> None:
        """Offer ``paths`` (savepoint directories, oldest first; the newest is chosen); show the row."""
        choices = savepoint_choices(paths)
        paths = [path for _, path in choices]
        self.savepoint.options = choices
        if paths:
            self.savepoint.value = paths[-1]
        if parallelism is not None:
            self.parallelism.value = parallelism
        self.layout.display = "flex" if paths else "none"
