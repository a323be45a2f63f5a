"""The watermark rules and a streaming job's phases, as pure functions (no Spark)."""

from __future__ import annotations

import datetime as dt

import pytest
from hypothesis import given
from hypothesis import strategies as st

import fw_magics as fw
from fw_magics.operators.co_process import check_bound
from fw_magics.operators.spec import is_field_list
from fw_magics.recovery import events, replay
from fw_magics.runtime.streaming.driver.phases import PHASES, TRANSITIONS, Mode, can_change, resume_phase
from fw_magics.values.event_time import (
    MIN_WATERMARK,
    effective_watermark,
    event_time_ms,
    is_late,
    parse_delay,
    switch_watermark,
)


@pytest.mark.parametrize("text, expected", [
    ("0 seconds", 0), ("10 seconds", 10_000), ("1 second", 1000), ("500 milliseconds", 500), ("2 ms", 2),
    ("1 minute 30 seconds", 90_000), ("interval 2 hours", 7_200_000), ("1 day", 86_400_000), ("1 week", 604_800_000),
    ("  3 Minutes ", 180_000),
])
def test_parse_delay(text, expected):
    assert parse_delay(text) == expected


@pytest.mark.parametrize("bad", ["", "10", "ten seconds", "10 fortnights", "1 month", "-5 seconds", 5, None,
                                 "10 seconds and more"])
def test_parse_delay_refuses_in_one_line(bad):
    with pytest.raises(fw.FullWindowError) as info:
        parse_delay(bad)
    assert "\n" not in str(info.value) and "watermark_delay" in str(info.value)


def test_a_delay_or_an_interval_bound_beyond_spark_s_timestamps_is_one_line_at_the_call():
    """Issue 47, item 6: "1e30 seconds" ran for a minute, then failed in Java; between(10**30, 10**31) blamed a
    timer. The span of Spark's timestamps (years 1 to 9999) is accepted (Spark parses it), one ms more is not."""
    SPAN_MS = 253_402_300_799_999 + 62_135_596_800_000
    assert parse_delay(f"{SPAN_MS} milliseconds") == SPAN_MS
    assert check_bound(-SPAN_MS, "lower") == -SPAN_MS and check_bound(dt.timedelta(days=3650), "upper") == 315_360_000_000
    too_far = [(lambda: parse_delay(f"{10**30} seconds"), "watermark_delay '1000"),
               (lambda: parse_delay(f"{SPAN_MS + 1} milliseconds"), "watermark_delay"),
               (lambda: parse_delay("99999999 weeks"), "watermark_delay '99999999 weeks'"),
               (lambda: check_bound(10**30, "lower"), "lower bound 1000"),
               (lambda: check_bound(-SPAN_MS - 1, "upper"), "upper bound -315537897600000"),
               (lambda: check_bound(dt.timedelta(days=10**7), "upper"), "upper bound datetime.timedelta")]
    for call, culprit in too_far:
        with pytest.raises(fw.FullWindowError) as info:
            call()
        message = str(info.value)
        assert culprit in message and "315_537_897_599_999 ms" in message and "\n" not in message


@given(ts_us=st.integers(0, 10**15), wm=st.integers(0, 10**12))
def test_late_is_sparks_rule_in_microseconds(ts_us, wm):
    assert is_late(ts_us, wm) == (ts_us <= wm * 1000)
    assert not is_late(ts_us, None)


def test_switch_and_effective_watermark():
    assert switch_watermark(None, 5) is None and switch_watermark(10_000, 3000) == 7000
    assert effective_watermark(None, 0) == MIN_WATERMARK  # Spark's 0: no watermark yet
    assert effective_watermark(7000, 0) == 7000 and effective_watermark(7000, 9000) == 9000
    assert effective_watermark(7000, 5000) == 7000 and effective_watermark(None, 5) == 5


def test_event_time_ms_floors():
    base = dt.datetime(2024, 1, 1, tzinfo=dt.timezone.utc)
    assert event_time_ms(base + dt.timedelta(microseconds=999)) == event_time_ms(base)
    assert event_time_ms(base.replace(tzinfo=None)) == event_time_ms(base)


@pytest.mark.parametrize("ddl, fields", [("long", False), ("array<struct<a:int>>", False), ("decimal(10, 2)", False),
                                         ("a long, b string", True), ("a long", True), ("a:long", True)])
