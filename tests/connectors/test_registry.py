"""Sources are kinds behind a declared base (``fw_magics.connectors``): the registry finds each, refuses an
unknown one in one line, a savepoint's position is checked by its own kind's codec, and no module outside
a kind's own folder compares its name. Pure: no Spark session."""

from __future__ import annotations

import ast
import inspect
import pathlib

import pytest
from pyspark.sql import types as T

import fw_magics as fw
from fw_magics.connectors import registry
from fw_magics.connectors.base import Composite, OneInput, Source
from fw_magics.connectors.files.source import FilesSource
from fw_magics.connectors.postgres.source import TableSource
from fw_magics.connectors.postgres_cdc.source import ChangesSource
from fw_magics.connectors.two_inputs.source import ConnectedSource
from fw_magics.runtime.streaming.savepoints.files import SavepointError

ROOT = pathlib.Path(__file__).resolve().parent.parent.parent
SCHEMA = T.StructType([T.StructField("k", T.LongType()), T.StructField("ts", T.TimestampType())])

FILES = {"source": "files", "streaming": True, "path": "/data/orders", "format": "parquet", "event_time": "ts",
         "delay_ms": 0, "partitions": 4, "label": "orders", "glob": "*.parquet", "on_bad_file": "fail",
         "on_late": "drop", "backlog": True}
TABLE = {"source": "table", "streaming": True, "url": "postgresql://me@localhost/db", "table": "rates",
         "order_by": "id", "event_time": "ts", "delay_ms": 0, "on_late": "drop", "label": "rates", "partitions": 4,
         "backlog": True}
MANIFEST = {"format": 1, "directory": "/data/orders", "glob": "*.parquet", "backlog": 1,
            "files": [{"name": "a.parquet", "size": 10, "mtime_ns": 1}, {"name": "b.parquet", "size": 20, "mtime_ns": 2}]}
TABLE_POSITION = {"format": 1, "table": "rates", "through": 41, "rows": None}
CHANGES_POSITION = {"format": 1, "table": "rates", "slot": "fw_sp_0a", "lsn": "0/15", "rows": None}


def connected(first=FILES, second=TABLE, broadcast=False) -> dict:
    return ConnectedSource.detail_of([(first, SCHEMA, ["k"]), (second, SCHEMA, ["k"])], "__fw_time",
                                     ["orders", "rates"], ["a", "b"], SCHEMA, broadcast)


def test_the_registry_finds_each_kind_and_makes_its_source_from_a_steps_detail():
    assert {kind: cls for kind, cls in registry.KINDS.items()} == {
        "files": FilesSource, "table": TableSource, "table_changes": ChangesSource, "connected": ConnectedSource}
    for kind, cls in registry.KINDS.items():
        assert registry.source_class(kind) is cls and cls.kind == kind and issubclass(cls, Source)
    files, table = registry.source_for(FILES, SCHEMA), registry.source_for(TABLE, SCHEMA)
    assert isinstance(files, FilesSource) and files.directory == "/data/orders"
    assert isinstance(table, TableSource) and table.table == "rates"
    both = registry.source_for(connected(), SCHEMA)
    assert isinstance(both, ConnectedSource) and [type(s) for s in both.inputs] == [FilesSource, TableSource]
    # what a source describes names its kind, which the job's log and savepoints keep
    assert [files.describe()["kind"], table.describe()["kind"], both.describe()["kind"]] == ["files", "table", "connected"]
    assert [d["kind"] for d in both.describe()["inputs"]] == ["files", "table"]


def test_a_step_not_read_from_a_source_with_a_backlog_has_none():
    for detail in ({"source": "records"}, {"source": "dataframe"}, {}):
        assert registry.source_for(detail, SCHEMA) is None and not registry.is_backlog_source(detail)
    assert registry.is_backlog_source(FILES) and registry.is_backlog_source(TABLE)
    assert not registry.is_backlog_source(connected())  # two inputs are not an input of two inputs


@pytest.mark.parametrize("kind, line", [
    ("kafka", "no source kind 'kafka'; accepted: files, table, table_changes, connected"),
    ("file", "no source kind 'file' (did you mean 'files'?); accepted: files, table, table_changes, connected"),
    (None, "no source kind None; accepted: files, table, table_changes, connected"),
])
def test_an_unknown_kind_is_refused_in_one_line(kind, line):
    with pytest.raises(fw.FullWindowError) as info:
        registry.source_class(kind)
    assert str(info.value) == line


