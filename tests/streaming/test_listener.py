"""The session's one query listener: every job hears its own query, a failing handler harms no one,
and a job that stops (even from inside Spark's listener thread) makes no Spark call that could hang."""

from __future__ import annotations

import threading

import pytest

from fw_magics.streaming import listener


def test_a_raising_handler_is_logged_and_the_others_still_hear_the_event(caplog):
    bus = listener._Bus()
    heard = []
    bad = listener.Subscription(lambda e: 1 / 0, lambda e: None)
    good = listener.Subscription(heard.append, lambda e: None)
    bus.add(bad)
    bus.add(good)
    bus.post("on_progress", "p1")
    assert heard == ["p1"]
    assert "on_progress handler failed" in caplog.text


def test_a_closed_subscription_hears_nothing_more_and_close_twice_is_harmless():
    bus = listener._Bus()
    heard = []
    sub = listener.Subscription(heard.append, lambda e: None)
    bus.add(sub)
    bus.post("on_progress", 1)
    sub.close()
    sub.close()
    bus.post("on_progress", 2)
    assert heard == [1]


def test_a_handler_may_close_its_own_subscription_while_the_event_is_delivered():
    bus = listener._Bus()
    heard = []

    def on_terminated(event):
        heard.append(event)
        sub.close()  # a job ending from Spark's listener thread

    sub = listener.Subscription(lambda e: None, on_terminated)
    bus.add(sub)
    worker = threading.Thread(target=bus.post, args=("on_terminated", "t"))
    worker.start()
    worker.join(5)
    assert not worker.is_alive() and heard == ["t"]
    bus.post("on_terminated", "again")
    assert heard == ["t"]


@pytest.mark.core
def test_two_jobs_share_one_listener_and_each_hears_its_own_query(spark, stop_queries, tmp_path):
    source = tmp_path / "in"
    source.mkdir()
    (source / "a.json").write_text('{"k": 1}\n{"k": 2}\n')
    done = {name: threading.Event() for name in ("q-one", "q-two")}
    rows: dict[str, int] = {}

    def subscriber(name):
        def on_progress(event):
            if event.progress.name == name:
                ids.setdefault(name, set()).add(str(event.progress.id))
                rows[name] = rows.get(name, 0) + event.progress.numInputRows

        def on_terminated(event):
            if str(event.id) in ids.get(name, ()):
                subs[name].close()  # from Spark's listener thread, as StreamingJob does when a query ends
                done[name].set()

        return listener.subscribe(spark, on_progress, on_terminated)

    ids: dict[str, set] = {}
    subs = {name: subscriber(name) for name in done}
    assert listener._buses[spark] is subs["q-one"]._bus is subs["q-two"]._bus  # one listener for both
    for name in done:
        query = (spark.readStream.schema("k long").json(str(source)).writeStream.format("noop")
                 .queryName(name).option("checkpointLocation", str(tmp_path / name))
                 .trigger(availableNow=True).start())
        query.awaitTermination(120)
    for name in done:
        assert done[name].wait(60), f"{name}: no termination event"
    assert rows == {"q-one": 2, "q-two": 2}
