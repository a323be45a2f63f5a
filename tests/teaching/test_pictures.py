"""The tutorials' pictures say what the rule and the event log say: each unit where a restore puts it,
the backlog, W and the micro-batches of a job."""

import re

from hypothesis import given, settings
from hypothesis import strategies as st

from fw_magics.recovery import events as E
from fw_magics.state import redistribute
from fw_magics.teaching import rescale_picture, switch_picture


@st.composite
def operator_states(draw):
    """(old, new parallelism, modes): 1-4 old subtasks, 1-3 states, up to 4 units each, all distinct."""
    names = draw(st.lists(st.sampled_from(["offsets", "buffer", "rules"]), min_size=1, max_size=3, unique=True))
    modes = {name: draw(st.sampled_from(["split", "union", "broadcast"])) for name in names}
    subtasks = draw(st.integers(1, 4))
    old = [{name: [f"{name[0]}{s}.{k}" for k in range(draw(st.integers(0, 4)))] for name in names}
           for s in range(subtasks)]
    return old, draw(st.integers(1, 5)), modes


@settings(max_examples=60, deadline=None)
@given(operator_states())
def test_the_rescale_picture_shows_every_unit_where_the_restore_puts_it(case):
    old, p, modes = case
    picture = rescale_picture(old, p, modes)
    want = redistribute(old, p, modes)
    lines = repr(picture).splitlines()
    assert len(lines) == p
    for j, line in enumerate(lines):
        shown = re.findall(r"(\w+) (\S+) \(from (\d+)\)", line)
        assert sorted((name, unit) for name, unit, _ in shown) == sorted(
            (name, unit) for name, units in want[j].items() for unit in units)
        for name, unit, s in shown:  # each says the old subtask that held it
            assert unit in old[int(s)][name]
    moves = sum(len(units) for subtask in want for units in subtask.values())
    assert picture.svg.count("<line ") == moves
    chips = re.findall(r"<text [^>]*>([^<]*\(from \d+\))</text>", picture.svg)
    assert len(chips) == moves


def test_the_seed_example_at_four_and_one():
    old = [{"partitions": ["KP1", "KP2"]}, {"partitions": ["KP3", "KP4"]}]
    assert repr(rescale_picture(old, 4, {"partitions": "split"})).splitlines() == [
        "new subtask 0: partitions KP1 (from 0)", "new subtask 1: partitions KP2 (from 0)",
        "new subtask 2: partitions KP3 (from 1)", "new subtask 3: partitions KP4 (from 1)"]
    assert repr(rescale_picture(old, 1, {"partitions": "split"})) == (
        "new subtask 0: partitions KP1 (from 0), partitions KP2 (from 0), partitions KP3 (from 1), "
        "partitions KP4 (from 1)")


class Recorded:
    """What switch_picture reads of a job: its events (as the job log records them)."""

    def __init__(self, events):
        self._events = events

    def events(self):
        return self._events


def test_the_switch_picture_draws_the_backlog_w_and_each_micro_batch_with_records():
    w = 1704095989000  # 2024-01-01 07:59:49 UTC
    job = Recorded([E.backlog_recorded({"files": 8, "bytes": 123}), E.switch(w, records=8000, state_writes=40),
                    E.micro_batch(0, 0, 0, w), E.micro_batch(1, 1000, 40, w + 3_600_000),
                    E.micro_batch(2, 3000, 40, w + 7_200_000)])
    picture = switch_picture(job)
    assert repr(picture) == ("backlog: 8 files (8,000 records), one batch job, 40 state writes | "
                             "switch: W = 2024-01-01 07:59:49 UTC | "
                             "stream: 4,000 records in 2 micro-batches with records (3 in all)")
    shares = [float(x) for x in re.findall(r"flex:([0-9.]+)", picture.html)]
    assert len(shares) == 3 and abs(sum(shares) - 1) < 1e-3  # the backlog, then batches 1 and 2
    assert shares[0] > shares[2] > shares[1] > 0  # widths follow the records: 8,000, then 1,000 and 3,000
    assert "micro-batch 1: 1,000 records" in picture.html and "micro-batch 0" not in picture.html


def test_the_switch_picture_of_a_job_that_has_not_switched():
    picture = switch_picture(Recorded([E.backlog_recorded({"rows": 3000})]))
    assert repr(picture) == "backlog: 3,000 rows, not read yet | no switch yet | stream: 0 records in 0 micro-batches with records (0 in all)"
