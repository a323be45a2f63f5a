"""Finding jobs after a restart: this process's jobs and the per-user job index (issue 17, item 6). No Spark."""

from __future__ import annotations

import json
import os
import shutil
import warnings

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from fw_magics.recovery import index
from fw_magics.recovery.jobs import find_jobs
from fw_magics.widgets import RecoveryPanel
from tests.widgets.graphs import four_operators, full_run, write_log


@pytest.fixture
def where(tmp_path, monkeypatch):
    """An index file of the test's own and a clean list of this process's jobs."""
    path = tmp_path / "share" / "jobs.json"
    monkeypatch.setenv("FW_JOB_INDEX", str(path))
    monkeypatch.setattr(index, "_here", {})
    return path


def a_job(folder, name: str) -> str:
    root = os.path.join(str(folder), name)
    write_log(root, full_run(four_operators(), name))
    return root


def test_the_index_lives_in_xdg_data_home_or_where_fw_job_index_says(tmp_path, monkeypatch):
    monkeypatch.delenv("FW_JOB_INDEX", raising=False)
    monkeypatch.setenv("XDG_DATA_HOME", str(tmp_path / "data"))
    assert index.index_path() == str(tmp_path / "data" / "fw-magics" / "jobs.json")
    monkeypatch.delenv("XDG_DATA_HOME")
    assert index.index_path() == os.path.expanduser("~/.local/share/fw-magics/jobs.json")
    monkeypatch.setenv("FW_JOB_INDEX", "relative/jobs.json")
    assert index.index_path() == os.path.abspath("relative/jobs.json")


def test_registered_jobs_are_found_after_a_restart_and_vanished_ones_pruned_quietly(where, tmp_path):
    first, second = a_job(tmp_path / "a", "orders"), a_job(tmp_path / "b", "orders")
    index.register(first, "orders")
    index.register(second, "orders")
    index.register(first, "orders")  # registered again: moves to the end, once
    assert index.ran_here() == [(second, "orders"), (first, "orders")]
    index._here.clear()  # a new kernel: only the index remembers
    assert index.registered() == [(second, "orders"), (first, "orders")]
    shutil.rmtree(second)
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # quietly: no warning
        assert index.registered() == [(first, "orders")]
    saved = json.loads(where.read_text())
    assert saved["version"] == 1 and [e["root"] for e in saved["jobs"]] == [first]  # pruned from the file too
    assert not [p for p in os.listdir(where.parent) if p.endswith(".tmp")]  # nothing half-written left


@pytest.mark.parametrize("damage", [b"", b"{not json", b"[1, 2]", b'{"jobs": 7}', b'{"jobs": [{"root": 3}, "x"]}',
                                    b"\xff\xfe\x00"])
def test_a_damaged_index_reads_as_empty_and_the_next_registration_repairs_it(where, tmp_path, damage):
    where.parent.mkdir(parents=True)
    where.write_bytes(damage)
    assert index.registered() == []
    root = a_job(tmp_path, "sales")
    index.register(root, "sales")
    assert index.registered() == [(root, "sales")]


def test_an_index_that_cannot_be_written_never_fails_the_job(tmp_path, monkeypatch):
    blocker = tmp_path / "file"
    blocker.write_text("a file where the index's folder should be")
    monkeypatch.setenv("FW_JOB_INDEX", str(blocker / "jobs.json"))
    monkeypatch.setattr(index, "_here", {})
    root = a_job(tmp_path, "sales")
    index.register(root, "sales")  # no error
    assert index.ran_here() == [(root, "sales")] and index.registered() == []


@settings(max_examples=40, deadline=None)
@given(st.lists(st.tuples(st.sampled_from("abc"), st.sampled_from(["x", "y"]), st.booleans()), max_size=12))
def test_the_index_keeps_the_latest_registration_of_each_living_job(tmp_path_factory, steps):
    """Reference: an ordered dict of root -> name, moved to the end when registered again."""
    base = tmp_path_factory.mktemp("index")
    saved = os.environ.get("FW_JOB_INDEX")
    os.environ["FW_JOB_INDEX"] = str(base / "jobs.json")
    try:
        model: dict = {}
        for folder, name, vanish in steps:
            root = os.path.join(str(base), folder, name)
            if not os.path.isdir(root):
                a_job(os.path.join(str(base), folder), name)
            index.register(root, name)
            model.pop(root, None)
            model[root] = name
            if vanish:
                shutil.rmtree(root)
                model.pop(root)
        assert index.registered() == list(model.items())
    finally:
        if saved is None:
            os.environ.pop("FW_JOB_INDEX")
        else:
            os.environ["FW_JOB_INDEX"] = saved