def test_is_field_list(ddl, fields):
    assert is_field_list(ddl) == fields


def test_phase_transitions_follow_flip_327():
    assert can_change("mixed", "backlog", "switching") and can_change("mixed", "switching", "stream")
    assert not can_change("mixed", "backlog", "stream")  # never past the switch
    assert not can_change("mixed", "stream", "backlog")
    assert can_change("batch", "backlog", "finished") and not can_change("batch", "backlog", "switching")
    assert set(TRANSITIONS[Mode.STREAM]) == {"stream"}
    for mode in TRANSITIONS:
        for old, news in TRANSITIONS[mode].items():
            assert old in PHASES and news <= set(PHASES)


def test_replay_and_resume_phase():
    log = [events.job_submitted("j", "{}", "abc"), events.stream_started("mixed", 1),
           events.backlog_recorded({"files": 3, "bytes": 100}), events.phase_changed("backlog")]
    state = replay(log)
    assert (state.mode, state.runs, state.backlog, resume_phase(state, "mixed")) == ("mixed", 1, {"files": 3, "bytes": 100},
                                                                                   "backlog")
    log += [events.subtask_finished("v1", 0, 1, None, 5, 10, 0.1, [{"path": "results/v1/0.arrow", "size": 1, "sha256": "x"}])]
    assert set(replay(log).finished_of("v1")) == {0}
    log += [events.switch(7000, state_writes=4), events.phase_changed("switching")]
    state = replay(log)
    assert state.switched and state.watermark == 7000 and state.state_writes == 4
    assert resume_phase(state, "mixed") == "switching"
    log += [events.micro_batch(0, 0, 4, 7000), events.phase_changed("stream"), events.phase_changed("stopped"),
            events.stream_started("mixed", 2)]
    state = replay(log)
    assert resume_phase(state, "mixed") == "stream" and state.runs == 2 and state.status == "running"
    assert resume_phase(replay(log[:2] + [events.job_finished()]), "batch") == "finished"


def test_replay_skips_unknown_events_with_a_warning():
    with pytest.warns(UserWarning, match="unknown event type"):
        state = replay([{"type": "no_such_thing", "time": 1}, events.stream_started("stream", 1)])
    assert state.mode == "stream"


def test_a_streaming_graph_shows_its_notes_in_the_drawing():
    """A running job's notes (backlog status, phase) are lines of the operator's box and its
    tooltip, count in the drawing's size, and stay out of the graph's JSON and fingerprint."""
    from fw_magics.graph import JobGraph
    from fw_magics.graph.render import to_dot

    graph = JobGraph(mode="streaming", chaining=True)
    graph.add_operator("files(src)", parallelism=2, kind="source")
    graph.add_operator("reduce(add)", parallelism=2, kind="reduce")
    graph.connect("files(src)", "reduce(add)", pattern="all_to_all")
    before = (graph.to_json(), graph.fingerprint(), to_dot(graph))
    graph.annotate("files(src)", backlog="true", backlog_files=3)
    graph.annotate("reduce(add)", phase="backlog")
    dot = to_dot(graph)
    assert "backlog: true" in dot and "backlog_files: 3" in dot and "phase: backlog" in dot
    assert (graph.to_json(), graph.fingerprint()) == before[:2] and dot != before[2]
    graph.annotate("reduce(add)", phase=None)
    assert "phase:" not in to_dot(graph) and graph.annotations("reduce(add)") == {}


def test_a_source_change_is_named_and_an_older_record_without_a_glob_is_the_same_source():
    from fw_magics.connectors.registry import source_change

    now = {"kind": "files", "path": "/data", "format": "parquet", "glob": "*.parquet", "delay_ms": 0}
    assert source_change(dict(now), now) is None
    assert source_change({k: v for k, v in now.items() if k != "glob"}, now) is None  # recorded before globs
    assert source_change(dict(now, path="/other"), now) == "its path was '/other', now '/data'"
    assert source_change(dict(now, glob="*"), now) == "its glob was '*', now '*.parquet'"
    assert source_change({k: v for k, v in now.items() if k != "delay_ms"}, now) == "its delay_ms was None, now 0"
