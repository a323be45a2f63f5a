"""A job directory is input, and input can be hostile (issue 16, items 6-9). No Spark.

Every reproduction of the issue, ported: paths that escape the job directory, records with
a valid checksum and the wrong shape, files that are folders, FIFOs or links to /dev/zero,
a crafted parallelism, an all-to-all edge of parallelism 2,000 in resume planning, and the
recovery panel over a job directory where one job is damaged.
"""

import hashlib
import html
import json
import os
import signal
import time
import warnings

import pytest

from fw_magics.errors import FullWindowError
from fw_magics.graph import JobGraph, subtask_inputs
from fw_magics.recovery import JobEventStore, decide_resume, events, jobs, replay
from fw_magics.recovery.event_store import encode
from fw_magics.recovery.filesystem import Storage
from fw_magics.recovery.integrity import file_intact
from tests.recovery.hostile import OpenWatch, append_records, finished_event, finished_job, frame
from tests.widgets.graphs import four_operators

pytestmark = pytest.mark.timeout(60)


@pytest.fixture
def alarm():
    """Fail (instead of hanging) when one read takes more than 10 s."""
    def expired(*_):
        raise TimeoutError("took more than 10 s: a read that never ends")

    previous = signal.signal(signal.SIGALRM, expired)
    signal.alarm(10)
    yield
    signal.alarm(0)
    signal.signal(signal.SIGALRM, previous)


@pytest.fixture
def outside(tmp_path):
    """A sentinel folder beside the job directory, with a result file a crafted record can match."""
    folder = tmp_path / "outside"
    folder.mkdir()
    evil = folder / "evil.arrow"
    evil.write_bytes(b"rows that must never be read")
    return folder


def read(folder):
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        found = JobEventStore(os.path.join(folder, "events")).read_events()
    return found, [str(w.message) for w in caught]


# -- item 6: paths from the log ------------------------------------------------------------------


def test_a_path_escaping_the_job_directory_is_never_kept_nor_read(tmp_path, outside, alarm):
    folder = finished_job(str(tmp_path / "jobs"))
    evil = (outside / "evil.arrow").read_bytes()
    passwd = b"root:x:0:0"
    append_records(folder, [
        events.subtask_reset("v2", 0, "lost"),
        finished_event("v2", 0, "../../outside/evil.arrow", evil),
        finished_event("v2", 1, str(outside / "evil.arrow"), evil),
        finished_event("v2", 2, "../../../../etc/passwd", passwd),
    ])
    watch = OpenWatch(str(outside / "evil.arrow"), str(outside))
    try:
        found, warned = read(folder)
        state = replay(found)
        vertices, inputs = subtask_inputs(four_operators())
        decision = decide_resume(vertices, inputs, state, lambda f: file_intact(Storage(folder), f))
        assert watch.poll() == []
    finally:
        watch.close()
    assert ("v2", 0) not in state.finished and decision.reasons[("v2", 0)] == "unfinished"
    assert {("v2", 1), ("v2", 2)} <= set(state.finished)  # the crafted records were skipped, the real ones kept
    escaping = [w for w in warned if "not its result file" in w]
    assert len(escaping) == 3 and all("events.9: record at byte" in w for w in escaping)


@pytest.mark.parametrize("plant", ["link to outside", "link to /dev/zero", "fifo", "folder", "linked folder"])
def test_a_result_file_that_is_no_regular_file_inside_is_refused_without_reading_it(tmp_path, outside, alarm, plant):
    folder = finished_job(str(tmp_path / "jobs"))
    evil = outside / "evil.arrow"
    target = os.path.join(folder, "results", "v2", "0.arrow")
    os.remove(target)
    if plant == "link to outside":
        os.symlink(evil, target)
    elif plant == "link to /dev/zero":
        os.symlink("/dev/zero", target)
    elif plant == "fifo":
        os.mkfifo(target)
    elif plant == "folder":
        os.mkdir(target)
    else:  # results/v2 itself a link to a folder holding a file with the recorded hash
        os.rename(os.path.join(folder, "results", "v2"), str(outside / "v2"))
        os.symlink(outside / "v2", os.path.join(folder, "results", "v2"))
    record = {"path": "results/v2/0.arrow", "size": evil.stat().st_size,
              "sha256": hashlib.sha256(evil.read_bytes()).hexdigest()}
    watch = OpenWatch(str(evil))
    try:
        verdict = file_intact(Storage(folder), record)
        assert watch.poll() == []
    finally:
        watch.close()
    assert verdict.startswith("result refused: results/v2") and "\n" not in verdict


