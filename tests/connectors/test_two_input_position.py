"""Two inputs' position for a savepoint written from tables (``fw.write_savepoint`` without ``from_savepoint``,
issue 50): ``Composite.position_at`` is each input's own, shaped as a two-input savepoint's (``{"inputs": [...]}``).
No Spark: real folders of files, every check a savepoint's load makes of a position (its codec, its document's
fields, its splits at 1 to 3 subtasks) and each input's restore at 1 to 3 subtasks, against a model of the files
present (what "beginning" and "now" say: none read, all read). The restores of such savepoints by a job are in
tests/streaming/test_two_input_bootstrap.py.
"""

from __future__ import annotations

import os
import tempfile
import uuid

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from fw_magics.connectors import registry
from fw_magics.connectors.files.manifest import Manifest
from fw_magics.connectors.two_inputs.source import ConnectedSource
from fw_magics.errors import FullWindowError
from tests.connectors.test_registry import FILES, SCHEMA, TABLE
from tests.connectors.test_table_position import UNREACHABLE

CHANGES = {"source": "table_changes", "streaming": True, "url": UNREACHABLE, "table": "rates", "keys": ["k"],
           "event_time": "ts", "delay_ms": 0, "on_late": "drop", "label": "rates", "partitions": 4, "backlog": True}


def _both(first: dict, second: dict, broadcast: bool = False) -> ConnectedSource:
    detail = ConnectedSource.detail_of([(first, SCHEMA, ["k"]), (second, SCHEMA, ["k"])], "__fw_time",
                                       ["a", "b"], ["a", "b"], SCHEMA, broadcast)
    return registry.source_for(detail, SCHEMA)


def _folder(root: str, name: str, files: list[int]) -> dict:
    """A folder ``name`` of ``root`` holding one file per entry of ``files`` (its size in bytes), and its detail."""
    path = os.path.join(root, name)
    os.makedirs(path)
    for i, size in enumerate(files):
        with open(os.path.join(path, f"part-{i:03d}.parquet"), "wb") as f:
            f.write(b"x" * size)
        os.utime(os.path.join(path, f"part-{i:03d}.parquet"), ns=(10**18 + i, 10**18 + i))  # listed in this order
    return dict(FILES, path=path, label=name)


def _restorable(source, position: dict) -> None:
    """Every check a savepoint's load makes of a position written for ``source`` passes (nothing raised)."""
    described = source.describe()
    assert registry.check_saved_position(position, described, "written", AssertionError) == position
    registry.check_position_fields(source.position_fields(position), position, "written", AssertionError)
    names = ["files(a)", "files(b)"]
    for parallelism in (1, 2, 3):
        held = {name: one.position_snapshots(own, parallelism)
                for name, (one, _, own) in zip(names, source.inputs_at("", position))}
        registry.check_saved_splits(held, names, described, position, "written", AssertionError)
    assert source.same_place(position) is None


@settings(max_examples=25, deadline=None)
@given(first=st.lists(st.integers(0, 40), max_size=4), second=st.lists(st.integers(0, 40), max_size=4),
       now=st.booleans(), written_at=st.integers(1, 3), restored_at=st.integers(1, 3),
       broadcast=st.booleans())
def test_each_input_is_at_its_own_beginning_or_now_and_restores_at_any_parallelism_as_the_model(
        first, second, now, written_at, restored_at, broadcast):
    """The model: each folder's files in the order they are listed; "beginning" reads every one of them, "now"
    none of them (all read). Restored at another parallelism, each input's manifest lists those files, its
    backlog (what is never read again) the first ``len(files)`` or none."""
    with tempfile.TemporaryDirectory() as root:
        both = _both(_folder(root, "a", first), _folder(root, "b", second), broadcast)
        position = both.position_at(now)
        assert [p["backlog"] for p in position["inputs"]] == [len(first) if now else 0, len(second) if now else 0]
        assert [[f["name"] for f in p["files"]] for p in position["inputs"]] == \
            [[f"part-{i:03d}.parquet" for i in range(len(files))] for files in (first, second)]
        assert both.position_fields(position) == {}  # each input's position says what was read
        _restorable(both, position)
        words = registry.position_in_words(both.describe(), position)
        assert words == "; ".join(f"{len(f) if now else 0} of {len(f)} files read" for f in (first, second))
        job = os.path.join(root, "job")
        for index, (one, sub, own) in enumerate(both.inputs_at(job, position)):
            detail = one.restore_position(sub, one.position_snapshots(own, written_at), own, restored_at)
            laid = Manifest(sub).read()
            files = (first, second)[index]
            assert detail == {"read_files": len(files) if now else 0} == {"read_files": laid["backlog"]}
            assert [f["name"] for f in laid["files"]] == [f["name"] for f in own["files"]]
            assert {f["subtask"] for f in laid["files"]} <= set(range(restored_at))


