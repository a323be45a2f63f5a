"""The tutorials' exercise checks: a wrong answer is one red line in the notebook, not a traceback.

A check cell calls ``check(answer == expected, "not quite: ...")``. A wrong answer raises
:class:`NotQuite`, which still stops a Run All there (as an assertion would), but IPython shows
it as its message alone (``_render_traceback_``, IPython's hook for an exception that draws
itself), so a learner reads what to look at, not a frame of the check's own code.
"""

from __future__ import annotations

__all__ = ["NotQuite", "check", "check_same_rows"]


class NotQuite(AssertionError):
    """A wrong answer to a tutorial's exercise; its message says what to look at."""

    def _render_traceback_(self) -> list[str]:
        return [f"\x1b[0;31m{self}\x1b[0m"]


def check(correct: bool, why: str) -> None:
    """Raise ``NotQuite(why)`` unless ``correct``."""
    if not correct:
        raise NotQuite(why)


def check_same_rows(got, want, key: str) -> None:
    """Raise ``NotQuite`` naming what differs between two pandas tables of one row per ``key``: a key
    missing from ``got`` or one too many, else the first key (in order) whose values differ, with
    ``got``'s and ``want``'s values of the columns that differ (only ``want``'s columns are compared;
    3 and 3.0 are the same value, and so are two missing values)."""
    import pandas as pd

    def plain(value):
        return None if value is None or (not isinstance(value, (list, tuple)) and pd.isna(value)) else (
            value.item() if hasattr(value, "item") else value)

    rows = {name: {plain(r[key]): {c: plain(v) for c, v in r.items()} for r in table.to_dict("records")}
            for name, table in (("got", got), ("want", want))}
    missing = sorted(set(rows["want"]) - set(rows["got"]), key=repr)
    extra = sorted(set(rows["got"]) - set(rows["want"]), key=repr)
    if missing:
        raise NotQuite(f"not quite: got has no row for {key} {', '.join(map(repr, missing[:3]))}"
                       f"{' ...' if len(missing) > 3 else ''} ({len(rows['got'])} rows, want {len(rows['want'])})")
    if extra:
        raise NotQuite(f"not quite: got has a row for {key} {', '.join(map(repr, extra[:3]))}"
                       f"{' ...' if len(extra) > 3 else ''}, which want does not")
    columns = [c for c in want.columns if c != key]
    for k in sorted(rows["want"], key=repr):
        mine, theirs = rows["got"][k], rows["want"][k]
        differ = [c for c in columns if mine.get(c) != theirs[c]]
        if differ:
            got_says, want_says = (", ".join(f"{c}={row.get(c)!r}" for c in differ) for row in (mine, theirs))
            raise NotQuite(f"not quite: {key} {k!r}: got {got_says}; want {want_says}")
