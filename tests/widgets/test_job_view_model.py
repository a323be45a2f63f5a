"""The live job view's pure part: the rows it lists (against a plain reference), its tables, header and charts."""

from __future__ import annotations

import re
import xml.etree.ElementTree as ET

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from fw_magics.errors import FullWindowError
from fw_magics.widgets.job_view_model import (
    CHARTED_KEYS,
    DURATION_UNITS,
    Mode,
    Results,
    chart_svg,
    duration_text,
    header_html,
    result_chart_svg,
    table_html,
)

row = st.fixed_dictionaries({"k": st.integers(0, 6), "total": st.one_of(st.none(), st.integers(-50, 50)),
                             "kind": st.sampled_from(["element", "element", "timer", "removed"])})
batches = st.lists(st.lists(row, max_size=8), max_size=8)


def reference(parts, kept_keys, kept_rows):
    """Each key's last row unless it withdrew it, at most ``kept_keys`` keys (the one updated least recently
    leaves when one more comes); the ``kept_rows`` newest rows, newest first."""
    latest, order, every = {}, [], []
    for batch, rows in enumerate(parts):
        for r in rows:
            every.append({**r, "batch": batch})
            if r["kind"] == "removed":
                latest.pop(r["k"], None)
                order = [k for k in order if k != r["k"]]
                continue
            latest[r["k"]] = {**r, "batch": batch}
            order = [k for k in order if k != r["k"]] + [r["k"]]
            if len(order) > kept_keys:  # the key updated least recently leaves the view
                latest.pop(order.pop(0))
    return latest, every[-kept_rows:][::-1]


@settings(max_examples=150, deadline=None)
@given(batches, st.integers(1, 8), st.integers(1, 10))
def test_the_rows_a_view_keeps_are_the_reference_models(parts, kept_keys, kept_rows):
    results = Results(["k"], kept_keys=kept_keys, kept_rows=kept_rows)
    for batch, rows in enumerate(parts):
        results.take(batch, rows)
        results.take(batch, rows)  # a batch read twice counts once
    latest, newest = reference(parts, kept_keys, kept_rows)
    assert {key[0]: r for key, r in results.latest.items()} == latest
    assert results.recent(kept_rows) == newest
    assert len(results.latest) <= kept_keys
    top = results.top("total", n=100)
    values = [r["total"] for r in top if r["total"] is not None]
    assert values == sorted(values, reverse=True) and len(top) == len(latest)
    assert [r["total"] for r in top[len(values):]] == [None] * (len(top) - len(values))  # nulls last
    assert [r["k"] for r in results.top(None, n=3)] == sorted(latest)[:3]


def test_a_key_withdrawn_leaves_the_list_and_a_later_row_brings_it_back():
    results = Results(["k"])
    results.take(0, [{"k": 1, "v": 5, "kind": "element"}, {"k": 2, "v": 9, "kind": "element"}])
    results.take(1, [{"k": 1, "v": None, "kind": "removed"}])
    assert [r["k"] for r in results.top("v")] == [2]
    results.take(2, [{"k": 1, "v": 30, "kind": "timer"}])
    assert [(r["k"], r["v"], r["batch"]) for r in results.top("v")] == [(1, 30, 2), (2, 9, 0)]
    assert results.columns == ["k", "v"] and results.last_batch == 2


def test_modes_are_parsed_once_with_one_line_refusals():
    assert Mode.parse(None or "update", keyed=True) is Mode.UPDATE
    assert Mode.parse("append", keyed=False) is Mode.APPEND
    with pytest.raises(FullWindowError, match=r"view mode 'upsert'; accepted: 'update', 'append'"):
        Mode.parse("upsert", keyed=True)
    with pytest.raises(FullWindowError, match=r"needs the job's key columns.*accepted: 'append'$"):
        Mode.parse("update", keyed=False)


def test_a_table_escapes_every_value_and_says_when_it_is_empty():
    text = table_html(["k", "name"], [{"k": 1, "name": "<script>x</script>"}, {"k": 2, "name": None}], "latest")
    assert "<script>" not in text and "&lt;script&gt;" in text and "null" in text
    assert text.count("<tr>") == 3 and "<caption>latest</caption>" in text
    assert "no rows yet" in table_html(["k"], [])


def test_the_header_says_phase_w_lag_and_a_failure_in_one_line():
    last = {"files_behind": 3, "rows_behind": None, "watermark_gap_ms": 2500}
    text = header_html({"job": "totals", "phase": "stream", "watermark": 0, "batches": 4, "last": last,
                        "failure": "ZeroDivisionError: division by zero", "read_only": True})
    assert "phase <b class='fw-phase'>stream</b>" in text and "1970-01-01 00:00:00.000 UTC" in text
    assert "3 files behind" in text and "watermark gap 2.5 s" in text and "4 micro-batches" in text
    assert "1 micro-batch ·" in header_html({"job": "j", "phase": "stream", "batches": 1})
    assert "ZeroDivisionError: division by zero" in text and "read-only" in text
    assert "lag: none yet" in header_html({"job": "j", "phase": "backlog", "batches": 0})


