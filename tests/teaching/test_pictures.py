"""The tutorials' pictures say what the rule and the event log say: each unit where a restore puts it,
the backlog, W and the micro-batches of a job."""

import html
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
    assert_every_text_fits(picture.svg)


def assert_every_text_fits(svg):
    """Every line of text ends inside the picture, and a chip's inside its box, at 12 px sans-serif's
    widest letters (DejaVu Sans: 12 px for m, w, M, W, @ and %, 9.5 for other capitals, 7.7 the rest)."""
    def extent(text):
        text = html.unescape(text)
        wide = sum(ch in "MWmw@%" for ch in text)
        capitals = sum(ch.isupper() for ch in text) - sum(ch in "MW" for ch in text)
        return 12 * wide + 9.5 * capitals + 7.7 * (len(text) - wide - capitals)

    width = float(re.match(r"<svg [^>]*width='(\d+)'", svg).group(1))
    texts = re.findall(r"<text x='([\d.]+)'[^>]*>([^<]*)</text>", svg)
    assert texts
    for x, text in texts:
        assert float(x) + extent(text) <= width, (text, width)
    chips = re.findall(r"<rect x='([\d.]+)' y='[\d.]+' width='([\d.]+)' height='20'[^>]*/><text x='([\d.]+)'[^>]*>"
                       r"([^<]*)</text>", svg)
    for box_x, box_width, x, text in chips:
        assert float(x) + extent(text) <= float(box_x) + float(box_width), (text, box_width)


def test_the_rescale_picture_is_as_wide_as_its_caption_and_its_longest_unit():
    """Tutorial 7's picture was 590 px wide with a caption of about 900: the caption was cut (issue 51)."""
    old = [{"offsets": ["KP1@42", "KP2@7"], "history": ["h0"], "rules": ["max=10"]},
           {"offsets": ["KP3@13", "KP4@99"], "history": ["h1"], "rules": ["max=10"]}]
    modes = {"offsets": "split", "history": "union", "rules": "broadcast"}
    picture = rescale_picture(old, 3, modes)
    assert_every_text_fits(picture.svg)
    for name, mode in modes.items():
        assert f">{name}: {mode} (" in picture.svg  # the caption: a line per state and what its mode does
    long = [{"buffer": ["W" * 23, "wide " * 4]}]
    assert_every_text_fits(rescale_picture(long, 2, {"buffer": "split"}).svg)


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
    assert repr(picture) == ("backlog: 8 files (8,000 records) read by one batch job with 40 state writes | "
                             "switch: W = 2024-01-01 07:59:49 UTC | "
                             "stream: 4,000 records read by 2 of 3 micro-batches (the others found nothing new)")
    shares = [float(x) for x in re.findall(r"flex:([0-9.]+)", picture.html)]
    assert len(shares) == 3 and abs(sum(shares) - 1) < 1e-3  # the backlog, then batches 1 and 2
    assert shares[0] > shares[2] > shares[1] > 0  # widths follow the records: 8,000, then 1,000 and 3,000
    assert "micro-batch 1: 1,000 records" in picture.html and "micro-batch 0" not in picture.html


def test_the_switch_picture_of_a_job_that_has_not_switched():
    picture = switch_picture(Recorded([E.backlog_recorded({"rows": 3000})]))
    assert repr(picture) == "backlog: 3,000 rows, not read yet | no switch yet | stream: no micro-batch yet"


def test_the_switch_picture_of_a_table_says_each_number_once():
    """A table's rows are its records: "3,000 rows (3,000 records)" said the same twice (issue 51), and
    the stream's "40 records" beside the backlog's "3,000 rows" read as two kinds of thing: rows both."""
    w = 1704069000000
    job = Recorded([E.backlog_recorded({"rows": 3000}), E.switch(w, records=3000, state_writes=12),
                    E.micro_batch(0, 0, 0, w), E.micro_batch(1, 40, 12, w), E.micro_batch(2, 0, 0, w)])
    backlog, switch, stream = repr(switch_picture(job)).split(" | ")
    assert backlog == "backlog: 3,000 rows read by one batch job with 12 state writes"
    assert stream == "stream: 40 rows read by 1 of 3 micro-batches (the others found nothing new)"
    assert "micro-batch 1: 40 rows" in switch_picture(job).html
    job = Recorded([E.backlog_recorded({"rows": 5}), E.switch(w, records=5, state_writes=2), E.micro_batch(0, 3, 1, w)])
    assert repr(switch_picture(job)).split(" | ")[2] == "stream: 3 rows read by 1 micro-batch"
    job = Recorded([E.backlog_recorded({"rows": 5}), E.switch(w, records=5, state_writes=2), E.micro_batch(0, 0, 0, w)])
    assert repr(switch_picture(job)).split(" | ")[2] == "stream: nothing new yet (1 micro-batch, each empty)"
