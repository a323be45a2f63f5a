"""operator_units and units_table read a savepoint's operator state; event_table shows a job's log."""

import types

import pytest

from fw_magics.recovery import events as E
from fw_magics.teaching import event_table, operator_units, units_table

#: a loaded savepoint's operator state (``fw.load_savepoint(path).operator_state``): per operator, per subtask
SAVED = types.SimpleNamespace(operator_state={
    "files(orders)": [{"splits": {"mode": "split", "units": [{"file": "orders-001.parquet", "read": True}]}},
                      {"splits": {"mode": "split", "units": [{"file": "orders-005.parquet", "read": True}]}}],
    "process(BufferingSink)": [{"buffered": {"mode": "split", "units": [4]}},
                               {"buffered": {"mode": "split", "units": [5, 6]}}],
    "process(Receipts)": [{}, {"pending": {"mode": "split", "units": ["bob 4.0"]}}],
})


def test_operator_units_per_subtask_and_per_state():
    assert operator_units(SAVED, "process(BufferingSink)") == [{"buffered": [4]}, {"buffered": [5, 6]}]
    assert operator_units(SAVED, "process(BufferingSink)", "buffered") == [[4], [5, 6]]
    assert operator_units(SAVED, "files(orders)", "splits") == [["orders-001.parquet"], ["orders-005.parquet"]]
    assert operator_units(SAVED, "process(Receipts)", "pending") == [[], ["bob 4.0"]]  # a subtask without it
    with pytest.raises(KeyError, match=r"no operator state of 'process\(Other\)'; it has: files\(orders\), "):
        operator_units(SAVED, "process(Other)")


def test_units_table_has_a_row_per_operator_and_subtask():
    table = units_table(SAVED)
    assert list(table.index) == [("files(orders)", 0), ("files(orders)", 1), ("process(BufferingSink)", 0),
                                 ("process(BufferingSink)", 1), ("process(Receipts)", 0), ("process(Receipts)", 1)]
    assert table.loc[("process(BufferingSink)", 1), "buffered"] == [5, 6]
    assert table.loc[("files(orders)", 0), "buffered"] == ""


def test_event_table_shows_watermarks_as_times_counts_as_integers_and_blanks():
    events = [E.phase_changed("backlog"), E.switch(1704095989000, state_writes=40),
              E.micro_batch(0, 1000, 40, 1704095989000)]
    table = event_table(events)
    assert list(table.columns) == ["type", "phase", "watermark", "state_writes", "batch", "input_rows",
                                   "state_rows_updated"]
    assert table["type"].tolist() == ["phase_changed", "switch", "micro_batch"]
    assert str(table["watermark"][1]) == "2024-01-01 07:59:49+00:00" and table["watermark"][0] == ""
    assert table["input_rows"].tolist() == ["", "", 1000] and table["state_writes"][1] == 40
    assert list(event_table(events, "batch").columns) == ["type", "batch"]
