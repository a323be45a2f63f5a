"""A verdict says what differs: check_same_rows names a missing row, a row too many, or the first
key whose values differ, with both values; compared with a small reference model on random tables."""

import pandas as pd
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from fw_magics.teaching.exercises import (
    NotQuite,
    check,
    check_interval,
    check_same_list,
    check_same_rows,
    interval_hint,
)


@st.composite
def two_tables(draw):
    """A table keyed by sensor, and a copy with some rows changed, dropped or added."""
    keys = draw(st.lists(st.integers(0, 30), min_size=1, max_size=12, unique=True))
    want = pd.DataFrame({"sensor": keys, "low": [draw(st.integers(0, 9)) for _ in keys],
                         "high": [draw(st.integers(10, 19)) for _ in keys]})
    got = want.copy()
    changed = draw(st.sets(st.sampled_from(keys)))
    for key in changed:
        got.loc[got["sensor"] == key, "low"] += 1
    dropped = draw(st.sets(st.sampled_from(keys)))
    got = got[~got["sensor"].isin(dropped)]
    added = draw(st.sets(st.integers(31, 40), max_size=2))
    if added:
        got = pd.concat([got, pd.DataFrame({"sensor": sorted(added), "low": 0, "high": 10})], ignore_index=True)
    return got.sample(frac=1, random_state=draw(st.integers(0, 9))), want, changed - dropped, dropped, added


def reference_verdict(got, want, changed, dropped, added):
    """What the verdict must say, from what was done to the copy (None: the tables agree)."""
    def named(keys):
        shown = sorted(keys, key=repr)
        return ", ".join(map(repr, shown[:3])) + (" ..." if len(shown) > 3 else "")
    if dropped:
        return f"not quite: got has no row for sensor {named(dropped)} ({len(got)} rows, want {len(want)})"
    if added:
        return f"not quite: got has a row for sensor {named(added)}, which want does not"
    if changed:
        key = sorted(changed, key=repr)[0]
        low = int(want.loc[want["sensor"] == key, "low"].iloc[0])
        return f"not quite: sensor {key!r}: got low={low + 1}; want low={low}"
    return None


@settings(max_examples=60, deadline=None)
@given(two_tables())
def test_the_verdict_names_what_was_done_to_the_rows(case):
    got, want, *done = case
    says = reference_verdict(got, want, *done)
    if says is None:
        check_same_rows(got, want, key="sensor")
    else:
        with pytest.raises(NotQuite) as verdict:
            check_same_rows(got, want, key="sensor")
        assert str(verdict.value) == says


def test_not_quite_shows_as_its_message_alone():
    with pytest.raises(NotQuite) as raised:
        check(False, "not quite: 3, not 4")
    assert raised.value._render_traceback_() == ["\x1b[0;31mnot quite: 3, not 4\x1b[0m"]


@settings(max_examples=80, deadline=None)
@given(st.lists(st.sampled_from(["KP1", "KP2", "KP3", "KP4"]), max_size=5),
       st.lists(st.sampled_from(["KP1", "KP2", "KP3", "KP4"]), max_size=5))
def test_a_wrong_list_is_named_by_its_first_difference(got, want):
    """check_same_list (tutorial 7's verdict) against a plain loop: where the lists first part."""
    at = 0
    while at < len(got) and at < len(want) and got[at] == want[at]:
        at += 1
    if got == want:
        check_same_list(got, want, "partition")
        check_same_list(tuple(got), want, "partition")
        return
    with pytest.raises(NotQuite) as verdict:
        check_same_list(got, want, "partition", hint="7 // 2 each")
    said = str(verdict.value)
    mine = repr(got[at]) if at < len(got) else "nothing more"
    theirs = repr(want[at]) if at < len(want) else "nothing more"
    assert said.startswith(f"not quite: got {got!r} (")
    assert said.endswith(f"the first difference is at position {at}: got {mine}, want {theirs} (7 // 2 each)")


def test_a_list_answer_of_another_type_is_named():
    with pytest.raises(NotQuite, match=r"^not quite: the answer is a str \('KP5'\); accepted: a list of partitions$"):
        check_same_list("KP5", ["KP5", "KP6"], "partition")


@settings(max_examples=80, deadline=None)
@given(st.integers(-10**6, 0), st.integers(0, 10**6), st.sampled_from(["right", "seconds", "minutes", "after",
                                                                          "swapped", "other"]), st.integers(1, 999))
def test_the_interval_verdict_names_the_unit_and_the_side(low, high, mistake, nudge):
    """interval_hint and check_interval (tutorial 8's verdict) against what was done to the right bounds."""
    want = (low * 60_000, high * 60_000)  # whole minutes: divisible by either unit
    bounds = {"right": want, "seconds": (want[0] // 1000, want[1] // 1000), "minutes": (low, high),
              "after": (-want[1], -want[0]), "swapped": (want[1] + nudge, want[0]),
              "other": (want[0] + nudge, want[1] + nudge)}[mistake]
    hint = interval_hint(bounds, want)
    if mistake == "right" or (mistake in ("after", "seconds", "minutes") and bounds == want):
        assert hint == ""
        check_interval(5, 5, bounds, want)
        return
    expected = {
        "seconds": f"off by 1,000x: the bounds are in milliseconds, so ({bounds[0]:,}, {bounds[1]:,}) is "
                   f"{bounds[0]:,} ms to {bounds[1]:,} ms, not seconds",
        "minutes": f"off by 60,000x: the bounds are in milliseconds, so ({bounds[0]:,}, {bounds[1]:,}) is "
                   f"{bounds[0]:,} ms to {bounds[1]:,} ms, not minutes",
        "after": "that is the interval after each record: before it is negative",
        "swapped": f"lower {bounds[0]:,} is greater than upper {bounds[1]:,}: lower is the earlier bound",
        "other": None}[mistake]
    if expected is not None:
        assert hint == expected
    else:  # shifted by 1-999 ms: no unit or side explains it, unless it is the other side of the record
        assert hint in ("", "that is the interval after each record: before it is negative")
    with pytest.raises(NotQuite) as verdict:
        check_interval(3, 120, bounds, want, "(order, change) pairs")
    said = str(verdict.value)
    assert said.startswith(f"not quite: between({bounds[0]:,}, {bounds[1]:,}) found 3 (order, change) pairs; want 120")
    assert said.endswith(f"; {hint}" if hint else "(the bounds are milliseconds from the record's time, before it "
                                                   "negative)")
