"""GraphView built from a JobGraph: selection, attributes, what-if, states, static fallback. No Spark."""

import re

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from fw_magics.errors import FullWindowError
from fw_magics.graph import JobGraph
from fw_magics.widgets import GraphView, model, show_graph
from tests.graph import reference_graph as ref
from tests.widgets.graphs import four_operators, full_run

WIDGET_MIME = "application/vnd.jupyter.widget-view+json"


def cell(details: str, key: str) -> str:
    """The value of one row of the attributes table."""
    found = re.search(rf"data-key='{re.escape(key)}'>([^<]*)</td>", details)
    assert found, f"no row {key!r} in {details}"
    return found.group(1)


@pytest.fixture(scope="module")
def view():
    return GraphView(four_operators(), title="four", follow=False)


def test_select_shows_the_operators_attributes(view):
    view.select("sort")
    assert view.canvas.selected == "sort" == view.selected
    details = view.details.value
    assert cell(details, "operator") == "sort" and cell(details, "kind") == "sort_partition"
    assert cell(details, "output only after end of input") == "yes"
    assert cell(details, "internal sorter") == "yes"
    assert cell(details, "chain") == "source + sort"
    assert cell(details, "parallelism") == "3"
    assert cell(details, "outputs") == "reduce (blocking, all_to_all)"
    view.select("map")
    details = view.details.value
    assert cell(details, "operator") == "map"
    assert cell(details, "output only after end of input") == "no" and cell(details, "outputs") == "none (a sink)"
    assert "Spark plan fragment" in details and "no DataStream here" in details


def test_a_click_in_the_browser_selects_too(view):
    view.canvas.selected = "reduce"  # what the front end sets on a click
    assert cell(view.details.value, "operator") == "reduce"
    assert cell(view.details.value, "inputs") == "sort (blocking, all_to_all)"


def test_selecting_an_unknown_operator_raises_and_keeps_the_selection(view):
    view.select("source")
    with pytest.raises(FullWindowError, match="unknown operator 'nope'"):
        view.select("nope")
    assert view.selected == "source"


def test_what_if_highlights_exactly_the_restarted_operators(view):
    w = view.what_if("source", 1, mode="region")
    assert view.highlighted == {"source": "restarts 1/3", "sort": "restarts 1/3", "reduce": "restarts 3/3",
                                "map": "restarts 3/3"}
    assert "fw-whatif-count'>8</b> subtasks in 4 operators" in view.whatif_text.value
    assert "restarts 8 of 12 subtasks" in view.whatif_text.value and w is view.last_what_if
    view.what_if("reduce", 2)
    assert view.highlighted == {"reduce": "restarts 1/3", "map": "restarts 3/3"}
    assert "fw-whatif-count'>4</b> subtasks in 2 operators" in view.whatif_text.value
    view.mode.value = "all"  # the toggle: every operator, every subtask
    assert view.highlighted == {op: "restarts 3/3" for op in ("source", "sort", "reduce", "map")}
    assert "Highlighted (restart-all): <b class='fw-whatif-count'>12</b>" in view.whatif_text.value
    view.mode.value = "region"
    assert set(view.highlighted) == {"reduce", "map"}
    view.clear()
    assert view.highlighted == {} and view.whatif_text.value == "" and view.last_what_if is None
    view.mode.value = "all"  # nothing to show after clear
    assert view.highlighted == {}
    view.mode.value = "region"


def test_the_controls_drive_what_if(view):
    view.fail_operator.value = "map"
    assert view.fail_subtask.max == 2
    view.fail_subtask.value = 2
    view.fail_button.click()
    assert view.highlighted == {"map": "restarts 1/3"}
    view.clear_button.click()
    assert view.highlighted == {}
    with pytest.raises(ValueError, match="'map'"):
        view.what_if("map", 3)


@settings(max_examples=12, deadline=None)
@given(ref.job_graphs(max_operators=4, max_parallelism=3), st.data())
def test_highlight_matches_the_restart_set_on_random_graphs(g, data):
    view = GraphView(g, follow=False)
    op = data.draw(st.sampled_from([o.name for o in g.operators]))
    subtask = data.draw(st.integers(0, g.operator(op).parallelism - 1))
    for mode in ("region", "all"):
        w = view.what_if(op, subtask, mode=mode)
        restarted = w.restarted(mode)
        assert set(view.highlighted) == {name for name, _ in restarted}
        for name, badge in view.highlighted.items():
            n = sum(1 for o, _ in restarted if o == name)
            assert badge == f"restarts {n}/{g.operator(name).parallelism}"
        assert f"fw-whatif-count'>{len(restarted):,}</b>" in view.whatif_text.value
    view.close()


