"""What a person sees of the drawings (issue 17, item 5), in JupyterLab and Chromium.

Tutorials 2 and 3 (static drawings and a graph widget; no Spark) run top to bottom on the
shared classic server, and tutorial 4's recovery panel is shown on an event log of its job
written here (tutorial 5's panel, on a real killed run, is checked in test_widgets_in_lab),
in a window whose output area is about as wide as the issue measured (953 px).
Every operator box, label and badge must lie inside the visible part of its output (no
sideways overflow hiding the join and the sink), every text must be at least 11 px on
screen, and a badge must sit inside its own box: not past the SVG's edge, not through a
chain's frame. Screenshots go to test-artifacts/.
"""

from __future__ import annotations

import nbformat
import pytest

from fw_magics.graph import JobGraph, OperatorAttributes
from tests.browser.conftest import READABLE_PX, REPO, copy_without_outputs, geometry, run_all_cells, shot

pytestmark = [pytest.mark.slow, pytest.mark.extended, pytest.mark.timeout(900)]  # make test-extended (CI)
VIEWPORT = {"width": 1385, "height": 1100}  # JupyterLab's output area is then about 953 px wide
TUTORIALS = {"02": "02_operator_attributes.ipynb", "03": "03_failover_regions.ipynb"}
STATIC = {"02": 5, "03": 2}  # static drawings each tutorial shows (03's third graph is a widget)


@pytest.fixture(scope="module")
def tutorial(labs, browser):
    """``tutorial("02")``: the page of that tutorial, run top to bottom once (on first use)."""
    lab = labs("classic")
    pages = {}

    def run(number: str):
        if number not in pages:
            name = TUTORIALS[number]
            copy_without_outputs(REPO / "tutorials" / name, lab.root / name)
            page = pages[number] = browser.new_page(viewport=VIEWPORT)
            page.goto(lab.url(name))
            try:
                run_all_cells(page)
            finally:
                shot(page, f"graphs-{number}-ran")
            errors = page.locator(".jp-OutputArea-output[data-mime-type='application/vnd.jupyter.stderr']",
                                  has_text="Traceback")
            assert errors.count() == 0, errors.first.inner_text()[:2000]
        return pages[number]

    yield run
    for page in pages.values():
        page.close()
    lab.shutdown_kernels()


def output_width(page) -> float:
    return page.locator(".jp-OutputArea-output").first.evaluate("el => el.getBoundingClientRect().width")


@pytest.mark.parametrize("number", list(STATIC))
def test_static_drawings_fit_the_output_area_with_readable_text(tutorial, number):
    page = tutorial(number)
    assert output_width(page) <= 1000  # the width (953 px), not a roomier one
    drawings = page.locator(".fw-jobgraph")
    assert drawings.count() == STATIC[number]
    for k in range(drawings.count()):
        drawing = drawings.nth(k)
        found = geometry(drawing)
        assert found["problems"] == [], f"drawing {k}: {found['problems']}"
        assert found["nodes"] >= 3 and found["minFont"] >= READABLE_PX
        legend = drawing.locator("details.fw-legend")
        assert legend.get_attribute("open") is None and "blocking" in legend.locator("summary").inner_text()
    last = drawings.nth(drawings.count() - 1)  # 02: the exercise's six operators; 03: "keyed streaming"
    last.scroll_into_view_if_needed()
    shot(page, f"graphs-{number}-static")


