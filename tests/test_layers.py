"""Dependencies flow one way: no module imports from a layer above its own (docs/architecture.md, "Layers").

Every module of the package (and of ``widgets/``, installed as ``fw_magics.widgets``) is read
with ``ast``; each import, late ones inside functions included, is mapped to the layer of the
module it names. The only upward imports allowed are the documented late ones behind
``execute()`` and ``show_graph()``, as pandas reaches its plotting layer. A module that fits
no layer fails the test until it is given one here, so new code is held to the rule from its
first commit (``fw_magics/state/`` and ``fw_magics/runtime/streaming/`` already have theirs). No Spark.
"""

from __future__ import annotations

import ast
import pathlib
from dataclasses import dataclass

import pytest

ROOT = pathlib.Path(__file__).resolve().parent.parent

#: Layers from the bottom (docs/architecture.md, "Layers"): 1 base (errors, hooks, options, values, Spark itself),
#: 2 pure models and the user API, 3 failover and recovery, 4 operator kinds and connectors (sources),
#: 5 the DataStream API, 6 the runtimes (batch and streaming), 7 the notebook faces, and on top
#: the teaching helpers. A module's layer is its longest entry here; the package itself (``fw_magics/__init__.py``,
#: the public facade) sits on top.
LAYERS = {
    "fw_magics.errors": 1, "fw_magics.hooks": 1, "fw_magics.options": 1, "fw_magics.processes": 1,
    "fw_magics.notices": 1,
    "fw_magics.values": 1, "fw_magics.spark": 1,
    "fw_magics.graph": 2, "fw_magics.state": 2, "fw_magics.api": 2,
    "fw_magics.failover": 3, "fw_magics.recovery": 3,
    "fw_magics.operators": 4, "fw_magics.connectors": 4,
    "fw_magics.datastream": 5,
    "fw_magics.runtime": 6,
    "fw_magics.magics": 7, "fw_magics.widgets": 7,
    "fw_magics.teaching": 8,  # apart from the product: the tutorials' and tests' helpers, beside the facade
}
TOP = "fw_magics"  # the package's own __init__: the facade, on top
TOP_LAYER = 8

#: The documented upward imports: (module, function, imported module): a stream's execute() and start() reach
#: the runtime that runs it, and show_graph() of a stream or a result the widget layer, as pandas reaches its
#: plotting layer. Each must be a late import inside that function, and each must still exist (a stale
#: entry fails too).
ALLOWED_LATE = {
    ("fw_magics.datastream.datastream", "DataStream.execute", "fw_magics.runtime.batch.job"),
    ("fw_magics.datastream.stateful", "StatefulStream.start", "fw_magics.runtime.streaming.driver.start"),
    ("fw_magics.datastream.operator_stream", "OperatorStream.start", "fw_magics.runtime.streaming.driver.start"),
    ("fw_magics.datastream.datastream", "DataStream.show_graph", "fw_magics.widgets"),
    ("fw_magics.runtime.batch.job_result", "JobResult.show_graph", "fw_magics.widgets"),
    ("fw_magics.runtime.streaming.driver.results", "JobResults.show", "fw_magics.widgets"),
}

#: Pure Python models, the user API and the recovery machinery: no Spark (they are tested without starting one).
NO_SPARK = ("fw_magics.graph", "fw_magics.state", "fw_magics.api", "fw_magics.failover", "fw_magics.recovery")


def module_files() -> dict[str, pathlib.Path]:
    """Every module of the installed package, by its import name."""
    found = {}
    for package, folder in (("fw_magics", ROOT / "fw_magics"), ("fw_magics.widgets", ROOT / "widgets")):
        for path in sorted(folder.rglob("*.py")):
            parts = list(path.relative_to(folder).with_suffix("").parts)
            if parts[-1] == "__init__":
                parts.pop()
            found[".".join([package, *parts])] = path
    return found


MODULES = module_files()


def layer_of(module: str) -> int | None:
    if module == TOP:
        return TOP_LAYER
    best = None
    for prefix, layer in LAYERS.items():
        if (module == prefix or module.startswith(prefix + ".")) and (best is None or len(prefix) > len(best[0])):
            best = (prefix, layer)
    return None if best is None else best[1]