def test_a_recorded_size_bounds_the_read(tmp_path, alarm):
    folder = finished_job(str(tmp_path / "jobs"))
    path = os.path.join(folder, "results", "v0", "0.arrow")
    data = open(path, "rb").read()
    with open(path, "ab") as f:
        f.truncate(1 << 30)  # a sparse gigabyte after the real bytes
    record = {"path": "results/v0/0.arrow", "size": len(data), "sha256": hashlib.sha256(data).hexdigest()}
    started = time.monotonic()
    assert file_intact(Storage(folder), record) == "result corrupt: larger than recorded"
    assert time.monotonic() - started < 1


# -- item 7: records of the wrong shape -----------------------------------------------------------


def deep(n):
    return b"[" * n + b"]" * n


BAD_RECORDS = {
    "no file at all": dict(finished_event("v1", 0, "results/v1/0.arrow", b"x"), files=[{"path": "results/v1/0.arrow"}]),
    "no size": dict(finished_event("v1", 0, "results/v1/0.arrow", b"x"),
                    files=[{"path": "results/v1/0.arrow", "sha256": "0" * 64}]),
    "attempt x": dict(finished_event("v1", 0, "results/v1/0.arrow", b"x"), attempt="x"),
    "records_out text": dict(finished_event("v1", 0, "results/v1/0.arrow", b"x"), records_out="many"),
    "subtask negative": dict(events.subtask_reset("v1", 0, "r"), subtask=-1),
    "parallelism text": dict(events.vertex_initialized("v1", 3, ["v0"]), parallelism="3"),
    "inputs not a list": dict(events.vertex_initialized("v1", 3, ["v0"]), inputs="v0"),
    "graph not text": dict(events.job_submitted("job", "{}", "f"), graph={"mode": "batch"}),
    "time far away": dict(events.job_finished(), time=1e300),
    "time null": dict(events.region_failed("v1", ["v1[1]"], "boom", 1), time=None),  # crashed the panel
    "a list": [1, 2],
    "unknown type": {"type": "mystery", "time": 1.0},
}


@pytest.mark.parametrize("name", list(BAD_RECORDS))
def test_a_record_of_the_wrong_shape_is_skipped_with_its_file_and_offset(tmp_path, name):
    folder = finished_job(str(tmp_path / "jobs"))
    reset = events.subtask_reset("v2", 1, "checked")
    path = append_records(folder, [reset, BAD_RECORDS[name], reset])
    found, warned = read(folder)
    offset = len(encode(reset))
    assert [w for w in warned if f"{path}: record at byte {offset} skipped" in w], warned
    assert found[-2:] == [reset, reset]  # reading went on after it
    state = replay(found)  # and the job replays and plans as before
    vertices, inputs = subtask_inputs(four_operators())
    decision = decide_resume(vertices, inputs, state, lambda f: None)
    assert decision.rerun == {("v2", 1)}


def test_json_nested_100000_deep_is_unreadable_not_a_crash(tmp_path):
    folder = finished_job(str(tmp_path / "jobs"))
    path = append_records(folder, [deep(100_000), events.job_finished()])
    found, warned = read(folder)
    assert any(f"{path}: unreadable record at byte 0 (JSON nested too deep); skipped" in w for w in warned)
    assert found[-1]["type"] == "job_finished"


def test_a_finished_event_without_files_is_re_run_not_an_index_error(tmp_path):
    folder = finished_job(str(tmp_path / "jobs"))
    append_records(folder, [events.subtask_reset("v2", 0, "x"),
                            events.subtask_finished("v2", 0, 2, None, 1, 1, 0.1, files=[])])
    state = replay(read(folder)[0])
    vertices, inputs = subtask_inputs(four_operators())
    decision = decide_resume(vertices, inputs, state, lambda f: file_intact(Storage(folder), f))
    assert decision.reasons == {("v2", 0): "no result file recorded"}


def test_a_record_claiming_a_huge_length_ends_that_file(tmp_path, alarm):
    folder = finished_job(str(tmp_path / "jobs"))
    path = append_records(folder, [events.job_finished()], raw=b"\xff\xff\xff\xff\x00\x00\x00\x00" + b"x" * 100)
    found, warned = read(folder)
    assert any(f"{path}: record at byte" in w and "claims 4294967295 bytes" in w for w in warned)
    assert found[-1]["type"] == "job_finished"


def test_many_bad_records_give_a_bounded_number_of_warnings(tmp_path):
    folder = finished_job(str(tmp_path / "jobs"))
    append_records(folder, [[k] for k in range(500)])
    _, warned = read(folder)
    assert len(warned) == 21 and warned[-1].endswith("480 more bad records skipped")


