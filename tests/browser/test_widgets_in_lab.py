"""Tutorial 5 in a real JupyterLab and Chromium: click, what-if, Resume a killed job.

Marked slow; runs once on the embedded classic Spark and, in `make test-extended`, once under
Spark Connect (the kernel inherits SPARK_REMOTE from the server; both servers are shared with
the other browser tests, see conftest.labs). The classic run also stands for tests/test_tutorials.py's
run of tutorial 5: the notebook, saved from the page, has no error output (test_tutorials
leaves tutorial 5 to this module when it runs).
"""

from __future__ import annotations

import pathlib

import pytest

from fw_magics.graph import JobGraph
from fw_magics.recovery.jobs import read_job
from fw_magics.widgets.model import what_if
from tests.browser.conftest import (
    MODES,
    READABLE_PX,
    REPO,
    TUTORIAL,
    copy_without_outputs,
    geometry,
    run_all_cells,
    shot,
)

pytestmark = [pytest.mark.slow, pytest.mark.extended, pytest.mark.timeout(900)]  # make test-extended (CI)


@pytest.fixture(scope="module", params=list(MODES))
def tour(request, labs, browser):
    """Tutorial 5 opened and run top to bottom in JupyterLab; yields (page, root, mode, (base, token))."""
    mode = request.param
    lab = labs(mode)
    copy_without_outputs(REPO / "tutorials" / TUTORIAL, lab.root / TUTORIAL, solved=True)
    page = browser.new_page(viewport={"width": 1500, "height": 1100})
    try:
        page.goto(lab.url(TUTORIAL))
        try:
            run_all_cells(page)
        finally:
            shot(page, f"{mode}-0-ran")
        yield page, lab.root, mode, (lab.base, lab.token)
    finally:
        page.close()
        lab.shutdown_kernels()


def _graph(root: pathlib.Path) -> JobGraph:
    """The tour's job graph, read from the event log the notebook's own execute() wrote."""
    return read_job(str(root / ".fw-jobs" / "tour" / "tour"), "tour").graph


def test_no_cell_failed(tour):
    page, root, mode, _ = tour
    errors = page.locator(".jp-OutputArea-output[data-mime-type='application/vnd.jupyter.stderr']",
                          has_text="Traceback")
    assert errors.count() == 0, errors.first.inner_text()[:2000]
    # what tests/test_tutorials.py asserts of the other tutorials, on the notebook as the page saves it
    import nbformat

    page.locator(".jp-Notebook .jp-Cell").first.click()
    page.keyboard.press("Control+s")
    page.locator(".jp-mod-dirty").first.wait_for(state="detached", timeout=30_000)
    nb = nbformat.read(root / TUTORIAL, as_version=4)
    code = [c for c in nb.cells if c.cell_type == "code"]
    assert code and all(c.execution_count for c in code), f"{mode}: not every cell ran"
    failed = [o for c in code for o in c.get("outputs", []) if o.output_type == "error"]
    assert not failed, f"{mode}: " + "\n".join(o.get("ename", "") + ": " + o.get("evalue", "") for o in failed)
    checks = [c for c in code if any(t.startswith("check") for t in c.metadata.get("tags", []))]
    said = ["".join(o.get("text", "") for o in c.get("outputs", []) if o.get("output_type") == "stream") for c in checks]
    assert checks and all("Correct!" in text for text in said), f"{mode}: the solution was not accepted: {said}"


def test_click_operator_shows_its_attributes(tour):
    page, _, mode, _ = tour
    view = page.locator(".fw-graph-view").first
    node = view.locator("g.fw-op[data-operator='reduce(bigger)']")
    node.click()
    details = view.locator(".fw-details")
    details.locator("td[data-key='operator']", has_text="reduce(bigger)").wait_for(timeout=30_000)
    assert details.locator("td[data-key='output only after end of input']").inner_text() == "yes"
    assert details.locator("td[data-key='kind']").inner_text() == "reduce"
    assert "blocking" in details.locator("td[data-key='inputs']").inner_text()
    assert "reduce(bigger)" in node.get_attribute("class") or "fw-selected" in node.get_attribute("class")
    assert details.locator("pre").inner_text().strip()  # the Spark plan fragment
    shot(page, f"{mode}-1-attributes")


def test_what_if_highlights_the_restart_set(tour):
    page, root, mode, _ = tour
    expected = what_if(_graph(root), "orders", 1)
    view = page.locator(".fw-graph-view").first
    view.locator("select").first.select_option("orders")
    subtask = view.locator("input[type='number']").first
    subtask.fill("1")
    subtask.press("Enter")
    view.get_by_role("button", name="region failover").click()
    view.locator("button.fw-whatif-fail").click()
    count = view.locator(".fw-whatif-count")
    count.filter(has_text=f"{len(expected.region):,}").wait_for(timeout=30_000)
    highlighted = view.locator("g.fw-op.fw-highlighted")
    assert highlighted.count() == len(expected.per_operator("region"))
    assert "orders[1] fails" in view.locator(".fw-whatif-result").inner_text()
    shot(page, f"{mode}-2-what-if-region")
    view.get_by_role("button", name="restart all").click()
    count.filter(has_text=f"{len(expected.all):,}").wait_for(timeout=30_000)
    page.wait_for_function(
        "n => document.querySelectorAll('.fw-graph-view')[0].querySelectorAll('g.fw-op.fw-highlighted').length === n",
        arg=len(_graph(root).operators), timeout=30_000)
    shot(page, f"{mode}-3-what-if-all")


