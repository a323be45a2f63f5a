"""``job.metrics()``'s pure halves, without Spark: the fold of the log into rows (``recovery.metrics``) and
the driver's sum of what each state partition gained and lost (``keyed.state_counts.StateCounts``), each
against a small model on random inputs and on hand-picked cases."""

from __future__ import annotations

import json

import pandas as pd
from hypothesis import given, settings
from hypothesis import strategies as st

from fw_magics.recovery import events as E
from fw_magics.recovery.filesystem import Storage
from fw_magics.recovery.metrics import BACKLOG, COLUMNS, metrics_frame, rows
from fw_magics.recovery.paths import STATE_COUNTS
from fw_magics.recovery.replay import replay
from fw_magics.runtime.streaming.keyed.state_counts import StateCounts

OPTIONAL = ("started", "input_rows_per_second", "processed_rows_per_second", "state_rows", "files_behind",
            "rows_behind", "duration_ms", "late", "undated", "watermark")

batch_events = st.lists(st.fixed_dictionaries(
    {"batch": st.integers(0, 50), "input_rows": st.integers(0, 10**6)},
    optional={"started": st.integers(0, 2**41), "input_rows_per_second": st.floats(0, 1e6),
              "processed_rows_per_second": st.floats(0, 1e6), "state_rows": st.integers(0, 10**6),
              "files_behind": st.integers(0, 100), "rows_behind": st.integers(0, 10**6),
              "duration_ms": st.integers(0, 10**5), "late": st.integers(0, 100), "undated": st.integers(0, 100),
              "watermark": st.integers(0, 2**41),
              "state_rows_per_partition": st.lists(st.integers(0, 100), min_size=1, max_size=4)}),
    max_size=8)


@settings(max_examples=60, deadline=None)
@given(batch_events)
def test_each_micro_batch_is_one_row_its_last_event_s_figures_in_batch_order(batches):
    log = [E.stream_started("stream", 1)] + [
        E.micro_batch(b.pop("batch"), b.pop("input_rows"), 0, b.pop("watermark", None), **b) for b in map(dict, batches)]
    last = {e["batch"]: e for e in log[1:]}  # the model: a batch recorded again (a restart) keeps its last event
    frame = metrics_frame(replay(log))
    assert tuple(frame.columns) == COLUMNS
    assert list(frame["batch"]) == sorted(last)
    for row in frame.itertuples(index=False):
        event = last[row.batch]
        assert row.input_rows == event["input_rows"]
        for name in ("state_rows", "files_behind", "rows_behind", "duration_ms", "late", "undated"):
            value = getattr(row, name)
            assert (pd.isna(value) if event.get(name) is None else value == event[name]), name
        for name in ("input_rows_per_second", "processed_rows_per_second"):
            value = getattr(row, name)
            assert (pd.isna(value) if event.get(name) is None else value == event[name]), name
        for name in ("started", "watermark"):
            value = getattr(row, name)
            expected = event.get(name)
            assert pd.isna(value) if expected is None else value == pd.Timestamp(expected, unit="ms", tz="UTC")
        if event.get("started") is None or event.get("watermark") is None:
            assert pd.isna(row.watermark_gap_ms)
        else:
            assert row.watermark_gap_ms == event["started"] - event["watermark"]
        assert row.state_rows_per_partition == event.get("state_rows_per_partition")


def test_the_backlog_is_one_row_from_its_start_to_the_switch():
    started = E.phase_changed("backlog") | {"time": 1000.0}
    switch = E.switch(13_000, state_writes=11, records=13, keys=12, undated=2, state_rows_per_partition=[4, 7])
    switch["time"] = 1002.5
    (row,) = rows(replay([E.stream_started("mixed", 1), started, switch]))
    assert row["batch"] == BACKLOG and row["started"] == 1_000_000 and row["duration_ms"] == 2500
    assert row["input_rows"] == 13 and row["input_rows_per_second"] == 13 / 2.5 and row["late"] == 0
    assert row["undated"] == 2 and row["state_rows"] == 11 and row["state_rows_per_partition"] == [4, 7]
    assert row["watermark"] == 13_000 and row["watermark_gap_ms"] == 1_002_500 - 13_000
    restored = E.switch(None, restored_from="/somewhere/savepoint-000001")
    assert rows(replay([E.stream_started("mixed", 1), restored])) == []  # no backlog ran: no row


def test_an_event_with_a_bad_new_field_is_skipped_not_read_as_a_figure():
    bad = E.micro_batch(0, 5, 0, None, state_rows_per_partition=[-1])
    assert metrics_frame(replay([bad], warn=False)).empty


# -- StateCounts: the driver's sum of each partition's gains and losses ---------------------------------


def _write(storage: Storage, batch: int, partition: int, gained: int, lost: int) -> None:
    doc = {"partition": partition, "gained": gained, "lost": lost}
    storage.write_bytes(storage.path(STATE_COUNTS, f"batch={batch}", f"{partition}.json"), json.dumps(doc).encode())


changes = st.lists(st.lists(st.tuples(st.integers(0, 2), st.integers(0, 9), st.integers(0, 9)), max_size=4),
                   min_size=1, max_size=6)


@settings(max_examples=40, deadline=None)
@given(start=st.lists(st.integers(0, 20), min_size=3, max_size=3), batches=changes, recorded=st.data())
def test_state_counts_add_every_batch_since_the_last_recorded(tmp_path_factory, start, batches, recorded):
    """Each batch's files (a partition at most once: a task run again rewrites its own) are added to the
    counts; a micro-batch recorded late (the follower skipped one) takes every batch since the last."""
    storage = Storage(str(tmp_path_factory.mktemp("counts")))
    counts = StateCounts(storage, 3, list(start), None)
    model = list(start)
    which = sorted(recorded.draw(st.sets(st.integers(0, len(batches) - 1), min_size=1)))
    for b, written in enumerate(batches):
        for partition, gained, lost in {p: (p, g, lo) for p, g, lo in written}.values():
            _write(storage, b, partition, gained, lost)
            model[partition] += gained - lost
        if b in which:
            got = counts.after(b)
            assert got["state_rows_per_partition"] == [max(0, n) for n in model]
            model = [max(0, n) for n in model]
            assert got["state_rows"] == sum(model)
    left = [int(name.split("=")[1]) for name in storage.listdir_inside(STATE_COUNTS)]
    if len(which) > 1:  # a batch's files go once the next recorded batch is counted
        assert all(b > which[-2] for b in left), (which, left)


def test_unknown_counts_stay_unknown_and_a_stray_file_is_not_read(tmp_path):
    storage = Storage(str(tmp_path))
    _write(storage, 0, 1, 5, 0)
    storage.write_bytes(storage.path(STATE_COUNTS, "batch=0", "7.json"), b'{"partition": 7, "gained": 9, "lost": 0}')
    storage.write_bytes(storage.path(STATE_COUNTS, "batch=0", "0.json"), b'{"partition": 1, "gained": 9, "lost": 0}')
    assert StateCounts(storage, 2, None, None).after(0) == {"state_rows": None, "state_rows_per_partition": None}
    _write(storage, 1, 1, 5, 0)
    assert StateCounts(storage, 2, [1, 1], 0).after(1) == {"state_rows": 7, "state_rows_per_partition": [1, 6]}
