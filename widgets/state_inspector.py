"""StateInspector: one key's state through a keyed job's life, under its graph (``show_graph(job)``) and in its
live view (``job.show()``, folded until opened).

Click the keyed operator, type a key (Enter) or pick one of the keys offered, and a table lists the key's
state at each committed micro-batch still kept and in each savepoint (*read again* after new ones) (``fw_magics.state.key_history``).
What it reads is given as two functions (``read(text)`` -> ``KeyHistory``, ``choices()`` -> key texts;
``for_job(job)`` gives ``inspector.key_history`` and ``key_choices`` of the job), run in a thread so the
kernel stays free while Spark reads; ``show(text)`` reads in the caller's thread (tests, code).
"""

from __future__ import annotations

import html
import threading

import ipywidgets as W

from fw_magics.errors import FwMagicsError, error_summary

from .job_view_model import table_html

_PICK = "(pick a key)"


class StateInspector(W.VBox):
    """A key box, a pick list of keys and the key's table; ``operator``: the keyed operator it inspects."""

    def __init__(self, operator: str, key_names, read, choices):
        self.operator, self._read, self._choices = operator, read, choices
        self.last = None  # the last KeyHistory shown
        self._lock = threading.Lock()
        self._offered = False
        self.title = W.HTML(f"<b>State of a key</b> in <code>{html.escape(operator)}</code>, by "
                            f"{html.escape(', '.join(key_names))}")
        self.key = W.Text(placeholder=", ".join(key_names), description="key", continuous_update=False,
                          layout=W.Layout(width="260px"))
        self.key.add_class("fw-state-key")
        self.pick = W.Dropdown(options=[_PICK], value=_PICK, description="or pick", layout=W.Layout(width="260px"))
        self.pick.add_class("fw-state-pick")
        self.message = W.HTML("")
        self.message.add_class("fw-state-message")
        self.table = W.HTML("")
        self.table.add_class("fw-state-table")
        self.again = W.Button(description="read again", tooltip="the key's state now (new micro-batches, savepoints)")
        self.again.add_class("fw-state-again")
        self.key.observe(lambda change: self._in_thread(self.show, change["new"]), "value")
        self.pick.observe(self._on_pick, "value")
        self.again.on_click(lambda _: self._in_thread(self.show, self.key.value))
        super().__init__([self.title, W.HBox([self.key, self.pick, self.again]), self.message, self.table])
        self.add_class("fw-state-inspector")

    def _in_thread(self, action, *args) -> None:
        threading.Thread(target=action, args=args, name=f"fw-state-inspector {self.operator}", daemon=True).start()

    def _on_pick(self, change) -> None:
        if change["new"] != _PICK:
            self.key.value = change["new"]  # shows it (the key box's observer)

    def opened(self) -> None:
        """The operator was selected: offer keys, once (a Spark read, in a thread)."""
        if not self._offered:
            self._offered = True
            self._in_thread(self.offer)

    def offer(self) -> list[str]:
        """Fill the pick list with keys of the job's latest state."""
        try:
            keys = list(self._choices())
        except Exception as error:
            self._say(f"no keys to pick: {error_summary(error)}")
            return []
        self.pick.options = [_PICK, *keys]
        return keys

    def show(self, text: str):
        """Read ``text``'s state and draw its table; a bad key or a failed read is one line. Returns the
        ``KeyHistory`` (None when nothing was read)."""
        text = (text or "").strip()
        if not text:
            return None
        with self._lock:
            self._say(f"reading the state of key {text!r}…")
            try:
                found = self._read(text)
            except Exception as error:  # a bad key (one line) or a failed read: said, no table
                self.table.value = ""
                self._say(str(error) if isinstance(error, FwMagicsError) else f"state not read: {error_summary(error)}")
                return None
            self.last = found
            key = ", ".join(f"{k} = {v!r}" for k, v in found.key.items())
            self.table.value = table_html(list(found.columns), list(found.rows), caption=f"key {key}")
            self._say(found.note)
            return found

    def _say(self, text: str) -> None:
        self.message.value = f"<i>{html.escape(text)}</i>" if text else ""


def for_job(job) -> StateInspector | None:
    """The inspector of a running or ended streaming job's keyed operator; None for a job whose operator is not
    keyed (its state is one per subtask: ``no_state(job, name)`` says so)."""
    import functools

    from fw_magics.runtime.streaming.savepoints import KEYED
    from fw_magics.runtime.streaming.savepoints.inspector import key_choices, key_history

    if job.state_kind is not KEYED:
        return None
    return StateInspector(job.stateful.step.name, job.spec.key_names, functools.partial(key_history, job),
                          functools.partial(key_choices, job))


def no_state(job, name: str) -> str:
    """Why operator ``name`` of ``job`` has no keyed state to inspect, in one line."""
    from fw_magics.runtime.streaming.savepoints import KEYED

    if job.state_kind is not KEYED:
        return (f"{name!r} has no keyed state to inspect: job {job.job_name!r} runs a non-keyed operator, whose "
                "state is one per subtask (its savepoints' operator_state)")
    return f"{name!r} has no keyed state to inspect: only the keyed operator {job.stateful.step.name!r} keeps state per key"
