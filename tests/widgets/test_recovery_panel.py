"""RecoveryPanel and the job listing on job directories written directly with JobEventStore. No Spark."""

import html
import os

import pytest

from fw_magics.errors import JobLockedError, ResumeError
from fw_magics.recovery import JobLock, events, jobs
from fw_magics.widgets import RecoveryPanel, model
from tests.widgets.graphs import commit_file, finished, four_operators, full_run, write_log

CELL = "ds = fw.from_records(rows, schema)\nresult = ds.execute(job_name='broken')"


@pytest.fixture
def job_dir(tmp_path):
    """Two jobs of the four-operator graph: 'done' finished; 'broken' interrupted mid-run.

    broken: v0[0], v0[1] and v1[0] finished with their files intact, v0[2] finished but its
    file is gone, the rest never finished, and no job_finished: the process died.
    """
    g = four_operators()
    root = str(tmp_path / "jobs")
    done = os.path.join(root, "done")
    log = full_run(g, "done")
    for e in log:
        if e["type"] == "subtask_finished":
            e["files"] = [commit_file(done, e["vertex"], e["subtask"])]
    write_log(done, log)
    broken = os.path.join(root, "broken")
    log = [events.job_submitted("broken", g.to_json(), g.fingerprint(), cell=CELL)]
    log += [events.vertex_initialized(f"v{k}", 3, [] if k == 0 else [f"v{k - 1}"]) for k in range(3)]
    log += [finished("v0", i, files=[commit_file(broken, "v0", i)]) for i in range(3)]
    log.append(finished("v1", 0, files=[commit_file(broken, "v1", 0)]))
    write_log(broken, log)
    os.remove(os.path.join(broken, "results", "v0", "2.arrow"))
    os.makedirs(os.path.join(root, "not-a-job"))  # a folder without an event log is no job
    return root


def test_jobs_are_listed_with_their_status(job_dir):
    found = jobs.list_jobs(job_dir)
    assert [(j.name, j.status) for j in found] == [("broken", "interrupted"), ("done", "finished")]
    assert found[0].label() == "broken: interrupted, 4/9 subtasks finished"
    assert found[0].cell == CELL and found[1].cell is None
    assert found[0].graph == four_operators()


def test_the_subtask_table_says_what_a_resume_keeps_and_why(job_dir):
    rows = {f"{r['vertex']}[{r['subtask']}]": r for r in jobs.read_job(f"{job_dir}/broken", "broken").subtasks()}
    verdicts = {name: r["verdict"] for name, r in rows.items()}
    assert verdicts == {
        "v0[0]": "keep: finished, result intact", "v0[1]": "keep: finished, result intact",
        "v0[2]": "re-run: result missing", "v1[0]": "keep: finished, result intact",
        "v1[1]": "re-run: unfinished", "v1[2]": "re-run: unfinished",
        "v2[0]": "re-run: unfinished", "v2[1]": "re-run: unfinished", "v2[2]": "re-run: unfinished",
    }
    assert rows["v0[0]"]["operators"] == "source + sort" and rows["v0[1]"]["files"] == "results/v0/1.arrow"
    assert rows["v1[0]"]["records"] == 10 and rows["v2[0]"]["records"] is None

    panel = RecoveryPanel(job_dir, namespace={})
    table = panel.subtask_table.value
    assert "A resume keeps <b>3</b> and re-runs <b>6</b> of 9 subtasks." in table
    assert table.count("data-verdict='keep'") == 3 and table.count("data-verdict='re-run'") == 6
    assert "re-run: result missing" in table


def test_the_panel_opens_the_first_job_and_lists_all(job_dir):
    panel = RecoveryPanel(job_dir, namespace={})
    assert "2 found" in panel.title.value
    assert panel.jobs.options == (("broken: interrupted, 4/9 subtasks finished", "broken"),
                                  ("done: finished, 9/9 subtasks finished", "done"))
    assert panel.job.name == "broken" and "data-status='interrupted'" in panel.status.value
    panel.jobs.value = "done"  # picking a job in the list opens it
    assert panel.job.name == "done" and "data-status='finished'" in panel.status.value
    assert "A resume keeps <b>9</b> and re-runs <b>0</b>" in panel.subtask_table.value
    assert panel.resume_button.disabled and panel.message.value == "Nothing to resume: the job is finished."
    assert set(panel.graph_view.states.values()) == {"finished"}