def test_the_graph_widget_shows_the_whole_graph_and_zooms(tutorial):
    page = tutorial("03")
    view = page.locator(".fw-graph-view").first
    canvas = view.locator(".fw-graph")
    view.locator("text.fw-badge").first.wait_for(state="attached", timeout=30_000)  # the what-if of the cell
    found = geometry(view)
    assert found["problems"] == [], found["problems"]
    assert found["nodes"] == 4 and found["minFont"] >= READABLE_PX
    shot_of = lambda name: (view.scroll_into_view_if_needed(), shot(page, name))  # noqa: E731
    shot_of("graphs-03-widget")
    # the what-if row follows view.what_if("aggregate", 0), run in the cell, and then a click
    assert view.locator("select").first.input_value() == "aggregate"
    view.locator("g.fw-op[data-operator='sink']").click()
    view.locator(".fw-details td[data-key='operator']", has_text="sink").wait_for(timeout=30_000)
    assert view.locator("select").first.input_value() == "sink"
    # the failover / restart-all toggle stays on one row
    region, everything = (view.get_by_role("button", name=n) for n in ("region failover", "restart all"))
    assert abs(region.bounding_box()["y"] - everything.bounding_box()["y"]) < 2
    # zoom: the buttons, Ctrl + wheel over the drawing, fit, and back to the default view
    start = float(canvas.get_attribute("data-scale"))
    view.locator("button.fw-zoom-in").click()
    assert float(canvas.get_attribute("data-scale")) == pytest.approx(start * 1.25)
    view.locator("button.fw-zoom-out").click()
    view.locator("button.fw-zoom-out").click()
    assert float(canvas.get_attribute("data-scale")) == pytest.approx(start / 1.25)
    box = view.locator(".fw-graph-svg").bounding_box()
    page.mouse.move(box["x"] + box["width"] / 3, box["y"] + box["height"] / 3)
    page.keyboard.down("Control")
    page.mouse.wheel(0, -200)
    page.keyboard.up("Control")
    page.wait_for_function("([el, s]) => parseFloat(el.dataset.scale) > s",
                           arg=[canvas.element_handle(), start / 1.25 + 0.01], timeout=10_000)
    view.locator("button.fw-zoom-fit").click()
    assert geometry(view, min_px=1)["problems"] == []  # the whole graph in view, whatever the size
    view.locator("button.fw-zoom-reset").click()
    assert float(canvas.get_attribute("data-scale")) == pytest.approx(start)


def tutorial_4_job(root) -> str:
    """The event log of tutorial 4's job after its resume: orders -> reduce(bigger) ->
    map_partition(summary), keyed, three subtasks each, every one finished."""
    from tests.widgets.graphs import commit_file, full_run, write_log

    g = JobGraph(mode="batch")
    g.add_operator("orders", 3, kind="source")
    g.add_operator("reduce(bigger)", 3, OperatorAttributes(True, True), kind="reduce")
    g.add_operator("map_partition(summary)", 3, OperatorAttributes(True, True), kind="map_partition")
    g.connect("orders", "reduce(bigger)", "all_to_all")
    g.connect("reduce(bigger)", "map_partition(summary)", "all_to_all")
    folder = root / "fw-jobs-04" / "orders"
    log = full_run(g, "orders")
    for event in log:
        if event["type"] == "subtask_finished":
            event["records_out"] = {"v0": 30, "v1": 2, "v2": 1}[event["vertex"]]
            event["files"] = [commit_file(str(folder), event["vertex"], event["subtask"])]
    write_log(str(folder), log)
    return str(folder.parent)


def test_the_recovery_panel_keeps_every_badge_inside_the_drawing(labs, browser):
    """Tutorial 4's panel once drew the badges under reduce and map_partition below the SVG's edge."""
    lab = labs("classic")
    jobs = tutorial_4_job(lab.root)
    code = f"from fw_magics.widgets import RecoveryPanel\nRecoveryPanel({jobs!r})"
    nb = nbformat.v4.new_notebook(cells=[nbformat.v4.new_code_cell(code)],
                                  metadata={"kernelspec": {"name": "python3", "display_name": "Python 3",
                                                           "language": "python"}})
    nbformat.write(nb, lab.root / "panel.ipynb")
    page = browser.new_page(viewport=VIEWPORT)
    try:
        page.goto(lab.url("panel.ipynb"))
        run_all_cells(page, timeout_ms=120_000)
        panel = page.locator(".fw-recovery-panel").first
        panel.locator(".fw-status[data-status='finished']").wait_for(timeout=30_000)
        drawing = panel.locator(".fw-graph-view").first
        drawing.locator("text.fw-badge").nth(2).wait_for(state="attached", timeout=30_000)  # one per operator
        assert drawing.locator("text.fw-badge").nth(1).text_content().startswith("finished 3/3 · 6 records")
        found = geometry(drawing)
        assert found["problems"] == [], found["problems"]
        assert found["nodes"] == 3 and found["badges"] == 3 and found["minFont"] >= READABLE_PX
        drawing.scroll_into_view_if_needed()
        shot(page, "graphs-04-recovery-panel")
    finally:
        page.close()
        lab.shutdown_kernels()