def test_canvas_operator_ids_are_svg_node_titles(view):
    svg = view.canvas.svg
    assert set(view.canvas.operators.values()) == {o.name for o in view.graph.operators}
    titles = re.findall(r'<g id="[^"]*" class="node">\s*<title>([^<]*)</title>', svg)
    for node_id in view.canvas.operators:
        assert node_id in titles
    assert sorted(titles) == sorted(view.canvas.operators)  # the legend is not a node of the drawing...


def test_the_legend_folds_under_the_header_with_every_style_and_region_colour(view):
    legend = view.legend.value  # ...but one line that unfolds, above the drawing
    assert legend.startswith("<details") and "<summary" in legend
    assert view.children.index(view.legend) < view.children.index(view.canvas)
    for text in ("blocking: the consumer starts after the producer finished",
                 "pipelined: records stream while both run", "chained: fused into one task",
                 "regions 1-3", "regions 4-6", "regions 7-9", "<b>running</b> blue"):
        assert text in legend, text


def test_show_events_colours_operators_by_their_vertex(view):
    log = full_run(view.graph)
    view.show_events(log[:8])  # v0 done, v1 has one subtask finished
    assert view.states == {"source": "finished", "sort": "finished", "reduce": "running", "map": "pending"}
    assert view.canvas.states["reduce"]["text"] == "running 1/3 · 10 records"
    view.show_events(log)
    assert set(view.states.values()) == {"finished"}


def test_the_mimebundle_has_the_widget_an_svg_and_a_summary(view):
    bundle = view._repr_mimebundle_()
    assert bundle["image/svg+xml"].lstrip().startswith(("<?xml", "<svg"))
    assert bundle["text/plain"].startswith("JobGraph (batch, chaining on): 4 operators in 3 chains, 12 subtasks")
    assert bundle[WIDGET_MIME]["model_id"] == view.model_id
    assert "<b>four</b>" in view.header.value


def test_show_graph_accepts_a_job_graph_and_refuses_anything_else():
    g = JobGraph(mode="streaming")
    g.add_operator("only", 2)
    shown = show_graph(g)
    assert isinstance(shown, GraphView) and shown.graph is g
    with pytest.raises(FullWindowError, match=r"^cannot draw a int; accepted: a DataStream, a JobResult, a streaming job "
                                              r"\(start\(\)\) or a JobGraph$"):
        show_graph(3)
    assert model.what_if(g, "only", 1).region == {("only", 1)}


def test_the_what_if_row_follows_a_click_and_a_what_if_call():
    view = GraphView(four_operators(), follow=False)
    view.canvas.selected = "reduce"  # a click in the browser
    assert view.fail_operator.value == "reduce" and view.fail_subtask.max == 2
    view.what_if("map", 2)  # from code: the row shows what is highlighted
    assert (view.fail_operator.value, view.fail_subtask.value) == ("map", 2)
    view.fail_button.click()  # so the button repeats it, rather than what the row said before
    assert view.highlighted == {"map": "restarts 1/3"}
    view.select("source")
    assert view.fail_operator.value == "source" and view.fail_subtask.value == 2  # subtask kept while it exists
    view.close()


def test_counts_are_singular_for_one():
    g = JobGraph(mode="streaming")
    g.add_operator("only", 1)
    view = GraphView(g, follow=False)
    view.what_if("only", 0)
    assert "<b class='fw-whatif-count'>1</b> subtask in 1 operator." in view.whatif_text.value
    assert "restarts 1 of 1 subtasks (1 operator)" in view.whatif_text.value
    view.close()


def test_every_box_of_the_canvas_keeps_lines_free_for_its_badge(view):
    from fw_magics.graph import render

    assert view.canvas.badge_lines == render.BADGE_LINES
    groups = re.findall(r'<g id="[^"]*" class="node">(.*?)</g>\n</g>', view.canvas.svg, re.S)
    assert len(groups) == 4
    for group in groups:
        lines = re.findall(r"<text [^>]*>([^<]*)</text>", group)
        assert lines[-render.BADGE_LINES:] == [" "] * render.BADGE_LINES and lines[0].strip()


def test_where_widgets_do_not_render_the_static_drawing_shows(view):
    bundle = view._repr_mimebundle_()
    assert "<details" in bundle["text/html"] and "fw-jobgraph-svg" in bundle["text/html"]
    assert "legend" in bundle["image/svg+xml"] and "batch job: 4 operators" in bundle["image/svg+xml"]
    assert bundle["image/svg+xml"] != view.canvas.svg  # the canvas has no caption and room for badges