def test_a_composite_answers_for_its_inputs():
    lazy = dict(FILES, backlog=False)
    both = registry.source_for(connected(lazy), SCHEMA)
    assert isinstance(both, Composite) and all(isinstance(s, OneInput) for s in both.inputs)
    assert both.without_backlog() == ["orders"] and registry.source_for(lazy, SCHEMA).without_backlog() == ["orders"]
    assert registry.source_for(FILES, SCHEMA).why_no_max_files() is None
    assert both.why_no_max_files() == registry.source_for(TABLE, SCHEMA).why_no_max_files() is not None
    assert [(s.kind, root) for s, root, _ in both.inputs_at("/jobs/j")] == [
        ("files", "/jobs/j/source/input1"), ("table", "/jobs/j/source/input2")]
    assert both.joined([MANIFEST, TABLE_POSITION]) == {"inputs": [MANIFEST, TABLE_POSITION]}
    assert both.same_place({"inputs": [MANIFEST, dict(TABLE_POSITION, table="other")]}) == \
        "input 2: read the table 'other'"


def test_a_savepoint_position_is_checked_by_its_own_kinds_codec():
    files, table = registry.source_for(FILES, SCHEMA).describe(), registry.source_for(TABLE, SCHEMA).describe()
    both = registry.source_for(connected(), SCHEMA).describe()
    check = registry.check_saved_position
    assert check(MANIFEST, files, "of savepoint s", SavepointError) == MANIFEST
    assert check(TABLE_POSITION, table, "of savepoint s", SavepointError) == TABLE_POSITION
    assert check({"inputs": [MANIFEST, TABLE_POSITION]}, both, "of savepoint s", SavepointError) == {
        "inputs": [MANIFEST, TABLE_POSITION]}
    refusals = [
        (TABLE_POSITION, files, "the source manifest of savepoint s is not one fw-magics wrote (format 1)"),
        (MANIFEST, table, "the table source's position of savepoint s is not one fw-magics wrote (format 1)"),
        ({"inputs": [TABLE_POSITION, MANIFEST]}, both,
         "the source manifest of savepoint s (input 1) is not one fw-magics wrote (format 1)"),
        ({"inputs": [MANIFEST]}, both, "the source position of savepoint s is not one of 2 inputs' positions "
                                       "fw-magics wrote"),
    ]
    for doc, described, line in refusals:
        with pytest.raises(SavepointError) as info:
            check(doc, described, "of savepoint s", SavepointError)
        assert str(info.value) == line
    assert registry.position_in_words(both, {"inputs": [MANIFEST, TABLE_POSITION]}) == \
        "1 of 2 files read; table 'rates' read through 41"


def test_each_kind_checks_its_own_fields_of_a_savepoints_document():
    assert list(registry.position_document_fields()) == ["read_files", "read_through", "read_lsn"]
    registry.check_position_fields({"read_files": 1}, MANIFEST, "savepoint s", SavepointError)
    registry.check_position_fields({"read_through": 41}, TABLE_POSITION, "savepoint s", SavepointError)
    registry.check_position_fields({"read_lsn": "0/15"}, CHANGES_POSITION, "savepoint s", SavepointError)
    for document, position, field in (({"read_files": 2}, MANIFEST, "read_files"),
                                      ({"read_through": 40}, TABLE_POSITION, "read_through"),
                                      ({"read_lsn": "0/16"}, CHANGES_POSITION, "read_lsn")):
        with pytest.raises(SavepointError, match=f"savepoint s: field '{field}' is "):
            registry.check_position_fields(document, position, "savepoint s", SavepointError)
    assert registry.places({"kind": "files", "path": "/d"}) == ["/d"]
    assert registry.places({"kind": "connected", "inputs": [{"path": "/d"}, {"table": "t"}]}) == ["/d", "t"]


def test_a_change_of_a_composites_input_is_named_by_its_number():
    recorded = registry.source_for(connected(), SCHEMA).describe()
    now = registry.source_for(connected(second=dict(TABLE, table="other")), SCHEMA).describe()
    assert registry.source_change(recorded, recorded) is None
    assert registry.source_change(recorded, now) == "input 2: its table was 'rates', now 'other'"


# -- no other module names a source kind ---------------------------------------------------------------


def _kind_constants(node) -> set[str]:
    """The kind names among ``node``'s string constants (itself, or the items of a tuple, list or set)."""
    items = node.elts if isinstance(node, (ast.Tuple, ast.List, ast.Set)) else [node]
    return {i.value for i in items if isinstance(i, ast.Constant) and i.value in registry.KINDS}


