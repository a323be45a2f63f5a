"""What the widgets show, computed without Spark or a browser (fw_magics.widgets.model).

``what_if`` is checked against the failover strategies and against the naive reference
model of tests/graph; ``vertex_states`` against a small reference written another way: each
fact is read off the *last* event that decides it.
"""

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from fw_magics.errors import FullWindowError
from fw_magics.failover import RestartPipelinedRegionStrategy
from fw_magics.recovery import events
from fw_magics.widgets import model
from tests.graph import reference_graph as ref
from tests.widgets.graphs import finished, four_operators, full_run

# -- what if ---------------------------------------------------------------------------------


@settings(max_examples=150, deadline=None)
@given(ref.job_graphs(max_operators=5, max_parallelism=4), st.data())
def test_what_if_agrees_with_both_strategies_and_the_reference(g, data):
    op = data.draw(st.sampled_from([o.name for o in g.operators]))
    subtask = data.draw(st.integers(0, g.operator(op).parallelism - 1))
    w = model.what_if(g, op, subtask)
    assert w.region == RestartPipelinedRegionStrategy(g).tasks_to_restart((op, subtask))
    assert w.region == ref.restart_set(g, (op, subtask), ())
    assert (op, subtask) in w.region
    assert w.all == frozenset(g.execution_vertices()) and w.total == len(g.execution_vertices())
    for mode in ("region", "all"):
        counts = w.per_operator(mode)
        assert sum(counts.values()) == len(w.restarted(mode))
        assert all(0 < n <= g.operator(name).parallelism for name, n in counts.items())
    assert f"restarts {len(w.region):,} of {w.total:,}" in w.sentence()


@settings(max_examples=40, deadline=None)
@given(ref.job_graphs(max_operators=4), st.data())
def test_a_subtask_that_does_not_exist_is_a_misuse_error_naming_the_operator(g, data):
    op = data.draw(st.sampled_from([o.name for o in g.operators]))
    p = g.operator(op).parallelism
    bad = data.draw(st.sampled_from([-1, p, p + 7]))
    with pytest.raises(FullWindowError) as caught:  # a ValueError, as before the error family
        model.what_if(g, op, bad)
    assert repr(op) in str(caught.value) and f"0..{p - 1}" in str(caught.value)


def test_what_if_on_the_four_operator_job():
    g = four_operators()
    w = model.what_if(g, "source", 1)
    # source[1]+sort[1] (one chain subtask), then every consumer region downstream
    assert w.per_operator("region") == {"source": 1, "sort": 1, "reduce": 3, "map": 3}
    assert (len(w.region), w.total, len(w.all)) == (8, 12, 12)
    assert w.sentence().startswith("If source[1] fails: region failover restarts 8 of 12 subtasks (4 operators)")
    w = model.what_if(g, "reduce", 2)
    assert w.region == {("reduce", 2), ("map", 0), ("map", 1), ("map", 2)}
    assert "restarts 4 of 12 subtasks (2 operators)" in w.sentence()
    assert model.what_if(g, "map", 0).region == {("map", 0)}


def test_operator_info_lists_the_attributes():
    info = model.operator_info(four_operators(), "sort")
    assert info["output_only_after_end_of_stream"] is True and info["internal_sorter_supported"] is True
    assert info["chain"] == ["source", "sort"] and info["parallelism"] == 3 and info["kind"] == "sort_partition"
    assert info["inputs"] == [("source", "chained", "pointwise")]
    assert info["outputs"] == [("reduce", "blocking", "all_to_all")]
    assert info["regions"] == "regions 1-3"
    source = model.operator_info(four_operators(), "source")
    assert source["inputs"] == [] and source["output_only_after_end_of_stream"] is False


# -- vertex states -----------------------------------------------------------------------------