def test_find_jobs_says_where_it_looked_and_lists_each_job_once(where, tmp_path):
    here = str(tmp_path / ".fw-jobs")
    local = a_job(here, "daily")
    elsewhere = a_job(tmp_path / "tutorials" / ".fw-jobs", "orders")
    index.register(local, "daily")
    index.register(elsewhere, "orders")
    index._here.clear()
    found = find_jobs(here)
    assert [(job.name, job.root) for job in found.jobs] == [("daily", local), ("orders", elsewhere)]
    assert found.looked == [(here, 1), ("this kernel's runs", 0), (str(where), 1)]
    assert [job.name for job in find_jobs(here, elsewhere=False).jobs] == ["daily"]


def test_a_plain_recovery_panel_lists_jobs_from_everywhere_with_their_folders(where, tmp_path):
    here = str(tmp_path / ".fw-jobs")
    a_job(here, "orders")
    other = a_job(tmp_path / "elsewhere", "orders")
    index.register(other, "orders")
    panel = RecoveryPanel(namespace={}, job_dir=here, elsewhere=True)
    assert "2 found" in panel.title.value
    assert f"1 in <code>{here}</code>" in panel.title.value and str(where) in panel.title.value
    (mine, label_mine), (theirs, label_theirs) = [(value, label) for label, value in panel.jobs.options]
    assert (mine, theirs) == (os.path.join(here, "orders"), other)  # same names: told apart by folder
    assert label_theirs.endswith(f"(in {os.path.dirname(other)})") and "(in" not in label_mine
    panel.open_job(other)
    assert panel.job.root == other and other in panel.status.value
    only_here = RecoveryPanel(here, namespace={})  # %fw_recover DIR: that folder only
    assert [label for label, _ in only_here.jobs.options] == ["orders: finished, 9/9 subtasks finished"]


def test_the_panel_lists_its_folders_jobs_first_the_rest_by_folder_and_filters_them(where, tmp_path):
    """A fresh kernel's %fw_recover lists every job of the user's index (issue 47, item 10: 26 jobs of
    tutorial temp folders, in the order registered): the notebook's folder first, the rest grouped by
    folder, and a filter narrows the list."""
    here = str(tmp_path / ".fw-jobs")
    a_job(here, "sales")
    for folder, name in [("tmp-b", "orders"), ("tmp-a", "sensors"), ("tmp-b", "clicks"), ("tmp-a", "orders")]:
        index.register(a_job(tmp_path / folder, name), name)
    panel = RecoveryPanel(namespace={}, job_dir=here, elsewhere=True)
    listed = [(os.path.basename(label.rsplit("(in ", 1)[1][:-1]) if "(in " in label else "here", label.split(":")[0])
              for label, _ in panel.jobs.options]
    assert listed == [("here", "sales"), ("tmp-a", "orders"), ("tmp-a", "sensors"), ("tmp-b", "clicks"),
                      ("tmp-b", "orders")], listed
    assert panel.job.name == "sales"
    panel.filter.value = "TMP-B"  # any case; the open job stays listed
    assert [label.split(":")[0] for label, _ in panel.jobs.options] == ["sales", "clicks", "orders"]
    panel.open_job(os.path.join(str(tmp_path / "tmp-b"), "clicks"))
    panel.filter.value = "nothing like it"
    assert [label.split(":")[0] for label, _ in panel.jobs.options] == ["clicks"]
    panel.refresh()  # a refresh keeps the filter and the open job
    assert panel.job.name == "clicks" and len(panel.jobs.options) == 1
    panel.filter.value = ""
    assert len(panel.jobs.options) == 5


def test_with_nothing_anywhere_the_panel_says_where_it_looked(where, tmp_path):
    panel = RecoveryPanel(namespace={}, job_dir=str(tmp_path / "none"), elsewhere=True)
    assert "0 found (run ds.execute() to record one)" in panel.title.value
    assert "none other run in this kernel" in panel.title.value and str(where) in panel.title.value
