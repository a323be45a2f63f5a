"""Drawing the job graph: DOT text, SVG through Graphviz, the notebook mime bundle."""

import re
import shutil
import xml.etree.ElementTree as ElementTree

import pytest

from fw_magics.errors import FullWindowError, GraphvizNotFound
from fw_magics.graph import JobGraph, OperatorAttributes, render

needs_dot = pytest.mark.skipif(shutil.which("dot") is None, reason="Graphviz's dot is not installed")


def sort_job():
    """source -> sort (chained) => all-to-all blocking => aggregate, in batch mode."""
    g = JobGraph(mode="batch")
    g.add_operator("source", 2, kind="source")
    g.add_operator("sort", 2, OperatorAttributes(True, True), kind="sort_partition")
    g.add_operator("aggregate", 2, kind="reduce")
    g.connect("source", "sort")
    g.connect("sort", "aggregate", "all_to_all")
    return g


def node_lines(dot):
    return {m.group(1): line for line in dot.splitlines() if (m := re.match(r'\s*(op\d+) \[label="(.*?)"', line))}


def test_dot_styles_and_labels_every_edge_by_its_result_type():
    g = sort_job()
    g.add_operator("sink", 2, chainable=False)
    g.connect("aggregate", "sink", result="pipelined")
    dot = g.to_dot()
    assert 'op1 -> op2 [style=dashed, label="blocking\\nall-to-all"]' in dot
    assert 'op0 -> op1 [style=bold, label="chained\\npointwise"]' in dot
    assert 'op2 -> op3 [style=solid, label="pipelined\\npointwise"]' in dot


def test_a_direction_other_than_lr_or_tb_is_one_fullwindow_error():
    assert "rankdir=TB" in render.to_dot(sort_job(), direction="TB")
    with pytest.raises(FullWindowError, match=r"^direction 'XY'; accepted: 'LR' or 'TB'$") as caught:
        render.to_dot(sort_job(), direction="XY")
    assert isinstance(caught.value, ValueError)  # FullWindowError stays a ValueError


def test_chained_operators_are_boxed_together_and_single_ones_are_not():
    dot = sort_job().to_dot()
    assert dot.count("subgraph cluster_chain") == 1
    cluster = dot[dot.index("subgraph cluster_chain"):]
    cluster = cluster[:cluster.index("  }")]
    assert 'label="chain: source + sort"' in cluster and "op0 [" in cluster and "op1 [" in cluster
    assert "op2 [" not in cluster


def test_every_node_names_its_regions_and_attributes_and_colour_follows_the_regions():
    dot = sort_job().to_dot()
    lines = node_lines(dot)
    assert "regions 1-2" in lines["op0"] and "regions 1-2" in lines["op1"] and "regions 3-4" in lines["op2"]
    assert "sort_partition, parallelism 2" in lines["op1"]
    assert "output only after end of input" in lines["op1"] and "internal sorter" in lines["op1"]
    assert "output_only_after_end_of_stream=True, internal_sorter_supported=True" in lines["op1"]
    fill = {k: re.search(r'fillcolor="(#[0-9a-f]+)"', line).group(1) for k, line in lines.items()}
    assert fill["op0"] == fill["op1"] != fill["op2"]
    legend = dot[dot.index("label=<"):]  # the caption under the drawing: title and legend
    assert "blocking: the consumer starts after the producer finished" in legend
    assert f'BGCOLOR="{fill["op0"]}"' in legend and "fill: regions 1-2" in legend
    assert f'BGCOLOR="{fill["op2"]}"' in legend and "fill: regions 3-4" in legend


@pytest.mark.parametrize("numbers, text", [
    ([3], "region 3"),
    ([1, 2, 3, 4], "regions 1-4"),
    ([1, 2, 5, 7, 8], "regions 1-2,5,7-8"),
    (list(range(1, 20, 2)), "regions 1,3,5,7,... (10 in all)"),
])
def test_region_numbers_are_spelled_out_briefly(numbers, text):
    assert render.region_span(numbers) == text


def test_a_large_graph_stays_at_operator_level():
    g = JobGraph(mode="streaming")
    for k in range(100):
        g.add_operator(f"op{k}", 1000, chainable=False)
        if k:
            g.connect(f"op{k - 1}", f"op{k}", "pointwise", "blocking" if k % 10 == 0 else None)
    dot = g.to_dot()
    assert len(node_lines(dot)) == 100 and len(dot) < 60_000
    assert "regions 1-1,000" not in dot and "regions 1-1000" in dot


def test_names_that_need_escaping_stay_inside_their_strings():
    g = JobGraph(mode="batch")
    g.add_operator('say "hi"\\', 1)
    g.add_operator("two\nlines", 1)
    g.connect('say "hi"\\', "two\nlines")
    dot = g.to_dot()
    assert 'label="say \\"hi\\"\\\\' in dot and "two\\nlines" in dot
    if shutil.which("dot"):
        assert "say &quot;hi&quot;\\" in g.to_svg()


@needs_dot
def test_svg_is_well_formed_and_carries_the_labels():
    svg = sort_job().to_svg()
    root = ElementTree.fromstring(svg)
    assert root.tag.endswith("svg")
    texts = {t.text for t in root.iter() if t.tag.endswith("text")}
    assert {"blocking", "chained", "legend", "regions 3-4"} <= texts


@needs_dot
def test_the_notebook_bundle_has_svg_dot_and_text():
    g = sort_job()
    bundle = g._repr_mimebundle_()
    assert set(bundle) == {"text/html", "image/svg+xml", "text/plain", "text/vnd.graphviz"}
    assert bundle["text/vnd.graphviz"] == g.to_dot()
    assert "<svg" in bundle["text/html"] and bundle["image/svg+xml"] == g.to_svg()
    assert bundle["text/plain"].splitlines()[0] == (
        "JobGraph (batch, chaining on): 3 operators in 2 chains, 6 subtasks in 4 pipelined regions")
    assert set(g._repr_mimebundle_(include=["text/plain"])) == {"text/plain"}
    assert set(g._repr_mimebundle_(exclude=["image/svg+xml"])) == {"text/html", "text/plain", "text/vnd.graphviz"}


def test_without_graphviz_the_bundle_falls_back_to_text_and_dot(monkeypatch):
    monkeypatch.setattr(render.shutil, "which", lambda name: None)
    g = sort_job()
    assert set(g._repr_mimebundle_()) == {"text/plain", "text/vnd.graphviz"}
    with pytest.raises(GraphvizNotFound, match="Graphviz's 'dot' is not installed"):
        g.to_svg()