# -- item 8: files that never end ----------------------------------------------------------------


@pytest.mark.parametrize("plant", ["folder", "fifo", "link to /dev/zero", "link to outside"])
def test_an_event_file_that_is_no_regular_file_is_skipped(tmp_path, outside, alarm, plant):
    folder = finished_job(str(tmp_path / "jobs"))
    target = os.path.join(folder, "events", "events.5")
    sentinel = outside / "events.0"
    sentinel.write_bytes(frame({"type": "job_failed", "time": 1.0, "cause": "planted"}))
    {"folder": lambda: os.mkdir(target), "fifo": lambda: os.mkfifo(target),
     "link to /dev/zero": lambda: os.symlink("/dev/zero", target),
     "link to outside": lambda: os.symlink(sentinel, target)}[plant]()
    append_records(folder, [events.job_finished()], index=7)
    watch = OpenWatch(str(sentinel))
    try:
        found, warned = read(folder)
        assert watch.poll() == []
    finally:
        watch.close()
    assert any(w.startswith(f"{target}: skipped") for w in warned), warned
    assert [e["type"] for e in found].count("job_failed") == 0 and found[-1]["type"] == "job_finished"


def test_an_event_folder_that_is_a_link_is_not_followed(tmp_path, outside, alarm):
    folder = finished_job(str(tmp_path / "jobs"))
    events_dir = os.path.join(folder, "events")
    os.rename(events_dir, outside / "events")
    os.symlink(outside / "events", events_dir)
    watch = OpenWatch(str(outside / "events"), str(outside / "events" / "events.0"))
    try:
        job = jobs.read_job(folder, "job")
        assert watch.poll() == []
    finally:
        watch.close()
    assert job.status == "damaged" and job.events == []


def test_a_crafted_parallelism_is_refused_in_one_line_and_the_panel_still_lists_the_job(tmp_path, alarm):
    graph = json.loads(four_operators().to_json())
    graph["operators"][0]["parallelism"] = 10**7
    with pytest.raises(FullWindowError, match="accepted: at most") as caught:
        JobGraph.from_json(json.dumps(graph))
    assert "\n" not in str(caught.value)
    folder = finished_job(str(tmp_path / "jobs"))
    append_records(folder, [events.job_submitted("job", json.dumps(graph), "f")])
    started = time.monotonic()
    job = jobs.read_job(folder, "job")
    assert job.status == "damaged" and "its recorded graph is unreadable" in job.label()
    assert job.subtasks() == [] and time.monotonic() - started < 2


def test_resume_planning_never_expands_an_all_to_all_edge():
    g = JobGraph(mode="batch")
    g.add_operator("source", 2000, kind="source")
    g.add_operator("reduce", 2000, kind="reduce")
    g.add_operator("map", 2000, kind="map_partition")
    g.connect("source", "reduce", "all_to_all")
    g.connect("reduce", "map", "all_to_all")
    log = [events.job_submitted("big", g.to_json(), g.fingerprint())]
    log += [finished_event("v0", i, f"results/v0/{i}.arrow", b"x") for i in range(2000)]
    log += [finished_event("v1", i, f"results/v1/{i}.arrow", b"x") for i in range(0, 2000, 2)]
    state = replay(log)
    checked = []
    started = time.monotonic()
    vertices, inputs = subtask_inputs(g)
    decision = decide_resume(vertices, inputs, state, lambda f: checked.append(f["path"]))
    elapsed = time.monotonic() - started
    assert elapsed < 0.5, f"{elapsed:.2f} s"
    assert decision.rerun == {("v1", i) for i in range(1, 2000, 2)} | {("v2", i) for i in range(2000)}
    assert len(checked) == 3000  # each producer of a re-run vertex is checked once, never 2000 times
    assert len(inputs[("v1", 7)]) == 2000 and inputs.consumed(("v0", 3)) and not inputs.consumed(("v2", 3))


# -- item 9: the recovery panel -------------------------------------------------------------------