@dataclass(frozen=True)
class Import:
    module: str  # the importing module
    function: str | None  # the enclosing function's qualified name; None at module level
    target: str  # the module imported from (a submodule when ``from X import submodule``)
    line: int


def _target(module: str, is_package: bool, node: ast.ImportFrom, name: str) -> str:
    if node.level:
        base = module.split(".") if is_package else module.split(".")[:-1]
        base = base[: len(base) - (node.level - 1)]
        source = ".".join(base + ([node.module] if node.module else []))
    else:
        source = node.module
    candidate = f"{source}.{name}"
    return candidate if candidate in MODULES else source


def imports_of(module: str, path: pathlib.Path) -> list[Import]:
    is_package = path.name == "__init__.py"
    found: list[Import] = []

    def visit(node, scope: list[str], function: str | None) -> None:
        for child in ast.iter_child_nodes(node):
            if isinstance(child, ast.If) and ast.unparse(child.test) in ("TYPE_CHECKING", "typing.TYPE_CHECKING"):
                continue  # imports for annotations only: nothing is imported when the code runs
            if isinstance(child, ast.Import):
                found.extend(Import(module, function, alias.name, child.lineno) for alias in child.names)
            elif isinstance(child, ast.ImportFrom):
                found.extend(Import(module, function, _target(module, is_package, child, alias.name), child.lineno)
                             for alias in child.names)
            elif isinstance(child, (ast.FunctionDef, ast.AsyncFunctionDef)):
                name = ".".join([*scope, child.name])
                visit(child, [*scope, child.name], name)
            elif isinstance(child, ast.ClassDef):
                visit(child, [*scope, child.name], function)
            else:
                visit(child, scope, function)

    visit(ast.parse(path.read_text(encoding="utf-8"), str(path)), [], None)
    return found


IMPORTS = [imp for module, path in MODULES.items() for imp in imports_of(module, path)]
OURS = [imp for imp in IMPORTS if imp.target == TOP or imp.target.startswith(TOP + ".")]


def test_every_module_has_a_layer():
    unplaced = sorted(m for m in MODULES if layer_of(m) is None)
    assert not unplaced, f"give these modules a layer in tests/test_layers.py (see docs/architecture.md, Layers): {unplaced}"


def test_no_module_imports_from_a_higher_layer_except_the_documented_late_imports():
    upward = []
    for imp in OURS:
        low, high = layer_of(imp.module), layer_of(imp.target)
        if low is None or high is None or high <= low:
            continue
        allowed = imp.function is not None and (imp.module, imp.function, imp.target) in ALLOWED_LATE
        if not allowed:
            where = f"inside {imp.function}()" if imp.function else "at module level"
            upward.append(f"{imp.module} (layer {low}) imports {imp.target} (layer {high}) {where}, line {imp.line}")
    assert not upward, "upward imports:\n" + "\n".join(upward)


def test_the_allowed_late_imports_are_still_there():
    used = {(imp.module, imp.function, imp.target) for imp in OURS}
    assert ALLOWED_LATE <= used, f"stale entries: {sorted(ALLOWED_LATE - used)}"


def import_cycles() -> list[list[str]]:
    """Cycles among the package's modules, over every import (late ones included) but the documented
    upward ones (``show_graph()``): each as the list of its modules, smallest first."""
    edges: dict[str, set[str]] = {m: set() for m in MODULES}
    for imp in OURS:
        if imp.target in MODULES and imp.target != imp.module and imp.module != TOP and \
                (imp.module, imp.function, imp.target) not in ALLOWED_LATE:
            edges[imp.module].add(imp.target)
    # Tarjan's strongly connected components
    order, low, on, stack, found = {}, {}, set(), [], []

    def visit(v: str) -> None:
        order[v] = low[v] = len(order)
        stack.append(v)
        on.add(v)
        for w in edges[v]:
            if w not in order:
                visit(w)
                low[v] = min(low[v], low[w])
            elif w in on:
                low[v] = min(low[v], order[w])
        if low[v] == order[v]:
            component = []
            while True:
                w = stack.pop()
                on.discard(w)
                component.append(w)
                if w == v:
                    break
            if len(component) > 1:
                found.append(sorted(component))

    for v in sorted(edges):
        if v not in order:
            visit(v)
    return sorted(found, key=len)


def test_no_import_cycle():
    cycles = import_cycles()
    assert not cycles, "import cycles (every import counted, late ones too):\n" + "\n".join(map(str, cycles))


