"""The operator kinds: a registry by name, one class each, and no other module that compares a kind's name
(no Spark)."""

from __future__ import annotations

import ast
import pathlib
import pickle

import pytest

from fw_magics import operators
from fw_magics.magics import stream_grammar
from fw_magics.operators import AGGREGATE, CO_PROCESS, MIRROR, OPERATOR, PROCESS, REDUCE, KeyedKind, OperatorKind
from fw_magics.operators.spec import KeyedOperatorSpec, OperatorSpec, StateType

ROOT = pathlib.Path(__file__).resolve().parent.parent.parent


def test_the_registry_holds_one_of_each_kind_under_the_name_written_on_disk():
    assert operators.names() == ("reduce", "aggregate", "process", "co_process", "operator", "mirror")
    assert operators.kinds() == (REDUCE, AGGREGATE, PROCESS, CO_PROCESS, OPERATOR, MIRROR)
    for kind in operators.kinds():
        assert operators.kind_named(kind.name) is kind and str(kind) == kind.name
        assert pickle.loads(pickle.dumps(kind)) is kind  # a task's spec holds the registry's kind
    with pytest.raises(KeyError):
        operators.kind_named("join")


def test_what_each_kind_says_is_what_the_runtime_decided_by_name():
    # keyed or not (the per-key core, the handover, a savepoint's keyed state); timed (timers, close, the
    # handover's lazy way); a reduce's outputs are whole records; the graph's operator kinds as recorded
    assert [k.name for k in operators.kinds() if k.keyed] == ["reduce", "aggregate", "process", "co_process", "mirror"]
    assert [k.name for k in operators.kinds() if k.timed] == ["process", "co_process"]
    assert [k.name for k in operators.kinds() if isinstance(k, KeyedKind) and k.emits_records] == ["reduce", "mirror"]
    assert [k.graph_kind for k in operators.kinds()] == ["reduce", "aggregate", "process", "co_process", "process",
                                                         "mirror"]
    spec = REDUCE.spec(function=max, label="add", record=StateType("r"), key=StateType("k"), event_time=None)
    assert isinstance(spec, KeyedOperatorSpec) and spec.kind is REDUCE and spec.output == spec.record
    assert REDUCE.step_name(spec) == "reduce(add)" and REDUCE.emitter(spec) == "reduce function 'add'"
    assert AGGREGATE.emitter(spec) == "add.get_result" and CO_PROCESS.emitter(spec) == "co-process function 'add'"
    assert isinstance(OPERATOR.spec(function=None, label="Tally", record=None, result=None), OperatorSpec)
    with pytest.raises(TypeError, match="takes a keyed operator kind"):
        KeyedOperatorSpec("reduce", max, "add", StateType("r"), StateType("k"), None)


def test_the_magics_operations_and_help_come_from_the_registry():
    assert stream_grammar.OPERATIONS == ("reduce", "aggregate", "process", "co_process", "interval_join")
    assert stream_grammar.TWO_INPUTS == ("co_process", "interval_join")
    assert [op.name for op in CO_PROCESS.operations] == ["co_process", "interval_join"]
    assert stream_grammar.operation_help(1, "").splitlines()[0] == (
        "reduce fn=FN        FN(a, b) -> record: a running reduce, its result a whole record")


def test_a_kind_is_registered_once_and_its_operations_are_its_own():
    class Mirror(KeyedKind):
        name = "reduce"

        def emitter(self, spec):
            return "mirror"

        def per_key(self, core):
            return None

    with pytest.raises(ValueError, match="'reduce' is registered twice"):
        operators.register(Mirror())
    with pytest.raises(TypeError):
        operators.register("reduce")
    assert issubclass(Mirror, OperatorKind)


# -- the guard: no module but the kinds' own compares a kind's name -------------------------------------

#: Words spelled as kinds are, that are not kinds: the ``%%fullwindow`` grammar's bounded operations.
NOT_KINDS = {"fw_magics/magics/grammar.py"}


def kind_name_uses(path: pathlib.Path, words: set[str]) -> list[str]:
    """Where ``path`` compares something with a kind's name (``spec.kind == "reduce"``, ``kind in ("process",
    ...)``, through a module constant ``OPERATOR = "operator"`` too) or lists two kinds' names (a tuple, a set,
    a dict's keys: a table by kind)."""
    tree = ast.parse(path.read_text(encoding="utf-8"), str(path))
    constants = {target.id for node in tree.body if isinstance(node, ast.Assign)
                 and isinstance(node.value, ast.Constant) and node.value.value in words
                 for target in node.targets if isinstance(target, ast.Name)}

    def named(node) -> bool:
        return (isinstance(node, ast.Constant) and node.value in words) or (
            isinstance(node, ast.Name) and node.id in constants)

    where = path.relative_to(ROOT).as_posix() if ROOT in path.parents else path.name
    found = []
    for node in ast.walk(tree):
        if isinstance(node, ast.Compare):
            hit = any(named(side) or (isinstance(side, (ast.Tuple, ast.List, ast.Set)) and any(map(named, side.elts)))
                      for side in (node.left, *node.comparators))
        elif isinstance(node, (ast.Tuple, ast.List, ast.Set)):
            hit = sum(map(named, node.elts)) >= 2
        elif isinstance(node, ast.Dict):
            hit = sum(named(key) for key in node.keys if key is not None) >= 2
        else:
            hit = False
        if hit:
            found.append(f"{where} line {node.lineno}: {ast.unparse(node)[:80]}")
    return found


WORDS = set(operators.names()) | {op.name for op in operators.operations()}


def test_no_module_outside_the_kinds_compares_a_kinds_name():
    own = ROOT / "fw_magics" / "operators"
    files = [p for p in sorted((ROOT / "fw_magics").rglob("*.py")) + sorted((ROOT / "widgets").rglob("*.py"))
             if own not in p.parents and p.relative_to(ROOT).as_posix() not in NOT_KINDS]
    found = [use for path in files for use in kind_name_uses(path, WORDS)]
    assert not found, "read the kind's attributes (fw_magics.operators) instead:\n" + "\n".join(found)


def test_the_guard_sees_comparisons_tables_and_named_constants(tmp_path):
    path = tmp_path / "probe.py"
    path.write_text('OPERATOR = "operator"\n'
                    'def f(spec, kind, doc):\n'
                    '    a = spec.kind == "reduce" or kind in ("process", "co_process") or kind == OPERATOR\n'
                    '    b = {"reduce": 1, "aggregate": 2}[kind]\n'
                    '    return doc.get("kind") != "operator", kind.name, "process(x)", a, b\n')
    assert sorted(use.split(": ", 1)[1] for use in kind_name_uses(path, WORDS)) == sorted([
        "spec.kind == 'reduce'", "kind in ('process', 'co_process')", "('process', 'co_process')", "kind == OPERATOR",
        "{'reduce': 1, 'aggregate': 2}", "doc.get('kind') != 'operator'"])
