"""One key's state through a job's life, as the state inspector shows it: pure Python, no Spark.

The Spark side (``runtime/streaming/savepoints/inspector.py``) reads the key's state at each committed
micro-batch still kept and in each of the job's savepoints, newest first and at most ``DEFAULT_LIMIT`` of
each (``newest``; each reading costs Spark a stage or three); ``history`` lays those readings out as one
table, oldest first: ``at`` (``micro-batch`` or ``savepoint``), ``batch`` (the micro-batch, or the one a
savepoint was taken after), ``savepoint`` (its name), ``found`` (``present``, or ``absent``: the key had no
state there, its state columns empty), then the key's state columns (a state named as one of those four is
shown as ``state <name>``).
"""

from __future__ import annotations

import html
from dataclasses import dataclass

MICRO_BATCH, SAVEPOINT = "micro-batch", "savepoint"
PRESENT, ABSENT = "present", "absent"
AT, BATCH, NAME, FOUND = "at", "batch", "savepoint", "found"
FIXED = (AT, BATCH, NAME, FOUND)
#: How many micro-batches (and how many savepoints) are read, newest first, unless told otherwise.
DEFAULT_LIMIT = 10


@dataclass(frozen=True)
class Reading:
    """The key's state at one micro-batch or in one savepoint: its state columns (name -> value), None: absent."""

    at: str
    batch: int | None
    state: dict | None
    savepoint: str | None = None


@dataclass(frozen=True)
class KeyHistory:
    """The table (``columns``, ``rows`` as dicts: ``pandas.DataFrame(rows, columns=columns)``; this package imports
    the standard library only) and a note saying what was not read ('' when all was)."""

    key: dict
    columns: tuple
    rows: tuple
    note: str = ""

    def _repr_html_(self) -> str:
        head = "".join(f"<th>{html.escape(c)}</th>" for c in self.columns)
        body = "".join("<tr>" + "".join(f"<td>{html.escape(str(row.get(c, '')))}</td>" for c in self.columns)
                       + "</tr>" for row in self.rows)
        note = f"<p>{html.escape(self.note)}</p>" if self.note else ""
        return f"<table><thead><tr>{head}</tr></thead><tbody>{body}</tbody></table>{note}"


def newest(items, limit: int) -> tuple[list, list]:
    """(the ``limit`` newest of ``items`` (oldest first given), newest first; the older rest, oldest first)."""
    items = list(items)
    cut = max(len(items) - limit, 0)
    return items[cut:][::-1], items[:cut]


def history(key: dict, readings, note: str = "") -> KeyHistory:
    """``readings`` as the key's table: by batch, a savepoint after the micro-batch it was taken after."""
    shown = {}
    for reading in readings:
        for name in reading.state or {}:
            shown.setdefault(name, f"state {name}" if name in FIXED else name)
    ordered = sorted(readings, key=lambda r: (r.batch if r.batch is not None else -1, r.at == SAVEPOINT,
                                              r.savepoint or ""))
    rows = tuple({AT: r.at, BATCH: r.batch, NAME: r.savepoint, FOUND: ABSENT if r.state is None else PRESENT,
                  **{shown[name]: value for name, value in (r.state or {}).items()}} for r in ordered)
    return KeyHistory(dict(key), FIXED + tuple(shown.values()), rows, note)
