"""The hook registry: handles remove exactly their hook, and a hook that raises never fails the job.

Pure Python (the registry is driven by hand), then once through a real execute().
"""

import logging

import pytest

import fw_magics as fw
from fw_magics import hooks
from fw_magics.errors import FullWindowError


@pytest.fixture
def kind():
    """A kind of its own, so the test sees only its hooks (the graph views' stay untouched)."""
    name = "test_observed"
    hooks.define(name, "fn(value)")
    yield name
    assert not hooks.registered(name), "a test left a hook registered"


def test_hooks_run_in_order_and_each_handle_removes_only_its_own(kind):
    calls = []
    first = hooks.register(kind, lambda v: calls.append(("first", v)))
    second = hooks.register(kind, lambda v: calls.append(("second", v)))
    hooks.trigger(kind, 1)
    first.unregister()
    first.unregister()  # again: nothing happens
    hooks.trigger(kind, 2)
    assert calls == [("first", 1), ("second", 1), ("second", 2)]
    assert not first.registered and second.registered and hooks.registered(kind)
    hooks.unregister(second)
    hooks.trigger(kind, 3)
    assert calls[-1] == ("second", 2) and not hooks.registered(kind)


def test_a_handle_is_a_context_manager(kind):
    seen = []
    with hooks.register(kind, seen.append) as hook:
        hooks.trigger(kind, "inside")
        assert hook.registered
    hooks.trigger(kind, "after")
    assert seen == ["inside"]


def test_a_hook_that_raises_is_logged_once_with_its_traceback_and_the_others_still_run(kind, caplog):
    def broken(value):
        raise ValueError(f"boom {value}")

    seen = []
    with hooks.register(kind, broken), hooks.register(kind, seen.append):
        with caplog.at_level(logging.WARNING, logger="fw_magics.hooks"):
            hooks.trigger(kind, 7)  # does not raise
    assert seen == [7]
    [record] = caplog.records
    assert record.levelno == logging.WARNING and "test_observed hook" in record.getMessage()
    assert "broken" in record.getMessage() and record.exc_info[0] is ValueError
    # the record as a plain handler writes it: pytest's own capture handler can be left with PySpark's JSON
    # formatter by an earlier test (PySparkLogger.addHandler sets it on any handler added to a logger of its class)
    text = logging.Formatter().format(record)
    assert "boom 7" in text and "Traceback" in text


def test_a_keyboard_interrupt_still_stops_the_run(kind):
    def interrupt(value):
        raise KeyboardInterrupt

    with hooks.register(kind, interrupt), pytest.raises(KeyboardInterrupt):
        hooks.trigger(kind, 1)


def test_the_runtime_kinds_and_misuse():
    assert {"job_started", "event_written", "vertex_started", "vertex_progress"} <= set(hooks.KINDS)
    with pytest.raises(FullWindowError, match="unknown hook kind 'event_writen'; did you mean 'event_written'"):
        hooks.register("event_writen", print)
    with pytest.raises(FullWindowError, match="must be callable"):
        hooks.register("event_written", 42)
    with pytest.raises(FullWindowError, match="hook kind 'phase changed'"):
        hooks.define("phase changed", "fn(phase)")


@pytest.mark.spark
def test_a_raising_event_hook_does_not_fail_the_job(spark, tmp_path, caplog):
    stream = fw.from_records([(i, i % 3) for i in range(12)], "id long, k long", partitions=2, name="numbers")
    stream = stream.full_window_partition().sort_partition("id", "desc")

    def broken(store, event):
        raise RuntimeError(f"cannot watch {event['type']}")

    with hooks.register("event_written", broken), caplog.at_level(logging.WARNING, logger="fw_magics.hooks"):
        result = stream.execute(job_dir=str(tmp_path), job_name="numbers")
    assert [tuple(r) for r in result.collect()] == [(i, i % 3) for i in (5, 4, 3, 2, 1, 0, 11, 10, 9, 8, 7, 6)]
    types = [e["type"] for e in result.events()]
    assert types[0] == "job_submitted" and types[-1] == "job_finished"  # every event written all the same
    assert len(caplog.records) == len(types) and "cannot watch job_finished" in caplog.text
