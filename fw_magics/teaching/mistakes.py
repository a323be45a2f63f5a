"""Mistakes shown side by side: run each attempt, and show the one line each was refused with.

:func:`refusals` (tutorial 7): a table of what was tried and what fw-magics said, where a long
temporary path reads as its last two parts (``…/savepoints/savepoint-000001``, the full path on
hover), so that the reason is what a reader sees.
"""

from __future__ import annotations

import html
import re

from .pictures import Picture

__all__ = ["refusals", "short_paths"]

#: an absolute path of at least three parts, up to a space, a quote, a bracket or punctuation after it
_PATH = re.compile(r"(?<![\w.<>~])/(?:[^\s/'\"(),;]+/){2,}[^\s/'\"(),;]*[^\s/'\"(),;:.]")


def short_paths(message: str) -> list[tuple[str, str | None]]:
    """``message`` in pieces: ``(text, None)`` as it is, ``(…/last/two, full path)`` for each absolute
    path of three parts or more."""
    pieces, at = [], 0
    for found in _PATH.finditer(message):
        parts = found.group(0).rstrip("/").split("/")
        pieces += [(message[at:found.start()], None), ("…/" + "/".join(parts[-2:]), found.group(0))]
        at = found.end()
    return [piece for piece in pieces + [(message[at:], None)] if piece[0]]


def refusals(attempts: dict) -> Picture:
    """Run each of ``attempts`` (what it tries -> a function of no arguments), each expected to be refused
    with an ``fw.FwMagicsError`` (a user's mistake, in one line); a table of what was tried, the error's type and
    its message, long paths shortened (:func:`short_paths`). An attempt that is not refused says so in
    the table ("not refused: it returned ..."); any other error propagates, traceback and all."""
    from ..errors import FwMagicsError

    rows = []
    for what, attempt in attempts.items():
        try:
            value = attempt()
        except FwMagicsError as error:
            rows.append((what, type(error).__name__, short_paths(str(error))))
        else:
            rows.append((what, "not refused", [(f"it returned {value!r:.80}", None)]))
    text = "\n".join(f"{what}:\n    {kind}: {''.join(t for t, _ in pieces)}" for what, kind, pieces in rows)

    def cell(pieces):
        return "".join(html.escape(t) if full is None else
                       f"<code title='{html.escape(full, quote=True)}'>{html.escape(t)}</code>" for t, full in pieces)

    body = "".join(f"<tr><td style='text-align:left'>{html.escape(what)}</td><td style='text-align:left'><code>"
                   f"{html.escape(kind)}</code></td><td style='text-align:left'>{cell(pieces)}</td></tr>"
                   for what, kind, pieces in rows)
    table = ("<table><thead><tr><th style='text-align:left'>tried</th><th style='text-align:left'>refused with</th>"
             f"<th style='text-align:left'>the one line it says</th></tr></thead><tbody>{body}</tbody></table>")
    return Picture(text, html_=table)