@pytest.mark.parametrize("prefix", NO_SPARK)
def test_the_pure_models_import_no_spark(prefix):
    spark = [f"{imp.module} line {imp.line}" for imp in IMPORTS
             if (imp.module == prefix or imp.module.startswith(prefix + ".")) and imp.target.split(".")[0] == "pyspark"]
    assert not spark, f"pyspark imported by pure modules: {spark}"


def test_the_walk_sees_late_and_relative_imports():
    # the checker itself: a late import is attributed to its function, relative names resolve
    found = {(imp.function, imp.target) for imp in IMPORTS if imp.module == "fw_magics.datastream.datastream"}
    assert ("DataStream.show_graph", "fw_magics.widgets") in found
    assert (None, "fw_magics.errors") in found and (None, "fw_magics.datastream.physical.workers") in found
    assert "fw_magics.widgets.graph_view" in MODULES and "fw_magics.datastream" in MODULES


def test_importing_the_package_and_its_pure_parts_loads_no_spark_nor_arrow():
    # in a fresh interpreter: Spark (and pyarrow, pandas) load on first use of a name that needs them
    import subprocess
    import sys

    code = ("import sys, fw_magics, fw_magics.graph, fw_magics.state, fw_magics.failover, fw_magics.recovery\n"
            "print(sorted(m for m in ('pyspark', 'pyarrow', 'pandas', 'py4j') if m in sys.modules))\n"
            "fw_magics.from_records; print('pyspark' in sys.modules, sorted(set(fw_magics.__all__) - set(dir(fw_magics))))")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True, cwd=ROOT)
    assert out.stdout.split("\n")[:2] == ["[]", "True []"], out.stdout + out.stderr


#: Private names a module may take from another, as (module, name): none of fw-magics' own (what the
#: two magics' grammars share is ``fw_magics.magics.words``, with public names), one of pyspark's.
SHARED_PRIVATE: set[tuple[str, str]] = {
    # pyspark's, not a sibling's: the state client of a transformWithState handle, the only way to reach the
    # state partition's operator state kept under a key Spark is not calling for (checked where it is used)
    ("fw_magics.runtime.streaming.keyed.operator_state", "_statefulProcessorApiClient"),
}
#: Underscore names that are public API elsewhere (namedtuple's).
PUBLIC_UNDERSCORED = {"_fields", "_replace", "_asdict", "_make"}


def private_uses(module: str, path: pathlib.Path) -> list[str]:
    """``from x import _name`` and ``obj._name`` where ``_name`` is defined nowhere in this module."""
    tree = ast.parse(path.read_text(encoding="utf-8"), str(path))
    defined = set()
    for node in ast.walk(tree):
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
            defined.add(node.name)
        elif isinstance(node, (ast.Attribute, ast.Name)) and isinstance(node.ctx, ast.Store):
            defined.add(node.attr if isinstance(node, ast.Attribute) else node.id)
        elif isinstance(node, ast.Constant) and isinstance(node.value, str):
            defined.add(node.value)  # object.__setattr__(self, "_values", ...)
    found = []
    for node in ast.walk(tree):
        names = []
        if isinstance(node, ast.ImportFrom):
            names = [alias.name for alias in node.names]
        elif isinstance(node, ast.Attribute) and node.attr not in defined:
            names = [node.attr]
        for name in names:
            private = name.startswith("_") and not name.startswith("__") and name not in PUBLIC_UNDERSCORED
            if private and (module, name) not in SHARED_PRIVATE:
                found.append(f"{module} line {node.lineno}: {ast.unparse(node)}")
    return found


def test_no_module_uses_another_modules_private_names():
    found = [use for module, path in MODULES.items() for use in private_uses(module, path)]
    assert not found, "give these a public, documented name (or move the code):\n" + "\n".join(found)


def test_the_private_name_check_sees_imports_and_attributes(tmp_path):
    path = tmp_path / "m.py"
    path.write_text("from .grammar import _cut, quoted\nclass A:\n    def f(self, store):\n"
                    "        self._own = 1\n        return store._states, self._own, grammar._cut\n")
    assert [use.split(": ", 1)[1] for use in private_uses("m", path)] == [
        "from .grammar import _cut, quoted", "store._states", "grammar._cut"]