def test_the_timeline_replays_the_log_step_by_step(job_dir):
    panel = RecoveryPanel(job_dir, namespace={})
    log = panel.job.events
    assert panel.step.max == len(log) == 8 and panel.step.value == 8  # opened at the end
    assert panel.graph_view.states == {"source": "finished", "sort": "finished", "reduce": "running",
                                       "map": "pending"}
    seen = {}
    for k in range(len(log) + 1):
        panel.step.value = k
        text = panel.event.value
        assert text.startswith(f"<code>{k}/{len(log)}</code> ")
        if k == 0:
            assert text.endswith("before the first event")
        else:
            assert text.endswith(html.escape(model.describe_event(log[k - 1])))
        seen[k] = dict(panel.graph_view.states)
    assert set(seen[0].values()) == {"pending"}
    assert seen[4]["source"] == "running" and seen[5]["source"] == "running"  # v0 started, not done
    assert seen[7]["sort"] == "finished" and seen[7]["reduce"] == "running"
    assert len({tuple(sorted(s.items())) for s in seen.values()}) == 3
    panel.step.value = 3
    panel.back.click()
    assert panel.step.value == 2 and "vertex initialized: v0" in panel.event.value
    panel.forward.click()
    panel.forward.click()
    assert panel.step.value == 4
    panel.step.value = len(log)
    panel.forward.click()  # stays at the end
    assert panel.step.value == len(log)


def test_resume_is_disabled_without_the_jobs_stream_and_quotes_the_cell(job_dir):
    panel = RecoveryPanel(job_dir, namespace={"unrelated": 42})
    assert panel.resume_button.disabled and panel.stream is None
    assert "define the job's DataStream in this kernel" in panel.message.value
    assert f"<pre>{html.escape(CELL)}</pre>" in panel.message.value
    with pytest.raises(ResumeError, match="nothing to resume here"):
        panel.resume()


def test_discard_asks_first_then_removes_the_folder(job_dir):
    panel = RecoveryPanel(job_dir, namespace={})
    assert panel.confirm.layout.display == "none"
    panel.discard_button.click()
    assert panel.confirm.layout.display is None  # the confirmation shows
    assert "Delete job <b>broken</b>, its event log and 4 result files?" in panel.confirm_text.value
    panel.confirm_no.click()
    assert panel.confirm.layout.display == "none" and os.path.isdir(os.path.join(job_dir, "broken"))
    panel.discard_button.click()
    panel.confirm_yes.click()
    assert not os.path.exists(os.path.join(job_dir, "broken"))
    assert panel.message.value == "Discarded broken."
    assert panel.job.name == "done" and [v for _, v in panel.jobs.options] == ["done"]
    panel.discard()
    assert [j.name for j in jobs.list_jobs(job_dir)] == [] and panel.detail.layout.display == "none"
    assert "0 found" in panel.title.value


def test_discard_is_refused_while_a_live_process_holds_the_lock(job_dir):
    root = os.path.join(job_dir, "broken")
    with JobLock(root):
        panel = RecoveryPanel(job_dir, namespace={})
        assert panel.job.status == "running" and "data-status='running'" in panel.status.value
        assert panel.resume_button.disabled and "Nothing to resume: the job is running." == panel.message.value
        panel.discard_button.click()
        panel.confirm_yes.click()
        assert f"is being run by pid {os.getpid()}" in panel.message.value
        assert panel.confirm.layout.display == "none"
        assert os.path.isfile(os.path.join(root, "events", "events.0"))
        with pytest.raises(JobLockedError, match="not discarded"):
            jobs.discard(jobs.read_job(root, "broken"))
    panel.refresh()  # the lock is gone: the job is interrupted again
    assert panel.job.status == "interrupted"


def test_an_empty_job_directory(tmp_path):
    panel = RecoveryPanel(str(tmp_path), namespace={})
    assert "0 found (run ds.execute() to record one)" in panel.title.value
    assert panel.job is None and panel.detail.layout.display == "none"