def test_an_untrusted_notebook_shows_title_legend_and_summary_not_stray_text(labs, browser):
    """A notebook opened with its saved outputs (as a cloned tutorial is) is not trusted:
    JupyterLab strips the SVG from HTML but keeps its text. None of it may show; the title,
    the legend and the text summary do."""
    lab = labs("classic")
    g = JobGraph(mode="streaming")
    g.add_operator("orders", 3, kind="source")
    g.add_operator("sort", 3, OperatorAttributes(output_only_after_end_of_stream=True), kind="sort_partition")
    g.add_operator("join", 3, kind="join")
    g.connect("orders", "sort")
    g.connect("sort", "join", "all_to_all")
    saved = nbformat.v4.new_output("execute_result", data=g._repr_mimebundle_(), execution_count=1)
    nb = nbformat.v4.new_notebook(cells=[nbformat.v4.new_code_cell("g", outputs=[saved], execution_count=1)],
                                  metadata={"kernelspec": {"name": "python3", "display_name": "Python 3",
                                                           "language": "python"}})
    nbformat.write(nb, lab.root / "untrusted.ipynb")
    page = browser.new_page(viewport=VIEWPORT)
    try:
        page.goto(lab.url("untrusted.ipynb"))
        drawing = page.locator(".fw-jobgraph").first
        drawing.wait_for(timeout=60_000)
        assert drawing.locator("svg").count() == 0  # sanitized away: the notebook is not trusted
        summary = drawing.locator("pre")
        assert summary.inner_text().startswith("JobGraph (streaming, chaining on): 3 operators")
        assert "sort -> join: blocking (all_to_all)" in summary.inner_text()
        assert drawing.inner_text().startswith("streaming job: 3 operators in 2 chains")
        # the SVG's own words (node ids, labels) take no room: the box holds the summary and the note only
        scroll = drawing.locator(".fw-jobgraph-scroll").bounding_box()
        held = drawing.locator(".fw-jobgraph-scroll > *").evaluate_all(
            "els => els.reduce((h, e) => h + e.getBoundingClientRect().height, 0)")
        assert scroll["height"] <= held + 2
        drawing.scroll_into_view_if_needed()
        shot(page, "graphs-untrusted")
    finally:
        page.close()
        lab.shutdown_kernels()


WIDE = """
from fw_magics.graph import JobGraph
from fw_magics.widgets import GraphView

wide = JobGraph(mode="streaming", chaining=False)  # eight pipelines of six: wide either way round
for k in range(8):
    for step in range(6):
        wide.add_operator(f"pipeline {k} step {step}", 4, kind="map")
        if step:
            wide.connect(f"pipeline {k} step {step - 1}", f"pipeline {k} step {step}", "all_to_all")
display(wide)
GraphView(wide, title="eight pipelines")
"""


def test_a_graph_wider_than_the_cell_scrolls_instead_of_shrinking(labs, browser):
    lab = labs("classic")
    nb = nbformat.v4.new_notebook(cells=[nbformat.v4.new_code_cell(WIDE)],
                                  metadata={"kernelspec": {"name": "python3", "display_name": "Python 3",
                                                           "language": "python"}})
    nbformat.write(nb, lab.root / "wide.ipynb")
    page = browser.new_page(viewport=VIEWPORT)
    try:
        page.goto(lab.url("wide.ipynb"))
        run_all_cells(page, timeout_ms=120_000)
        static, widget = page.locator(".fw-jobgraph").first, page.locator(".fw-graph-view").first
        widget.locator("g.fw-op").nth(47).wait_for(state="attached", timeout=30_000)
        for drawing, port in ((static, ".fw-jobgraph-scroll"), (widget, ".fw-graph-svg")):
            found = geometry(drawing, whole_graph=False)
            assert found["problems"] == [], found["problems"][:5]
            assert found["nodes"] == 48 and found["minFont"] >= READABLE_PX
            box = drawing.locator(port)
            assert box.evaluate("el => el.scrollWidth > el.clientWidth + 20")  # it scrolls sideways
        canvas = widget.locator(".fw-graph")
        assert float(canvas.get_attribute("data-scale")) == pytest.approx(float(canvas.get_attribute("data-readable")))
        widget.scroll_into_view_if_needed()
        shot(page, "graphs-wide-widget")
    finally:
        page.close()
        lab.shutdown_kernels()
