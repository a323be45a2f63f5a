"""The one verdict both verbs ask of a recorded job (fw_magics.recovery.verdict): keep, afresh or refuse,
with the reason and the way out in one line. No Spark: recorded logs are built from the events."""

from __future__ import annotations

import pytest

from fw_magics.errors import FullWindowError, ResumeError
from fw_magics.graph import JobGraph
from fw_magics.recovery import events, replay
from fw_magics.recovery.verdict import (
    AFRESH,
    EXECUTE,
    KEEP,
    REFUSE,
    START,
    ThisJob,
    resume_mode,
    same_graph,
    same_job,
)
from tests.widgets.graphs import finished, four_operators

CONTENT = {"source": {"rows": "r1"}, "sort": {"fields": "s1"}, "reduce": {"function": "f1"}, "map": {"function": "m1"}}


def stream_graph(parallelism: int = 2) -> JobGraph:
    g = JobGraph(mode="streaming")
    g.add_operator("files(src)", parallelism, kind="source")
    g.add_operator("reduce(add)", parallelism, kind="keyed_reduce")
    g.add_operator("changelog", parallelism, kind="sink")
    g.connect("files(src)", "reduce(add)", "all_to_all")
    g.connect("reduce(add)", "changelog")
    return g


def stream_log(graph=None, content=CONTENT, mode="mixed", restored_from=None):
    graph = graph or stream_graph()
    log = [events.job_submitted("sums", graph.to_json(), graph.fingerprint(), content=content),
           events.stream_started(mode, 1, {"path": "src"}, graph.operators[0].parallelism)]
    if restored_from is not None:
        log.append(events.switch(None, restored_from=restored_from))
    return replay(log)


def streaming(**changes) -> ThisJob:
    fields = {"verb": START, "name": "sums", "root": "/jobs/sums", "graph": stream_graph(), "content": CONTENT,
              "mode": "mixed", **changes}
    return ThisJob(**fields)


def batch_log(graph, content=CONTENT, done=None):
    log = [events.job_submitted("sales", graph.to_json(), graph.fingerprint(), content=content)]
    vertices = graph.job_vertices()
    log += [events.vertex_initialized(v.name, v.parallelism, v.inputs) for v in vertices]
    log += [finished(v.name, i) for v in vertices for i in range(v.parallelism) if done is None or v.name in done]
    return replay(log)


def batch(graph, content=CONTENT) -> ThisJob:
    return ThisJob(EXECUTE, "sales", "/jobs/sales", graph, content)


def test_the_same_job_is_kept_by_both_verbs():
    assert same_job(stream_log(), streaming()) == same_job(batch_log(four_operators()), batch(four_operators()))
    assert same_job(stream_log(), streaming()).action == KEEP and not same_job(stream_log(), streaming()).resubmit


@pytest.mark.parametrize("verb, way_out", [
    (EXECUTE, "run with resume='never' to start afresh"),
    (START, "start it under another job_name, or with reset=True to discard what it recorded and start afresh"),
])
def test_a_changed_graph_is_refused_in_the_same_words_with_each_verb_s_way_out(verb, way_out):
    recorded, now = stream_graph(2), stream_graph(2)
    now.add_operator("extra", 2)
    now.connect("changelog", "extra")
    state = stream_log(recorded)
    job = streaming(graph=now) if verb == START else batch(now)
    verdict = same_job(state, job)
    assert verdict.action == REFUSE
    assert verdict.line == (f"job {job.name!r} in {job.root} was recorded for a different graph (operator 'extra' "
                            f"added; edge changelog->extra added); {way_out}")
    with pytest.raises(ResumeError) as refused:
        verdict.check()
    assert str(refused.value) == verdict.line and "\n" not in verdict.line


@pytest.mark.parametrize("changes, words", [
    ({"mode": "batch"}, "was started in mode 'mixed', not 'batch'; start it with mode='mixed', or under another job_name"),
    ({"source_change": "its folder 'src' -> 'other'"}, "was recorded for another source: its folder 'src' -> 'other'; "
                                                        "start it under another job_name, or with reset=True"),
    ({"content": {**CONTENT, "reduce": {"function": "f2"}}}, "changed since it was recorded (the function of "
                                                             "'reduce'): its state was built by the code it had then"),
    ({"parallelism": 3}, "job 'sums' runs at parallelism 2; a restart keeps its checkpoint's state partitions"),
    ({"restoring": "/sp/savepoint-000001", "parallelism": 3}, "already ran; restore a savepoint under a new job_name"),
])
def test_a_streaming_job_refuses_what_its_state_was_not_built_by(changes, words):
    verdict = same_job(stream_log(), streaming(**changes))
    assert verdict.action == REFUSE and words in verdict.line, verdict.line