def test_recovery_panel_draws_every_badge_inside_its_box(tour):
    """Tutorial 5's panel once drew a badge through the chain's frame: each badge now sits in
    its own box, inside the drawing, in the visible part of the panel, text at least 11 px."""
    page, _, mode, _ = tour
    panel = page.locator(".fw-recovery-panel").first
    panel.locator(".fw-status[data-status='interrupted']").wait_for(timeout=30_000)
    drawing = panel.locator(".fw-graph-view").first
    drawing.locator("text.fw-badge").nth(3).wait_for(state="attached", timeout=30_000)  # one per operator
    found = geometry(drawing)
    assert found["problems"] == [], found["problems"]
    assert found["nodes"] == 4 and found["badges"] == 4 and found["minFont"] >= READABLE_PX
    drawing.scroll_into_view_if_needed()
    shot(page, f"{mode}-4a-recovery-panel-badges")


def test_recovery_panel_resumes_the_killed_job(tour):
    page, root, mode, _ = tour
    panel = page.locator(".fw-recovery-panel").first
    panel.scroll_into_view_if_needed()
    panel.locator(".fw-status[data-status='interrupted']").wait_for(timeout=30_000)
    before = read_job(str(root / ".fw-jobs" / "tour" / "tour-killed"), "tour-killed")
    assert before.status == "interrupted"
    rerun = [row for row in before.subtasks() if not row["verdict"].startswith("keep")]
    assert rerun and len(rerun) < len(before.subtasks())  # something finished before the kill
    # scrub the timeline back to the start: the graph shows nothing finished yet
    slider = panel.locator(".fw-timeline")
    assert panel.locator(".fw-event").inner_text().startswith(f"{len(before.events)}/")
    panel.get_by_role("button", name="◀ step").click()
    panel.locator(".fw-event", has_text=f"{len(before.events) - 1}/").wait_for(timeout=30_000)
    assert slider.count() == 1
    shot(page, f"{mode}-4-recovery-panel")
    resume = panel.locator("button.fw-resume")
    assert resume.is_enabled()
    resume.click()
    panel.locator(".fw-resumed").wait_for(timeout=240_000)
    panel.locator(".fw-status[data-status='finished']").wait_for(timeout=30_000)
    shot(page, f"{mode}-5-resumed")
    after = read_job(str(root / ".fw-jobs" / "tour" / "tour-killed"), "tour-killed")
    assert after.status == "finished"
    assert all(row["verdict"].startswith("keep") for row in after.subtasks())
    # only what the panel said would re-run ran again: kept subtasks were not re-finished
    kept = {(r["vertex"], r["subtask"]) for r in before.subtasks() if r["verdict"].startswith("keep")}
    refinished = {(e["vertex"], e["subtask"]) for e in after.events[len(before.events):]
                  if e["type"] == "subtask_finished"}
    assert refinished and not (refinished & kept)


BIG = """
from fw_magics.graph import JobGraph, OperatorAttributes
from fw_magics.widgets import GraphView

g = JobGraph(mode="batch")
for k in range(500):
    g.add_operator(f"op{k}", parallelism=2 + k % 3, kind=["map", "sort", "reduce"][k % 3],
                   attributes=OperatorAttributes(output_only_after_end_of_stream=k % 3 == 1))
    if k:
        g.connect(f"op{k - 1}", f"op{k}", pattern="all_to_all" if k % 5 == 0 else "pointwise")
big = GraphView(g, title="500 operators")
big
"""


FRONTENDS = {  # JupyterLab opens it in a workspace of its own, so only it is on the page
    "jupyterlab": "{base}/lab/workspaces/big/tree/big.ipynb?reset&token={token}",
    "notebook7": "{base}/notebooks/big.ipynb?token={token}",
}


@pytest.mark.parametrize("frontend", list(FRONTENDS))
def test_a_500_operator_graph_stays_usable(tour, browser, frontend):
    """In JupyterLab 4 and Notebook 7: draws, answers a click and a what-if within Playwright's
    ordinary waits (no timing asserted)."""
    _, root, mode, (base, token) = tour
    if mode != "classic":
        pytest.skip("no Spark involved: once is enough")
    import nbformat

    nb = nbformat.v4.new_notebook(cells=[nbformat.v4.new_code_cell(BIG)],
                                  metadata={"kernelspec": {"name": "python3", "display_name": "Python 3",
                                                           "language": "python"}})
    nbformat.write(nb, root / "big.ipynb")
    page = browser.new_page(viewport={"width": 1500, "height": 1100})
    try:
        page.goto(FRONTENDS[frontend].format(base=base, token=token))
        run_all_cells(page, timeout_ms=120_000)
        view = page.locator(".fw-graph-view").first
        nodes = view.locator("g.fw-op")
        nodes.nth(499).wait_for(state="attached", timeout=30_000)
        assert nodes.count() == 500
        found = geometry(view, whole_graph=False)  # too big to fit: it scrolls, its text stays readable
        assert found["problems"] == [] and found["minFont"] >= READABLE_PX, found["problems"][:5]
        view.locator("g.fw-op[data-operator='op250']").click()
        view.locator(".fw-details td[data-key='operator']", has_text="op250").wait_for(timeout=30_000)
        view.locator("select").first.select_option("op250")
        view.locator("input[type='number']").first.fill("1")
        view.locator("input[type='number']").first.press("Enter")
        view.locator("button.fw-whatif-fail").click()
        view.locator(".fw-whatif-count", has_text="739").wait_for(timeout=30_000)
        assert view.locator("g.fw-op.fw-highlighted").count() == 250
        shot(page, f"classic-6-500-operators-{frontend}")
    finally:
        page.close()
