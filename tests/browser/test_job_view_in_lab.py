"""job.show() in a real JupyterLab and Chromium (issue 48): the view under its cell changes by itself when a file
lands (no cell runs), a cell runs while it follows, Savepoint and Stop are the job's, and after Kernel > Restart
the same job shown by name holds what its log recorded, read-only; the state inspector (the view's "State of a key",
and show_graph(job)'s keyed operator) shows a typed key's state at each kept micro-batch and in the savepoint. Screenshots in test-artifacts/job-view-*.png.

Classic Spark only: the Connect path of the view (its reads, its buttons) is tests/widgets/test_job_view_spark.py
under Connect (tests/connect_cases.py); this module checks what only a browser shows.
"""

from __future__ import annotations

import re
import time

import nbformat
import pytest

from fw_magics.recovery.jobs import find_jobs
from fw_magics.runtime.streaming.driver.stall import FLOOR_S
from fw_magics.runtime.streaming.savepoints.files import list_savepoints
from tests.browser.conftest import accept_kernel_dialog, run_all_cells, shot
from tests.streaming.files import Area

pytestmark = [pytest.mark.slow, pytest.mark.extended, pytest.mark.timeout(900)]  # make test-extended (CI)

NOTEBOOK = "live_view.ipynb"
#: How long the page may take to show a micro-batch's rows: the job's trigger and micro-batch, then the view's
#: read; within the stall guard's recovery, as tests/widgets/test_job_view_kernel.py says why.
WITHIN_MS = int(FLOOR_S * 3 * 1000)


def notebook(source: str, jobs: str) -> nbformat.NotebookNode:
    cells = [
        "import fw_magics as fw\n"
        f"stream = fw.from_files({source!r}, 'parquet', 'k long, v long, ts timestamp', event_time='ts')\n"
        "totals = stream.key_by('k').reduce(lambda a, b: (a.k, a.v + b.v, max(a.ts, b.ts)))\n"
        f"job = totals.start(job_dir={jobs!r}, job_name='live', trigger='200 milliseconds')\n"
        "job.process_all_available()",  # the job as the cell's last value: its live view
    ]
    nb = nbformat.v4.new_notebook(cells=[nbformat.v4.new_code_cell(c) for c in cells])
    nb.metadata["kernelspec"] = {"name": "python3", "display_name": "Python 3", "language": "python"}
    return nb


def run_below(page, code: str) -> None:
    """A new cell under the last one, typed and run as a person does (Esc, B, Enter, type, Shift+Enter)."""
    page.locator(".jp-Notebook .jp-CodeCell .jp-InputPrompt").last.click()  # the cell, not its output's controls
    page.keyboard.press("Escape")
    page.keyboard.press("b")
    page.keyboard.press("Enter")  # edit mode in the new cell
    page.keyboard.type(code)
    page.keyboard.press("Shift+Enter")