def kind_comparisons(tree: ast.AST) -> list[tuple[int, str]]:
    """Where ``tree`` compares something with a kind's name: ``==``/``in``/... with a kind literal, a
    ``case "files":``, or a dispatch table keyed by kinds (``{"files": ...}.get(x)``, ``{...}[x]``)."""
    found = []
    for node in ast.walk(tree):
        if isinstance(node, ast.Compare):
            for operand in [node.left, *node.comparators]:
                found += [(node.lineno, kind) for kind in _kind_constants(operand)]
        elif isinstance(node, ast.MatchValue):
            found += [(node.lineno, kind) for kind in _kind_constants(node.value)]
        elif isinstance(node, (ast.Subscript, ast.Attribute)) and isinstance(node.value, ast.Dict):
            found += [(node.lineno, kind) for key in node.value.keys if key is not None
                      for kind in _kind_constants(key)]
    return found


def test_the_comparison_finder_sees_each_form():
    code = ('a == "files"\nb in ("files", "table")\nmatch c:\n    case "connected":\n        pass\n'
            '{"table": 1}.get(d)\n{"files": 2}[e]\nf == "dataframe"\ng["files"]\n')
    assert sorted(kind_comparisons(ast.parse(code))) == [
        (1, "files"), (2, "files"), (2, "table"), (4, "connected"), (6, "table"), (7, "files")]


def test_no_module_outside_a_kinds_own_folder_compares_its_name():
    own = {kind: pathlib.Path(inspect.getfile(cls)).parent for kind, cls in registry.KINDS.items()}
    found = []
    for folder in (ROOT / "fw_magics", ROOT / "widgets"):
        for path in sorted(folder.rglob("*.py")):
            for line, kind in kind_comparisons(ast.parse(path.read_text(encoding="utf-8"), str(path))):
                if own[kind] not in path.parents:
                    found.append(f"{path.relative_to(ROOT)}:{line} compares the source kind {kind!r}")
    assert not found, "ask the source, or the registry (fw_magics/connectors/registry.py):\n" + "\n".join(found)


def test_what_a_stopped_job_keeps_on_a_server_is_read_from_its_record_alone(tmp_path):
    """``%fw_recover`` has only a job's folder and its log: a CDC job's slot is named, with how to drop it; a
    password in an (untrusted) recorded url is never repeated; other kinds keep nothing."""
    from fw_magics.connectors.postgres_cdc.source import ChangesPosition

    described = {"kind": ChangesSource.kind, "url": "postgresql://me@localhost/db", "table": "rates"}
    assert registry.kept_on_server(described, str(tmp_path)) is None  # no slot made yet
    ChangesPosition(str(tmp_path)).write(dict(CHANGES_POSITION, slot="fw_orders_0a1b"))
    assert registry.kept_on_server(described, str(tmp_path)) == (
        "holds the replication slot 'fw_orders_0a1b' on the server, which keeps the table's changes (WAL) until "
        "the job reads them; fw.drop_slot('postgresql://me@localhost/db', 'fw_orders_0a1b') drops it")
    leaked = registry.kept_on_server(dict(described, url="postgresql://me:hunter2@localhost/db"), str(tmp_path))
    assert "hunter2" not in leaked and "fw.drop_slot('postgresql://me:***@localhost/db', 'fw_orders_0a1b')" in leaked
    for other in (registry.source_for(FILES, SCHEMA).describe(), registry.source_for(TABLE, SCHEMA).describe(),
                  registry.source_for(connected(), SCHEMA).describe(), {"kind": "nothing"}, None,
                  {"kind": "connected", "inputs": "not a list"}):
        assert registry.kept_on_server(other, str(tmp_path)) is None
    # a CDC table as the second of two inputs: its slot is in that input's folder, and named the same way
    two = dict(registry.source_for(connected(), SCHEMA).describe())
    two["inputs"] = [two["inputs"][0], described]
    second = tmp_path / "two" / "source" / "input2"
    assert registry.kept_on_server(two, str(tmp_path / "two")) is None
    ChangesPosition(str(second)).write(dict(CHANGES_POSITION, slot="fw_joined_0c0d"))
    assert registry.kept_on_server(two, str(tmp_path / "two")).startswith(
        "holds the replication slot 'fw_joined_0c0d' on the server, which keeps the table's changes (WAL)")


def test_a_changes_position_names_the_publication_its_slot_reads_through_as_fw_magics_names_them():
    """A restored CDC job reads through the first job's publication (kept in the position); a savepoint's
    position is untrusted: a publication not named as fw-magics names them is refused, one line."""
    described = {"kind": ChangesSource.kind, "url": "postgresql://me@localhost/db", "table": "rates"}
    kept = dict(CHANGES_POSITION, publication="fw_orders_0a1b")
    assert registry.check_saved_position(kept, described, "of savepoint s", SavepointError) == kept
    for bad in ("orders; DROP TABLE x", "", 7):
        with pytest.raises(SavepointError, match="^the table changes source's position of savepoint s is not one "
                                                 r"fw-magics wrote \(format 1\)$"):
            registry.check_saved_position(dict(kept, publication=bad), described, "of savepoint s", SavepointError)
