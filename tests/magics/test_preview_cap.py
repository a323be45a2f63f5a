"""A preview is bounded whatever --show asks for (issue 17, item 2): rows and bytes."""

from __future__ import annotations

import re

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import fw_magics as fw
from fw_magics.datastream import preview as display

COLUMNS = ("id", "text")


@pytest.fixture
def options():
    yield fw.options
    fw.options.reset()


def made(counts, show, width=3):
    """A Preview as the preview job returns it: every partition's count and its first rows."""
    fetch = min(show, fw.options.display_max_rows)
    heads = tuple(tuple((i, "~" * width) for i in range(min(count, fetch))) for count in counts)
    return display.Preview(name="s", columns=COLUMNS, types=("bigint", "string"), counts=tuple(counts),
                           heads=heads, show=show)


def shown_rows_html(markup: str) -> int:
    return markup.count("<tr>") - 1 - markup.count("<td colspan=")  # minus the header and the notes


@settings(max_examples=120, deadline=None)
@given(st.lists(st.integers(0, 60), min_size=1, max_size=12), st.integers(0, 80), st.integers(0, 90),
       st.integers(10_000, 40_000), st.integers(1, 700))
def test_rows_and_bytes_stay_within_the_caps_and_the_note_counts_the_rest(counts, show, max_rows, max_bytes, width):
    """Reference: partitions in order, each showing min(count, show) rows while rows and bytes last."""
    fw.options.display_max_rows, fw.options.display_max_bytes = max_rows, max_bytes
    try:
        shown = made(counts, show, width)
        text, markup = display.render_text(shown), display.render_html(shown)
    finally:
        fw.options.reset()
    assert len(markup) <= max_bytes and len(text) <= max_bytes
    for rendered, rows in ((text, text.count("~" * min(width, 59))), (markup, shown_rows_html(markup))):
        assert rows <= max_rows
        wanted = sum(min(c, show) for c in counts)
        note = re.search(r"… ([\d,]+) more rows?(?: \(([\d,]+) partitions? not listed\))?, use \.to_pandas\(\)",
                         rendered)
        if rows == wanted:
            assert note is None or note.group(2)  # only unlisted partitions (of empty ones) to report
        else:
            assert note is not None, rendered[-300:]
            assert int(note.group(1).replace(",", "")) == sum(counts) - rows
        # what is shown is each partition's first rows, in partition order, until the caps
        budget, expected = max_rows, []
        for count in counts:
            take = min(count, show, budget)
            expected.append(take)
            budget -= take
        listed = re.findall(r"partition (\d+)", rendered)
        assert listed == [str(i) for i in range(len(listed))] and listed
        if len(markup) < max_bytes * 0.5 and len(text) < max_bytes * 0.5:  # the byte cap did not bite
            assert rows == sum(expected)


def test_the_options_refuse_what_they_cannot_take(options):
    with pytest.raises(fw.FullWindowError, match="display_max_rows takes a whole number >= 0; got -1"):
        options.display_max_rows = -1
    with pytest.raises(fw.FullWindowError, match="no option 'display_max_row'; did you mean 'display_max_rows'"):
        options.display_max_row = 5
    options.display_max_rows = 7
    assert fw.options.display_max_rows == 7 and "display_max_rows=7" in repr(fw.options)


@pytest.mark.spark
@pytest.mark.core
def test_show_a_million_on_100000_rows_is_a_bounded_output(shell, options):
    shell.user_ns["big_frame"] = shell.user_ns["fw"].get_spark().range(0, 100_000, 1, 4)
    value = shell.run_cell_magic("fullwindow", "sort field=id desc --show 1000000", "big_frame")
    formatted, _ = shell.display_formatter.format(value)  # what the notebook stores
    markup, text = formatted["text/html"], formatted["text/plain"]
    assert len(markup) <= fw.options.display_max_bytes and len(text) <= fw.options.display_max_bytes
    assert shown_rows_html(markup) == 1000 and len(markup) < 200_000  # 1,000 short rows, not 6 MB
    assert "… 99,000 more rows, use .to_pandas()" in markup and "… 99,000 more rows, use .to_pandas()" in text
    # and no more than the cap came to the driver: each partition sent at most 1,000 rows
    shown = display.preview(value, 1_000_000)
    assert shown.counts == (25_000,) * 4 and [len(h) for h in shown.heads] == [1000] * 4
    options.display_max_rows = 10
    assert shown_rows_html(display.render_html(display.preview(value, 1_000_000))) == 10