def test_a_view_follows_its_job_in_jupyterlab_and_shows_it_again_after_a_kernel_restart(labs, browser):
    lab = labs("classic")
    area = Area(lab.root / "live-view")
    area.write([(k, 1, k) for k in range(4)])  # the backlog: v 1 per key
    nbformat.write(notebook(area.source(), area.jobs), lab.root / NOTEBOOK)
    page = browser.new_page(viewport={"width": 1300, "height": 1400})
    try:
        page.goto(lab.url(NOTEBOOK))
        run_all_cells(page)
        view = page.locator(".fw-job-view").first
        view.locator(".fw-phase", has_text="stream").wait_for(timeout=120_000)
        table = view.locator("table.fw-job-results")
        assert table.locator("td", has_text="1").count() >= 4  # the backlog's rows, one per key
        prompts = page.locator(".jp-CodeCell .jp-InputArea-prompt").all_inner_texts()

        area.write([(2, 70, 10)])  # from this process: no cell runs from here on
        table.locator("td", has_text="71").wait_for(timeout=WITHIN_MS)
        view.locator(".widget-dropdown", has_text="top by").locator("select").select_option("v")  # top by v, as a person picks it: the table and a chart of v
        view.locator("caption", has_text="top by v").wait_for(timeout=60_000)
        assert table.locator("tbody tr").first.locator("td").nth(1).inner_text() == "71"
        bar = view.locator("svg.fw-result-chart title", has_text="2: 71")
        bar.wait_for(state="attached", timeout=60_000)
        assert view.locator("svg.fw-result-chart title").count() == 4  # one bar per key
        assert page.locator(".jp-CodeCell .jp-InputArea-prompt").all_inner_texts() == prompts  # by itself
        shot(page, "job-view-live")

        run_below(page, "1 + 1")  # the kernel is free while the view follows
        page.locator(".jp-OutputArea-executeResult .jp-OutputArea-output").filter(
            has_text=re.compile(r"^\s*2\s*$")).wait_for(timeout=60_000)

        view.locator(".fw-job-savepoint").click()
        view.locator("code", has_text="savepoint-").first.wait_for(timeout=120_000)
        assert len(list_savepoints(_job_root(area.jobs))) == 1
        _inspect_a_key(page, view)
        view.locator(".fw-job-stop").click()
        view.locator(".fw-job-message", has_text="job 'live' stopped").wait_for(timeout=120_000)
        assert all(view.locator(f".fw-job-{b}").is_disabled() for b in ("stop", "savepoint", "stop-with-savepoint"))

        page.locator(".lm-MenuBar-itemLabel", has_text="Kernel").first.click()
        page.locator(".lm-Menu-itemLabel", has_text="Restart Kernel…").first.click()
        page.locator(".jp-Dialog .jp-mod-accept").click()
        page.locator(".jp-Notebook-ExecutionIndicator[data-status='idle']").first.wait_for(timeout=120_000)
        accept_kernel_dialog(page)
        time.sleep(1)  # the restart's own idle status, before the next cell's busy one
        run_below(page, f"from fw_magics.widgets import show_job\nshow_job('live', job_dir={area.jobs!r}, key='k')")
        again = page.locator(".jp-CodeCell", has_text="show_job(").locator(".fw-job-view")  # the new cell's
        again.locator("i", has_text="read-only").wait_for(timeout=120_000)
        assert again.locator("table.fw-job-results td", has_text="71").count() == 1  # what the log recorded
        assert all(again.locator(f".fw-job-{b}").is_disabled() for b in ("stop", "savepoint"))
        assert again.locator(".fw-phase", has_text="stopped").count() == 1
        shot(page, "job-view-after-restart")
    finally:
        page.close()
        lab.shutdown_kernels()


def _inspect_a_key(page, view) -> None:
    """show_graph(job) of the running job: the source says why it has no keyed state, the keyed operator opens the
    state inspector. The live view's "State of a key", opened: key 2 typed shows its state at each kept micro-batch
    and in the savepoint (v 71), and the job's keys are offered to pick."""
    run_below(page, "from fw_magics.widgets import show_graph\nshow_graph(job)")
    graph = page.locator(".jp-CodeCell", has_text="show_graph(").locator(".fw-graph-view")
    graph.locator("g.fw-op[data-operator^='files']").click()
    graph.locator(".fw-state-none", has_text="has no keyed state to inspect").wait_for(timeout=60_000)
    graph.locator("g.fw-op[data-operator^='reduce']").click()
    graph.locator(".fw-state-inspector .fw-state-key input").wait_for(timeout=60_000)
    fold = view.locator(".fw-job-state")
    assert not fold.locator(".fw-state-key input").is_visible()  # folded until opened
    fold.get_by_text("State of a key").first.click()  # its title (the inspector inside has one too)
    inspector = fold.locator(".fw-state-inspector")
    key = inspector.locator(".fw-state-key input")
    key.fill("2")
    key.press("Enter")
    table = inspector.locator(".fw-state-table table")
    table.locator("caption", has_text="key k = 2").wait_for(timeout=120_000)
    header = table.locator("thead th").all_inner_texts()
    rows = [dict(zip(header, row.locator("td").all_inner_texts())) for row in table.locator("tbody tr").all()]
    assert header[:4] == ["at", "batch", "savepoint", "found"] and "v" in header, header
    assert rows and all(r["found"] == "present" for r in rows), rows  # the backlog gave key 2 its state
    (saved,) = [r for r in rows if r["at"] == "savepoint"]
    assert (saved["savepoint"], saved["v"]) == ("savepoint-000001", "71")
    assert [r["v"] for r in rows if r["at"] == "micro-batch"][-1] == "71"
    table.scroll_into_view_if_needed()
    shot(page, "job-view-state-inspector")
    # the keys offered to pick (picking one is the widget model's test: another read here would cost seconds)
    inspector.locator(".fw-state-pick select option", has_text="3").wait_for(state="attached", timeout=60_000)


def _job_root(jobs: str) -> str:
    """The job's folder, found by name as %fw_recover finds it."""
    return next(job.root for job in find_jobs(jobs, elsewhere=False).jobs if job.name == "live")
