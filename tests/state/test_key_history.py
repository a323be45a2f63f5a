"""One key's state through a job's life as the inspector lays it out (fw_magics/state/key_history.py). No Spark."""

from __future__ import annotations

from hypothesis import given
from hypothesis import strategies as st

from fw_magics.state.key_history import (
    ABSENT,
    FIXED,
    MICRO_BATCH,
    PRESENT,
    SAVEPOINT,
    Reading,
    history,
    newest,
)


@given(st.lists(st.integers(), unique=True), st.integers(1, 30))
def test_newest_reads_the_newest_first_and_names_the_rest_oldest_first(items, limit):
    read, left = newest(items, limit)
    assert read == list(reversed(items))[:limit] and left == items[:max(len(items) - limit, 0)]


_STATE = st.none() | st.fixed_dictionaries({"count": st.integers(0, 9)}, optional={"seen": st.lists(st.integers())})


@st.composite
def readings(draw):
    batches = draw(st.lists(st.integers(0, 50), unique=True, max_size=8))
    out = [Reading(MICRO_BATCH, b, draw(_STATE)) for b in batches]
    for i, b in enumerate(draw(st.lists(st.sampled_from(batches), max_size=3)) if batches else []):
        out.append(Reading(SAVEPOINT, b, draw(_STATE), f"savepoint-{i:06d}"))
    return draw(st.permutations(out))


@given(readings())
def test_the_table_is_the_readings_oldest_first_a_savepoint_after_its_batch(found):
    table = history({"k": 1}, found)
    assert len(table.rows) == len(found)
    order = [(r["batch"], r["at"] == SAVEPOINT) for r in table.rows]
    assert order == sorted(order)
    expected = sorted(((r.at, r.batch, r.savepoint, r.state is None, tuple(sorted((r.state or {}).items())))
                       for r in found), key=repr)
    got = sorted(((r["at"], r["batch"], r["savepoint"], r["found"] == ABSENT,
                   tuple(sorted((k, v) for k, v in r.items() if k not in FIXED))) for r in table.rows), key=repr)
    assert got == expected
    assert all(r["found"] in (PRESENT, ABSENT) for r in table.rows)
    assert set(table.columns[:4]) == set(FIXED) and set(table.columns[4:]) == {
        name for r in found for name in (r.state or {})}


def test_a_state_named_as_a_fixed_column_is_shown_under_its_own_name():
    table = history({"k": 1}, [Reading(MICRO_BATCH, 3, {"batch": 7, "v": 1}), Reading(MICRO_BATCH, 4, None)])
    assert table.columns == (*FIXED, "state batch", "v")
    assert table.rows[0]["batch"] == 3 and table.rows[0]["state batch"] == 7
    assert table.rows[1]["found"] == ABSENT and "v" not in table.rows[1]
