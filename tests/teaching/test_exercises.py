"""A verdict says what differs: check_same_rows names a missing row, a row too many, or the first
key whose values differ, with both values; compared with a small reference model on random tables."""

import pandas as pd
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from fw_magics.teaching.exercises import NotQuite, check, check_same_rows


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
