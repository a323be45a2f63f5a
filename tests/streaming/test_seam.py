"""The seam between backlog and stream: files that land during the switch, a key on both sides,
records behind the watermark, state writes during the backlog (Spark runs)."""

from __future__ import annotations

import pytest

import fw_magics as fw
from fw_magics import hooks
from tests.streaming import functions
from tests.streaming.files import (
    BASE,
    TRIGGER,
    expected_latest,
    fired_timers,
    latest_rows,
    model,
    model_timers,
    operator,
)

pytestmark = [pytest.mark.spark]

S = 1000  # ms
# The spike's case (Q5): delay 5 s, so W = 30 s - 5 s = 25 s after the backlog.
BACKLOG = [[(1, 1, 10), (1, 2, 12), (2, 5, 11)], [(1, 3, 20), (2, 1, 3), (3, 7, 30)]]
# Lands during the switch. Key 1 at 24 s and key 2 at 25 s are behind W (Spark's rule is ts <= W:
# 25 s is late); key 2 at 26 s is not; key 5 at 25 s + 500 us is not late either (microseconds count).
AT_SWITCH = [(1, 10, 24), (2, 10, 25), (2, 100, 26), (4, 1, 33), (5, 1, 25, 500)]
LATER = [(3, 1, 50), (1, 4, 52)]
W = int((BASE.timestamp() + 25) * S)


def start(area, mode, name, kind="process"):
    for f in BACKLOG:
        area.write(f, name)
    stream = fw.from_files(area.source(name), "parquet", functions.SCHEMA, event_time="ts",
                           watermark_delay="5 seconds")
    return operator(kind, stream).start(job_dir=area.jobs, job_name=name, mode=mode, trigger=TRIGGER)


@pytest.mark.core
def test_files_landing_during_the_switch_and_late_records_match_the_plain_stream(area):
    seen = {"phases": [], "progress": [], "batches": [], "graphs": []}

    def land(job, phase, detail):  # the switch has begun; the query has not started yet
        seen["phases"].append((phase, detail.get("watermark")))
        if phase == "switching" and job.job_name == "mixed":
            seen["graphs"].append(job.job_graph())
            area.write(AT_SWITCH, "mixed")

    with hooks.register("stream_phase", land), \
            hooks.register("backlog_progress", lambda job, done, total: seen["progress"].append((done, total))), \
            hooks.register("micro_batch", lambda job, info: seen["batches"].append(info["batch"])):
        job = start(area, "mixed", "mixed")
        try:
            job.process_all_available()
            area.write(LATER, "mixed")
            job.process_all_available()
            mixed, timers_mixed, events = latest_rows(job), fired_timers(job), job.events()
            batches = job.changelog()
            graph = job.job_graph()
        finally:
            job.stop()
    # the hooks the widgets follow: phases (the switch with W), the backlog's tasks, each micro-batch once
    assert seen["phases"] == [("backlog", None), ("switching", W), ("stream", None), ("stopped", None)]
    assert seen["progress"][0] == (0, 2) and seen["progress"][-1] == (2, 2)
    recorded = [e["batch"] for e in job.events() if e["type"] == "micro_batch"]  # stop() may record one more
    assert seen["batches"] == recorded == sorted(set(recorded))
    # the job graph: the source's backlog status and the operator's phase as notes
    source, operator_name = graph.operators[0].name, graph.operators[1].name
    assert seen["graphs"][0].annotations(source)["backlog"] == "false"
    assert seen["graphs"][0].annotations(operator_name)["phase"] == "switching"
    assert graph.annotations(operator_name)["phase"] == "stream" and graph.mode == "streaming"
    plain = start(area, "stream", "plain")
    try:
        plain.process_all_available()
        area.write(AT_SWITCH, "plain")
        plain.process_all_available()
        area.write(LATER, "plain")
        plain.process_all_available()
        stream, timers_stream = latest_rows(plain), fired_timers(plain)
    finally:
        plain.stop()

    expected = model("process", 5 * S, BACKLOG, [AT_SWITCH, LATER])
    assert mixed == stream == expected_latest(expected, "process")
    assert timers_mixed == timers_stream == model_timers(expected)
    # records counted per key: key 1 has 3 backlog records + 1 later one (the 24 s one was late); key 2
    # has 2 + the 26 s one (25 s was late); key 5's record 500 us after W was kept
    counted = batches[batches["what"] == "element"].groupby("k")["n"].max()
    assert (counted[1], counted[2], counted[5]) == (4, 3, 1)
    # the switch: W, then the phases in FLIP-327's order; the file that landed is in the first micro-batch
    switch = next(e for e in events if e["type"] == "switch")
    assert switch["watermark"] == W
    phases = [e["phase"] for e in events if e["type"] == "phase_changed"]
    assert phases == ["backlog", "switching", "stream"]
    first = next(e for e in events if e["type"] == "micro_batch")
    assert first["batch"] == 0 and first["input_rows"] == len(AT_SWITCH) and first["watermark"] == W
    # timers up to W fired inside the backlog part of the changelog, none after it in the first batch
    backlog_timers = batches[(batches["batch"] == -1) & (batches["what"] == "timer")]
    assert sorted(backlog_timers["at"]) == sorted(t for (_, t) in model_timers(model("process", 5 * S, BACKLOG, [])))
    assert all(t <= W for t in backlog_timers["at"])


@pytest.mark.extended  # make test-extended (CI): test_modes checks the writes against the keys
def test_state_is_written_once_per_key_during_the_backlog(area):
    backlog = [[(k, v, v) for k in range(3) for v in range(f * 5, f * 5 + 5)] for f in range(3)]
    name = "writes"
    for f in backlog:
        area.write(f, name)
    stream = fw.from_files(area.source(name), "parquet", functions.SCHEMA, event_time="ts")
    job = operator("reduce", stream).start(job_dir=area.jobs, job_name=name, mode="mixed", trigger=TRIGGER)
    try:
        job.process_all_available()
        assert job.backlog_state_writes == 3  # 45 records, 3 keys: one write per key
        switch = next(e for e in job.events() if e["type"] == "switch")
        assert switch["state_writes"] == 3 and switch["records"] == 45 and switch["keys"] == 3
    finally:
        job.stop()
    # the rate-limited plain stream writes every key's state in every micro-batch
    plain = operator("reduce", fw.from_files(area.source(name), "parquet", functions.SCHEMA, event_time="ts")).start(
        job_dir=area.jobs, job_name="plain-writes", mode="stream", trigger=TRIGGER, max_files_per_trigger=1)
    try:
        plain.process_all_available()
        writes = sum(e["state_rows_updated"] for e in plain.events() if e["type"] == "micro_batch")
        assert plain.backlog_state_writes == 0 and writes == 9  # 3 files x 3 keys
        assert latest_rows(plain) == latest_rows(job)
    finally:
        plain.stop()