def test_a_folder_and_a_table_are_each_at_their_beginning_without_asking_the_server():
    """A table's beginning asks nothing: the folder's files and the table's rows are all read by the restore."""
    with tempfile.TemporaryDirectory() as root:
        both = _both(_folder(root, "a", [3, 4]), dict(TABLE, url=UNREACHABLE))
        position = both.position_at(now=False)
        assert position["inputs"][1] == {"format": 1, "table": "rates", "through": None, "rows": None}
        assert registry.check_saved_position(position, both.describe(), "written", AssertionError) == position
        held = {name: one.position_snapshots(own, 2) for name, (one, _, own) in
                zip(["files(a)", "table(rates)"], both.inputs_at("", position))}
        registry.check_saved_splits(held, ["files(a)", "table(rates)"], both.describe(), position, "written",
                                    AssertionError)
        with pytest.raises(FullWindowError, match=f"^the job cannot read 'rates' at {UNREACHABLE}: "):
            both.position_at(now=True)  # "now" asks the server for the table's greatest order_by


def test_a_table_s_changes_as_an_input_start_unread_and_now_over_a_server_not_reached_is_their_one_line():
    """The changes' beginning is no slot (their restore makes one); "now" asks the server, one line if it cannot."""
    with tempfile.TemporaryDirectory() as root:
        both = _both(_folder(root, "a", [3]), CHANGES)
        position = both.position_at(now=False)
        assert position["inputs"][1] == {"format": 1, "table": "rates", "slot": None, "lsn": None, "rows": None}
        assert registry.check_saved_position(position, both.describe(), "written", AssertionError) == position
        assert registry.position_in_words(both.describe(), position) == \
            "0 of 1 files read; changes of table 'rates' not read yet (a restore makes its slot)"
        with pytest.raises(FullWindowError) as refused:
            both.position_at(now=True)
        assert str(refused.value).startswith(f"the job cannot read the changes of 'rates' at {UNREACHABLE}: ")
        assert "\n" not in str(refused.value)


def test_two_tables_changes_now_each_hold_a_slot_both_discarded_and_one_failing_leaves_none(postgres):
    """Two tables' changes at "now": each input makes its own slot and publication, ``Composite.discard_position``
    drops both; when the second input cannot make its own (its server not reached), the first's is dropped before
    the second's one line goes on: nothing is left on the server. No Spark."""
    tables = [f"pair_{uuid.uuid4().hex[:8]}" for _ in range(2)]
    for table in tables:
        postgres.sql(f"CREATE TABLE {table} (k bigint PRIMARY KEY, v bigint)")

    def kept() -> set:
        return {r[0] for r in postgres.sql("SELECT slot_name FROM pg_replication_slots WHERE slot_name LIKE 'fw_sp_%'")}

    def ours() -> list:
        """Our tables' publications, and the savepoints' slots made since the test began."""
        published = postgres.sql(f"SELECT pubname FROM pg_publication_tables WHERE tablename IN ('{tables[0]}', "
                                 f"'{tables[1]}')")
        return sorted([("publication", p) for (p,) in published] + [("slot", s) for s in kept() - before])

    before = kept()
    try:
        both = _both(*[dict(CHANGES, url=postgres.url, table=t, label=t) for t in tables])
        position = both.position_at(now=True)
        slots = [part["slot"] for part in position["inputs"]]
        assert ours() == sorted((kind, s) for s in slots for kind in ("publication", "slot")) and len(set(slots)) == 2
        assert registry.check_saved_position(position, both.describe(), "written", AssertionError) == position
        both.discard_position(position)
        assert ours() == []
        half = _both(dict(CHANGES, url=postgres.url, table=tables[0], label=tables[0]), CHANGES)
        with pytest.raises(FullWindowError, match=f"^the job cannot read the changes of 'rates' at {UNREACHABLE}: "):
            half.position_at(now=True)
        assert ours() == []
    finally:
        for table in tables:
            postgres.sql(f"DROP TABLE {table}")
