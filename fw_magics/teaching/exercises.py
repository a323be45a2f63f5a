"""The tutorials' exercise checks: a wrong answer is one red line in the notebook, not a traceback.

A check cell calls ``check(answer == expected, "not quite: ...")``. A wrong answer raises
:class:`NotQuite`, which still stops a Run All there (as an assertion would), but IPython shows
it as its message alone (``_render_traceback_``, IPython's hook for an exception that draws
itself), so a learner reads what to look at, not a frame of the check's own code.
"""

from __future__ import annotations

__all__ = ["NotQuite", "check", "check_interval", "check_same_list", "check_same_rows", "interval_hint"]


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


def check_same_list(got, want: list, what: str = "item", hint: str = "") -> None:
    """Raise ``NotQuite`` unless ``got`` is a list (or tuple) equal to ``want``, naming the first
    position where they differ with both values there (or where one of them ends); ``hint`` follows."""
    plural = f"{what}s"
    if not isinstance(got, (list, tuple)):
        raise NotQuite(f"not quite: the answer is a {type(got).__name__} ({got!r:.60}); accepted: a list of {plural}")
    got = list(got)
    if got == want:
        return
    at = next((i for i, (mine, theirs) in enumerate(zip(got, want)) if mine != theirs), min(len(got), len(want)))
    mine = repr(got[at]) if at < len(got) else "nothing more"
    theirs = repr(want[at]) if at < len(want) else "nothing more"
    raise NotQuite(f"not quite: got {got!r} ({_counted(len(got), what)}), want {_counted(len(want), what)}; "
                   f"the first difference is at position {at}: got {mine}, want {theirs}" + (f" ({hint})" if hint else ""))


def _counted(n: int, word: str) -> str:
    return f"{n:,} {word}{'' if n == 1 else 's'}"


#: units a learner may give a bound in instead of milliseconds, and how many milliseconds one is
_UNITS = (("seconds", 1_000), ("minutes", 60_000))


def interval_hint(bounds: tuple, want: tuple) -> str:
    """What is wrong with ``bounds`` (lower, upper: milliseconds from a record's time) given the
    ``want``-ed ones, in a few words, or "" when nothing is recognised: another unit (off by 1,000x:
    seconds), the interval on the other side of the record, or the bounds the wrong way round."""
    lower, upper = bounds
    if tuple(bounds) == tuple(want):
        return ""
    if lower > upper:
        return f"lower {lower:,} is greater than upper {upper:,}: lower is the earlier bound"
    for unit, millis in _UNITS:
        if (lower * millis, upper * millis) == tuple(want):
            return (f"off by {millis:,}x: the bounds are in milliseconds, so ({lower:,}, {upper:,}) is "
                    f"{lower:,} ms to {upper:,} ms, not {unit}")
    if (-upper, -lower) == tuple(want) != tuple(bounds):
        return "that is the interval after each record: before it is negative"
    return ""


def check_interval(found: int, want: int, bounds: tuple, want_bounds: tuple, what: str = "pairs") -> None:
    """Raise ``NotQuite`` unless a join with ``bounds`` found the ``want``-ed number of ``what``: the
    verdict names both counts, the bounds and their unit (milliseconds), and what is wrong with them when
    it is recognised (:func:`interval_hint`: seconds for milliseconds, after for before)."""
    if found == want:
        return
    hint = interval_hint(bounds, want_bounds)
    raise NotQuite(f"not quite: between({bounds[0]:,}, {bounds[1]:,}) found {found:,} {what}; want {want:,}"
                   + (f"; {hint}" if hint else " (the bounds are milliseconds from the record's time, before it "
                      "negative)"))