def _points(svg: str) -> list[list[tuple[float, float]]]:
    return [[tuple(map(float, p.split(","))) for p in line.split()] for line in re.findall(r"points='([^']*)'", svg)]


@settings(max_examples=60, deadline=None)
@given(st.lists(st.fixed_dictionaries({
    "input_rows_per_second": st.one_of(st.none(), st.floats(0, 1e6)),
    "processed_rows_per_second": st.floats(0, 1e6), "duration_ms": st.integers(0, 10_000),
    "watermark_gap_ms": st.one_of(st.none(), st.integers(0, 10**9)), "late": st.integers(0, 50),
    "state_rows_per_partition": st.lists(st.integers(0, 1000), max_size=6)}), min_size=1, max_size=40))
def test_the_charts_are_well_formed_svg_and_draw_the_last_batches(metrics):
    metrics = [{"batch": i, **m} for i, m in enumerate(metrics)]
    html = chart_svg([{"batch": -1, "duration_ms": 10**9}, *metrics], last=30)
    charts = re.findall(r"<svg.*?</svg>", html)
    assert len(charts) == 5
    for chart in charts:
        ET.fromstring(chart)  # well-formed
    shown = metrics[-30:]
    rates = _points(charts[0])
    assert len(rates[-1]) == len(shown)  # processed: one point per micro-batch charted
    assert all(0 <= x <= 230 and 0 <= y <= 90 for line in rates for x, y in line)
    top = max(m["duration_ms"] for m in shown)  # the backlog's row is not charted
    assert f"max {top if top > 0 else 1:,.4g}" in charts[1]
    assert f"max {max(max(m['late'] for m in shown), 1):,.4g}" in charts[3]  # late rows, per micro-batch
    bars = re.findall(r"<title>partition (\d+): (\d+)</title>", charts[4])
    last = next((m["state_rows_per_partition"] for m in reversed(shown) if m["state_rows_per_partition"]), [])
    assert [int(count) for _, count in bars] == last


@settings(max_examples=60, deadline=None)
@given(batches, st.integers(1, 30))
def test_a_result_columns_chart_draws_the_top_keys_the_table_lists(parts, n):
    results = Results(("k",))
    for batch, rows in enumerate(parts):
        results.take(batch, rows)
    rows = results.top("total", n)
    svg = result_chart_svg(rows, "total", ("k",))
    want = [(r["k"], r["total"]) for r in rows[:CHARTED_KEYS] if r["total"] is not None]
    if not want:
        assert svg == ""
        return
    ET.fromstring(svg)
    bars = [(int(k), int(v.replace(",", ""))) for k, v in re.findall(r"<title>(-?\d+): (-?[\d,]+)</title>", svg)]
    assert bars == want  # one bar per listed key, in the table's order, with its value
    heights = [float(h) for h in re.findall(r"height='([\d.]+)' fill", svg)]
    assert all(0 <= h <= 90 for h in heights)
    assert result_chart_svg(rows, None, ("k",)) == ""  # by key: no column to chart


def test_a_result_chart_takes_numpy_numbers_and_leaves_out_nan_and_text():
    import numpy as np

    rows = [{"k": 1, "v": np.int64(5)}, {"k": 2, "v": float("nan")}, {"k": 3, "v": "x"}, {"k": 4, "v": np.float64(2.5)}]
    titles = re.findall(r"<title>(.*?)</title>", result_chart_svg(rows, "v", ("k",)))
    assert titles == ["1: 5", "4: 2.5"]


def test_a_duration_is_said_in_the_largest_unit_it_holds_twice():
    """The header's watermark gap over 2024's data read "91,896,399.0 s" in tutorial 06 (issue 51)."""
    assert [duration_text(ms) for ms in (2500, 119_900, 150_000, 5_400_000, 129_600_000, 91_896_399_000)] == [
        "2.5 s", "119.9 s", "2.5 min", "90.0 min", "36.0 h", "1,064 days"]
    last = {"watermark_gap_ms": 91_896_399_000}
    assert "watermark gap 1,064 days" in header_html({"job": "j", "phase": "stream", "batches": 1, "last": last})


@given(st.floats(min_value=0, max_value=1e13))
def test_a_duration_text_reads_back_as_the_duration(ms):
    """A reference model: the number times its unit is the duration, up to the rounding shown, and is at least
    2 of that unit unless it is seconds."""
    number, unit = duration_text(ms).rsplit(" ", 1)
    size = dict((u, s) for s, u in DURATION_UNITS)[unit]
    value = float(number.replace(",", ""))
    assert abs(value * size - ms) <= (0.5 if unit == "days" else 0.05) * size + 1e-6 * ms
    assert unit == "s" or value >= 2
    bigger = [u for s, u in DURATION_UNITS if s > size]
    assert all(ms < 2 * dict((u, s) for s, u in DURATION_UNITS)[u] for u in bigger)