def reference_states(g, log, recovered=(), running=None) -> dict:
    """{vertex: (state, finished subtasks, recovered subtasks, records)}, each fact from its last event."""
    chains = g.chains()
    names = [f"v{k}" for k in range(len(chains))]
    about = lambda e: e.get("vertex") or e.get("region")  # noqa: E731
    ends = [e["type"] for e in log if e["type"] in ("job_submitted", "job_finished", "job_failed")]
    ended = bool(ends) and ends[-1] != "job_submitted"
    out = {}
    for name, chain in zip(names, chains):
        p = g.operator(chain[-1]).parallelism
        last = {}
        for e in log:
            if e["type"] in ("subtask_finished", "subtask_reset") and about(e) == name:
                last[e["subtask"]] = e
        done = {s for s, e in last.items() if e["type"] == "subtask_finished"}
        records = sum(int(last[s].get("records_out") or 0) for s in done)
        kept = {s for v, s in recovered if v == name}
        done -= kept
        flags = [e["type"] for e in log if about(e) == name and e["type"] != "vertex_initialized"]
        failed = bool(flags) and flags[-1] == "region_failed"
        if failed:
            state = "failed"
        elif len(done | kept) == p:
            state = "finished" if done else "recovered"
        else:
            state = "pending"
        out[name] = [state, done, kept, records]
    if running is not None:
        if running in out and out[running][0] == "pending":
            out[running][0] = "running"
    elif log and not ended:
        first = next((name for name in names if out[name][0] not in ("finished", "recovered")), None)
        if first is not None and out[first][0] == "pending":
            out[first][0] = "running"
    return {name: tuple(v) for name, v in out.items()}


def observed(states) -> dict:
    return {name: (s.state, s.finished, s.recovered, s.records) for name, s in states.items()}


@st.composite
def runs(draw):
    """A graph, a random event sequence about its job vertices, recovered subtasks, a running vertex."""
    g = draw(ref.job_graphs(max_operators=4, max_parallelism=3))
    vertices = [(f"v{k}", g.operator(chain[-1]).parallelism) for k, chain in enumerate(g.chains())]
    vertex = st.sampled_from(vertices)

    def subtask_event(make):
        return vertex.flatmap(lambda v: st.integers(0, v[1] - 1).map(lambda s: make(v[0], s)))

    one = st.one_of(
        subtask_event(lambda v, s: finished(v, s, records=s * 10 + 1)),
        subtask_event(lambda v, s: events.subtask_reset(v, s, "restarted by failover")),
        vertex.map(lambda v: events.region_failed(v[0], [f"{v[0]}[0]"], "boom", 1)),
        vertex.map(lambda v: events.region_restarted(v[0], [f"{v[0]}[0]"], 2)),
        st.sampled_from(["job_finished", "job_failed"]).map(
            lambda t: events.job_finished() if t == "job_finished" else events.job_failed("boom")),
    )
    log = draw(st.lists(one, max_size=25))
    if draw(st.booleans()):
        log.insert(0, events.job_submitted("job", g.to_json(), g.fingerprint()))
    recovered = draw(st.sets(vertex.flatmap(lambda v: st.tuples(st.just(v[0]), st.integers(0, v[1] - 1))),
                             max_size=4))
    running = draw(st.none() | vertex.map(lambda v: v[0]))
    return g, log, recovered, running


@settings(max_examples=300, deadline=None)
@given(runs())
def test_vertex_states_agree_with_the_reference(run):
    g, log, recovered, running = run
    got = model.vertex_states(g, log, recovered, running)
    assert observed(got) == reference_states(g, log, recovered, running)
    assert all(s.state in model.STATES for s in got.values())
    ops = model.operator_states(g, got)
    assert set(ops) == {o.name for o in g.operators}
    for k, chain in enumerate(g.chains()):
        assert all(ops[op] == {"state": got[f"v{k}"].state, "text": got[f"v{k}"].text()} for op in chain)


def test_a_prefix_of_a_run_shows_the_first_unfinished_vertex_running():
    g = four_operators()
    log = full_run(g)
    v1_first = next(k for k, e in enumerate(log) if e.get("vertex") == "v1" and e["type"] == "subtask_finished")
    states = model.vertex_states(g, log[:v1_first + 1])
    assert {k: s.state for k, s in states.items()} == {"v0": "finished", "v1": "running", "v2": "pending"}
    assert states["v1"].text() == "running 1/3 · 10 records"
    # before any subtask finished, the first vertex runs
    head = model.vertex_states(g, log[:4])
    assert [head[v].state for v in ("v0", "v1", "v2")] == ["running", "pending", "pending"]
    # no events at all: nothing runs
    assert {s.state for s in model.vertex_states(g, []).values()} == {"pending"}