def test_a_restored_job_restarted_with_its_own_savepoint_is_kept():
    assert same_job(stream_log(restored_from="/sp/1"), streaming(restoring="/sp/1")).action == KEEP


def test_a_streaming_job_recorded_without_content_is_kept_and_recorded_anew_and_an_unknown_piece_warns():
    assert same_job(stream_log(content=None), streaming()).resubmit
    unknown = {**CONTENT, "source": {"rows": "unknown: its rows come from an RDD"}}
    verdict = same_job(stream_log(), streaming(content=unknown))
    assert verdict.action == KEEP and verdict.warnings == (
        "job 'sums' in /jobs/sums: resumed without checking the rows of 'source': its rows come from an RDD",)


def test_a_batch_job_content_change_is_run_afresh_kept_or_refused_by_what_it_leaves_stale():
    g = four_operators()
    changed = {**CONTENT, "map": {"function": "new"}}  # the last vertex's operator
    # nothing of the changed vertex finished: it runs anyway, the rest is kept
    partial = batch_log(g, done={"v0", "v1"})
    assert same_job(partial, batch(g, changed)) == same_job(partial, batch(g, changed), "require")
    assert same_job(partial, batch(g, changed)).action == KEEP and same_job(partial, batch(g, changed)).resubmit
    # a finished job: afresh under "auto", refused otherwise
    complete = batch_log(g)
    verdict = same_job(complete, batch(g, changed))
    assert (verdict.action, verdict.reason) == (AFRESH, "the function of 'map' changed since the recorded run")
    refused = same_job(complete, batch(g, changed), "require")
    assert refused.action == REFUSE and refused.line.endswith(
        "3 of its finished subtasks would be stale; run with resume='auto' or 'never' to run it afresh")


def test_an_unreadable_first_record_is_repaired_by_execute_and_refused_by_start():
    g = four_operators()
    state = batch_log(g)
    state.graph = None  # its job_submitted record lost
    hint = same_graph(state, batch(g))
    assert hint.action == REFUSE and "fits the 13 surviving records: run with resume='repair'" in hint.line
    repaired = same_job(state, batch(g), "repair")
    assert repaired.action == KEEP and repaired.resubmit
    assert repaired.notes[0] == "repaired: the graph was re-derived from this stream (13 records kept)"
    other = JobGraph.from_json(g.to_json().replace('"parallelism":3', '"parallelism":2'))
    refused = same_job(state, batch(other), "repair")
    assert refused.action == REFUSE and refused.line.endswith(
        "this stream's graph does not fit the surviving records (v0 was recorded with parallelism 3 reading []; "
        "this stream's has 2 reading []): run with resume='never' to start afresh")
    assert same_job(state, streaming(graph=g)).line.endswith("the job's first record is unreadable; start it under "
                                                            "another job_name, or with reset=True to discard what "
                                                            "it recorded and start afresh")


@pytest.mark.parametrize("verb, resume, reset, mode", [
    (EXECUTE, "repair", False, "repair"), (START, "auto", False, "auto"), (START, "auto", True, "never"),
    (START, "never", True, "never"), (START, "require", False, "require"),
])
def test_one_vocabulary_for_both_verbs_with_reset_as_never(verb, resume, reset, mode):
    assert resume_mode(verb, resume, reset) == mode


@pytest.mark.parametrize("verb, resume, reset, message", [
    (EXECUTE, "yes", False, "unknown resume 'yes'; accepted: auto, never, require, repair"),
    (START, "repair", False, "resume 'repair' is execute()'s alone (it re-derives an unreadable first record); "
                             "accepted: auto, never, require"),
    (START, "nevr", False, "unknown resume 'nevr'; did you mean 'never'?; accepted: auto, never, require"),
    (START, "auto", "yes", "reset 'yes'; accepted: False, or True to discard what the job recorded"),
    (START, "require", True, "reset=True is resume='never' (start afresh), and resume is 'require'; accepted: one"),
])
def test_a_bad_resume_or_reset_is_one_line(verb, resume, reset, message):
    with pytest.raises(FullWindowError) as refused:
        resume_mode(verb, resume, reset)
    assert str(refused.value).startswith(message) and "\n" not in str(refused.value)