def test_the_panel_lists_damaged_jobs_as_damaged_and_shows_the_rest(tmp_path):
    from fw_magics.widgets import RecoveryPanel

    root = str(tmp_path / "jobs")
    finished_job(root, "a-good")
    junk_graph = finished_job(root, "b-junk-graph")
    append_records(junk_graph, [events.job_submitted("b-junk-graph", "{not a graph", "f")])
    junk_fields = finished_job(root, "c-junk-fields")
    append_records(junk_fields, [dict(finished_event("v1", 0, "results/v1/0.arrow", b"x"), records_out="many")])
    flipped = finished_job(root, "d-flipped")
    path = os.path.join(flipped, "events", "events.0")
    data = bytearray(open(path, "rb").read())
    data[20] ^= 0x01  # inside the first record (job_submitted): its checksum no longer matches
    open(path, "wb").write(bytes(data))
    linked = os.path.join(root, "e-linked")
    os.symlink(tmp_path, linked)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        listed = {job.name: job for job in jobs.list_jobs(root)}
        panel = RecoveryPanel(root, namespace={})
    assert [listed[n].status for n in sorted(listed)] == ["finished", "damaged", "finished", "damaged", "damaged"]
    assert listed["b-junk-graph"].label().startswith("b-junk-graph: damaged (its recorded graph is unreadable")
    assert listed["d-flipped"].label() == (
        "d-flipped: damaged (its first record (job_submitted, with the graph) is unreadable)")
    assert "symbolic link" in listed["e-linked"].label()
    assert "5 found" in panel.title.value and len(panel.jobs.options) == 5
    for name in sorted(listed):
        panel.jobs.value = name  # opening each job never raises
        assert f"data-status='{listed[name].status}'" in panel.status.value
    panel.jobs.value = "d-flipped"
    assert "resume='repair'" in html.unescape(panel.message.value)
    panel.jobs.value = "c-junk-fields"  # its bad record is skipped: the job stays resumable
    assert listed["c-junk-fields"].label() == "c-junk-fields: finished, 9/9 subtasks finished, 1 bad record skipped"
    assert "A resume keeps <b>9</b>" in panel.subtask_table.value


@pytest.mark.extended  # make test-extended (CI): a million execution vertices
def test_a_graph_at_the_limit_gives_a_small_panel_table_built_in_seconds(tmp_path):
    # 32 operators x 32,768 subtasks = 2^20 execution vertices, all that from_json accepts: listing
    # every subtask made a 100 MB table; the panel lists 10 subtasks of each of 20 vertices, counts the rest
    from fw_magics.graph.documents import MAX_JSON_EXECUTION_VERTICES
    from fw_magics.graph.model import MAX_PARALLELISM
    from fw_magics.widgets import RecoveryPanel
    from tests.widgets.graphs import commit_file, write_log

    n = MAX_JSON_EXECUTION_VERTICES // MAX_PARALLELISM
    g = JobGraph(mode="batch")
    for k in range(n):
        g.add_operator(f"op{k}", MAX_PARALLELISM, kind="source" if k == 0 else "map_partition", chainable=False)
        if k:
            g.connect(f"op{k - 1}", f"op{k}", "all_to_all" if k % 2 else "pointwise")
    folder = str(tmp_path / "jobs" / "huge")
    sink = f"v{n - 1}"
    write_log(folder, [events.job_submitted("huge", g.to_json(), g.fingerprint())]
              + [finished_event(sink, i, commit_file(folder, sink, i)["path"], b"arrow bytes") for i in range(3)])
    started = time.monotonic()
    panel = RecoveryPanel(str(tmp_path / "jobs"), namespace={})
    elapsed = time.monotonic() - started
    table = panel.subtask_table.value
    assert panel.job.status == "interrupted" and len(panel.job.graph.job_vertices()) == n
    total = n * MAX_PARALLELISM
    assert total == MAX_JSON_EXECUTION_VERTICES
    assert f"A resume keeps <b>3</b> and re-runs <b>{total - 3:,}</b> of {total:,} subtasks." in table
    assert table.count("<tr data-verdict='re-run'>") == 20 * 10 and "v0[9]</td>" in table and "v0[10]<" not in table
    assert (f"… {MAX_PARALLELISM - 10:,} more subtasks of v0 (op0): a resume keeps 0 and re-runs "
            f"{MAX_PARALLELISM - 10:,} of them") in table
    assert (f"… {n - 20} more job vertices, {(n - 20) * MAX_PARALLELISM:,} subtasks: a resume keeps 3 and "
            f"re-runs {(n - 20) * MAX_PARALLELISM - 3:,} of them") in table
    assert len(table) < 64_000, f"{len(table):,} characters"
    assert elapsed < 30, f"{elapsed:.1f} s"  # 7 s here under load: deciding the resume of 2^20 subtasks, their regions


def test_a_lock_holding_a_list_is_a_damaged_lock_not_a_crash(tmp_path):
    folder = finished_job(str(tmp_path / "jobs"))
    with open(os.path.join(folder, "LOCK"), "w") as f:
        f.write("[1, 2]")
    job = jobs.read_job(folder, "job")
    assert job.holder is None and job.status == "finished"