def test_job_finished_shows_every_vertex_finished():
    g = four_operators()
    states = model.vertex_states(g, full_run(g))
    assert {s.state for s in states.values()} == {"finished"}
    assert states["v2"].text() == "finished 3/3 · 30 records"
    assert model.operator_states(g, states)["sort"]["state"] == "finished"


def test_recovered_subtasks_show_recovered():
    g = four_operators()
    log = full_run(g)
    kept = {("v0", 0), ("v0", 1), ("v0", 2), ("v1", 0)}
    states = model.vertex_states(g, log, recovered=kept)
    assert states["v0"].state == "recovered" and states["v0"].recovered == {0, 1, 2} and not states["v0"].finished
    assert "3 recovered" in states["v0"].text()
    assert states["v1"].state == "finished" and states["v1"].recovered == {0} and states["v1"].finished == {1, 2}
    assert states["v2"].state == "finished"
    # a live resumed run: kept subtasks have no events in this run, the rest still pending
    live = model.vertex_states(g, [], recovered=kept, running="v1")
    assert [live[v].state for v in ("v0", "v1", "v2")] == ["recovered", "running", "pending"]


def test_a_vertex_that_failed_then_finished_on_resume_is_finished():
    """The log of a failed run followed by its resume: the failure is history, not the state."""
    g = four_operators()
    log = full_run(g)[:-1]  # no job_finished yet
    tail = [e for e in log if e.get("vertex") == "v2" and e["type"] == "subtask_finished"]
    log = [e for e in log if e not in tail]
    log += [events.region_failed("v2", ["v2[1]"], "InjectedFailure: boom", 2), events.job_failed("boom")]
    assert model.vertex_states(g, log)["v2"].state == "failed"
    log += [finished("v2", i, attempt=3) for i in range(3)] + [events.job_finished()]
    states = model.vertex_states(g, log, recovered={("v0", i) for i in range(3)} | {("v1", i) for i in range(3)})
    assert [states[v].state for v in ("v0", "v1", "v2")] == ["recovered", "recovered", "finished"]


def test_records_of_a_rerun_subtask_count_once():
    g = four_operators()
    log = full_run(g)[:-1] + [events.subtask_reset("v2", 0, "restarted by failover"), finished("v2", 0, records=7)]
    assert model.vertex_states(g, log)["v2"].records == 10 + 10 + 7


@pytest.mark.parametrize("n, records, bytes_, rows", [
    (0, "0 records", "0 bytes", "0 input rows, 0 state rows"),
    (1, "1 record", "1 byte", "1 input row, 1 state row"),
    (2, "2 records", "2 bytes", "2 input rows, 2 state rows"),
    (12345, "12,345 records", "12,345 bytes", "12,345 input rows, 12,345 state rows"),
])
def test_the_timeline_counts_in_the_singular_for_one(n, records, bytes_, rows):
    assert model.describe_event(events.subtask_finished("v0", 0, 1, None, n, n, 0.1, [])).endswith(
        f"subtask finished: v0[0] attempt 1, {records}, {bytes_}")
    assert model.describe_event(events.micro_batch(3, n, n, None)).endswith(f"micro batch: batch 3, {rows}")
    assert model.describe_event(events.backlog_recorded({"files": n})).endswith(
        f"backlog recorded: {n:,} backlog file{'s' * (n != 1)}")
    assert model.describe_event(events.switch(0, state_writes=n)).endswith(
        f"{n:,} state write{'s' * (n != 1)} in backlog")


def test_describe_event_names_what_each_event_is_about():
    g = four_operators()
    lines = [model.describe_event(e) for e in full_run(g)]
    assert "job submitted: job 'job'" in lines[0]
    assert lines[2].endswith("vertex initialized: v1, parallelism 3, reads v0")
    assert lines[4].endswith("subtask finished: v0[0] attempt 1, 10 records, 100 bytes")
    assert lines[-1].endswith("job finished")
    assert model.describe_event(events.region_failed("v1", ["v1[2]"], "boom", 1)).endswith(
        "region failed: v1 v1[2]: boom")
    assert model.describe_event(events.subtask_reset("v2", 1, "result missing")).endswith(
        "subtask reset: v2[1]: result missing")
