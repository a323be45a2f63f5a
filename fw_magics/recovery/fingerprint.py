"""Digests of what a job's result depends on: functions, plain data, rows, files, DataFrame plans.

Small pure functions (no Spark import), each returning a hex SHA-256 that is equal for equal
inputs in any process of the same Python version (no ``id()``, no ``hash()`` of strings, no
pickles), so a job resumed after a restart can tell whether its input changed:

* ``function_digest(fn)``: the code a function runs and the values it closes over: its
  bytecode, constants, names, defaults, closure cell values and the module globals it refers
  to, recursively into nested code objects, into functions it refers to that are not library
  code (same-module helpers, wrapped functions) and into ``functools.partial`` arguments.
  Line numbers and file names are left out: moving a cell or re-running it changes nothing.
* ``value_digest(value)``: plain data (None, bool, numbers, strings, bytes, tuples, lists,
  dicts, sets, dates, decimals, enums, numpy arrays), functions, classes and instances of
  the user's own classes (their attributes). Anything else (a DataFrame, a model object of
  a library) counts by its type only: changing it is not seen.
* ``rows_digest(chunks)``, ``files_digest(paths)``: rows already serialised (Arrow IPC),
  files by path, size and modification time.
* ``plan_text(explain)`` and ``dataframe_digest(df)``: a DataFrame by its analyzed plan with
  Spark's expression ids removed, the files it reads, and Spark's ``semanticHash()`` where
  that is stable across processes (plans whose data sits in the plan: local rows, ranges).
  Rows Spark does not show in the plan (an RDD) cannot be seen: that piece is ``UNKNOWN``.

Bounded: at most ``MAX_NODES`` values are visited per digest and nesting deeper than
``MAX_DEPTH`` is cut (marked, so the digest stays deterministic).
"""

from __future__ import annotations

import contextlib
import datetime
import decimal
import enum
import functools
import hashlib
import io
import os
import re
import struct
import sys
import types
import uuid
from collections.abc import Iterable
from urllib.parse import unquote, urlparse

#: The prefix of a piece that could not be fingerprinted (what follows says why).
UNKNOWN = "unknown: "
MAX_NODES = 200_000
MAX_DEPTH = 64
#: numpy arrays larger than this count by dtype and shape only.
MAX_ARRAY_BYTES = 256 << 20

#: Top-level packages whose classes and functions count by name, not by their code.
LIBRARIES = frozenset({
    "fw_magics", "pyspark", "py4j", "pyarrow", "pandas", "numpy", "IPython", "ipykernel", "ipywidgets",
    "anywidget", "traitlets", "hypothesis", "pytest", "_pytest", "scipy", "sklearn", "matplotlib",
})


def _is_library(module: str | None) -> bool:
    """Whether code of ``module`` counts by name: installed libraries and Python's own; not the
    user's (``__main__``, a notebook's cells, their own modules, code built with ``exec``)."""
    if not module:
        return False
    root = module.split(".", 1)[0]
    return root in LIBRARIES or root in sys.builtin_module_names or root in getattr(sys, "stdlib_module_names", ())


class _Digest:
    """A SHA-256 fed with tagged, length-prefixed parts of a value, walked deterministically."""

    def __init__(self):
        self.sha = hashlib.sha256()
        self.nodes = 0
        self.active: set[int] = set()  # ids on the current path: a cycle is marked, not followed

    def tag(self, kind: str, data: bytes = b"") -> None:
        head = kind.encode()
        self.sha.update(struct.pack(">I", len(head)) + head + struct.pack(">Q", len(data)) + data)

    def text(self, kind: str, value: str) -> None:
        self.tag(kind, value.encode("utf-8", "surrogatepass"))

    def hexdigest(self) -> str:
        return self.sha.hexdigest()

    # -- values ------------------------------------------------------------------------------

    def value(self, value, depth: int = 0) -> None:
        self.nodes += 1
        if self.nodes > MAX_NODES:
            self.tag("budget")
            return
        if depth > MAX_DEPTH:
            self.tag("deep")
            return
        kind = type(value)
        if value is None or value is Ellipsis or kind is bool:
            self.text("const", repr(value))
        elif kind is int:
            self.text("int", format(value, "x"))
        elif kind is float or kind is complex:
            self.text(kind.__name__, repr(value))
        elif kind is str:
            self.text("str", value)
        elif kind in (bytes, bytearray, memoryview):
            self.tag("bytes", bytes(value))
        elif isinstance(value, (decimal.Decimal, datetime.date, datetime.time, datetime.timedelta, uuid.UUID,
                                range, slice)):
            self.text(kind.__name__, repr(value))
        elif isinstance(value, enum.Enum):
            self.text("enum", f"{kind.__module__}.{kind.__qualname__}.{value.name}")
        elif isinstance(value, types.CodeType):
            self.code(value, depth)
        elif isinstance(value, type):
            self.cls(value, depth)
        else:
            self.container_or_object(value, kind, depth)

    def container_or_object(self, value, kind, depth: int) -> None:
        key = id(value)
        if key in self.active:
            self.text("cycle", kind.__qualname__)
            return
        self.active.add(key)
        try:
            if isinstance(value, (tuple, list)):
                self.tag(f"{kind.__qualname__}[{len(value)}]")
                for item in value:
                    self.value(item, depth + 1)
            elif isinstance(value, dict):
                self.tag(f"{kind.__qualname__}[{len(value)}]")
                for k, v in value.items():
                    self.value(k, depth + 1)
                    self.value(v, depth + 1)
            elif isinstance(value, (set, frozenset)):
                self.tag(f"{kind.__name__}[{len(value)}]")
                for part in sorted(_sub_digest(item, depth + 1) for item in value):  # no hash order
                    self.tag("item", part.encode())
            elif isinstance(value, (types.FunctionType, types.LambdaType)):
                self.function(value, depth)
            elif isinstance(value, functools.partial):
                self.tag("partial")
                self.value(value.func, depth + 1)
                self.value(value.args, depth + 1)
                self.value(dict(sorted(value.keywords.items())), depth + 1)
            elif isinstance(value, types.MethodType):
                self.tag("method")
                self.value(value.__func__, depth + 1)
                self.value(value.__self__, depth + 1)
            elif isinstance(value, (types.BuiltinFunctionType, types.BuiltinMethodType)):
                self.text("builtin", f"{getattr(value, '__module__', None)}.{value.__qualname__}")
            elif isinstance(value, types.ModuleType):
                self.text("module", value.__name__)
            else:
                self.obj(value, kind, depth)
        finally:
            self.active.discard(key)

    def obj(self, value, kind, depth: int) -> None:
        module = getattr(kind, "__module__", "") or ""
        if module.startswith("pyspark") and kind.__name__ == "Column":
            self.text("column", str(value))
        elif module.startswith("pyspark") and hasattr(value, "json") and hasattr(value, "simpleString"):
            self.text("datatype", value.json())  # a Spark schema or data type
        elif module.startswith("numpy") and hasattr(value, "tobytes") and hasattr(value, "dtype"):
            self.text("ndarray", f"{value.dtype.str}{getattr(value, 'shape', ())}")
            if getattr(value, "nbytes", MAX_ARRAY_BYTES + 1) <= MAX_ARRAY_BYTES and value.dtype.kind != "O":
                self.tag("data", value.tobytes())
        elif not _is_library(module):  # an instance of the user's own class: its class and attributes
            self.tag("object")
            self.cls(kind, depth + 1)
            state = getattr(value, "__dict__", None)
            if isinstance(state, dict):
                for name in sorted(state):
                    self.text("attr", name)
                    self.value(state[name], depth + 1)
            for name in _slots(kind):
                if hasattr(value, name):
                    self.text("slot", name)
                    self.value(getattr(value, name), depth + 1)
        elif module.split(".", 1)[0] == "fw_magics" and callable(getattr(value, "content_parts", None)):
            # fw-magics' own wrapper of the user's code (an interval join's join function, a broadcast
            # function's adapter): its class by name, then what it wraps, which is the user's
            self.text("wrapper", f"{module}.{kind.__qualname__}")
            self.value(value.content_parts(), depth + 1)
        else:
            self.text("opaque", f"{module}.{kind.__qualname__}")

    # -- code --------------------------------------------------------------------------------

    def code(self, code: types.CodeType, depth: int) -> None:
        self.tag("code")
        self.tag("bytecode", code.co_code)
        self.text("name", code.co_name)
        for attribute in ("co_argcount", "co_posonlyargcount", "co_kwonlyargcount", "co_flags"):
            self.text(attribute, str(getattr(code, attribute, 0)))
        for attribute in ("co_names", "co_varnames", "co_freevars", "co_cellvars"):
            self.text(attribute, "\x00".join(getattr(code, attribute, ())))
        table = getattr(code, "co_exceptiontable", None)
        if table is not None:
            self.tag("exceptions", table)
        self.tag(f"consts[{len(code.co_consts)}]")
        for const in code.co_consts:
            self.value(const, depth + 1)

    def function(self, fn, depth: int) -> None:
        self.tag("function")
        self.value(fn.__code__, depth + 1)
        self.value(fn.__defaults__, depth + 1)
        self.value(dict(sorted((fn.__kwdefaults__ or {}).items())), depth + 1)
        cells = fn.__closure__ or ()
        self.tag(f"closure[{len(cells)}]")
        for cell in cells:
            try:
                contents = cell.cell_contents
            except ValueError:
                self.tag("empty")
                continue
            self.value(contents, depth + 1)
        globals_ = fn.__globals__
        for name in sorted(_global_names(fn.__code__)):
            if name in globals_:
                self.text("global", name)
                self.global_value(globals_[name], depth + 1)

    def global_value(self, value, depth: int) -> None:
        """A module global a function refers to: library code by name, the user's by content."""
        if isinstance(value, types.ModuleType):
            self.text("module", value.__name__)
        elif isinstance(value, (types.FunctionType, type)) and _is_library(getattr(value, "__module__", None)):
            self.text("library", f"{value.__module__}.{value.__qualname__}")
        else:
            self.value(value, depth)

    def cls(self, cls: type, depth: int) -> None:
        """A class: library classes by name; the user's by their bases and members (methods, data)."""
        if _is_library(cls.__module__):
            self.text("class", f"{cls.__module__}.{cls.__qualname__}")
            return
        key = id(cls)
        if key in self.active:
            self.text("cycle", cls.__qualname__)
            return
        self.active.add(key)
        try:
            self.text("class", cls.__qualname__)
            for base in cls.__bases__:
                self.cls(base, depth + 1)
            members = vars(cls)
            for name in sorted(members):
                if name.startswith("__") and name.endswith("__") and name not in ("__call__", "__init__", "__iter__"):
                    continue
                attribute = members[name]
                if isinstance(attribute, (staticmethod, classmethod)):
                    attribute = attribute.__func__
                elif isinstance(attribute, property):
                    attribute = (attribute.fget, attribute.fset)
                self.text("member", name)
                self.value(attribute, depth + 1)
        finally:
            self.active.discard(key)


def _slots(cls: type) -> list[str]:
    names = []
    for klass in cls.__mro__:
        slots = vars(klass).get("__slots__", ())
        names += [slots] if isinstance(slots, str) else list(slots)
    return sorted(n for n in set(names) if n not in ("__dict__", "__weakref__"))


def _global_names(code: types.CodeType) -> set[str]:
    """Names a code object (and the code nested in it) may read as globals."""
    names = set(code.co_names)
    for const in code.co_consts:
        if isinstance(const, types.CodeType):
            names |= _global_names(const)
    return names


def _sub_digest(value, depth: int) -> str:
    digest = _Digest()
    digest.value(value, depth)
    return digest.hexdigest()


# -- the pieces ---------------------------------------------------------------------------------


def value_digest(value) -> str:
    """The digest of a value (plain data, a function, a class, an object of the user's class)."""
    digest = _Digest()
    digest.value(value)
    return digest.hexdigest()


def function_digest(fn) -> str:
    """The digest of what a callable runs: code, constants, defaults, closure, the globals it reads."""
    return value_digest(fn)


def rows_digest(chunks: Iterable[bytes]) -> str:
    """The digest of serialised rows (e.g. one Arrow IPC stream per partition), in order."""
    digest = _Digest()
    for chunk in chunks:
        digest.tag("chunk", bytes(chunk))
    return digest.hexdigest()


def files_digest(paths: Iterable[str]) -> str:
    """The digest of files by path, size and modification time (local paths and file URIs).

    Paths on other file systems count by path only.
    """
    digest = _Digest()
    for path in sorted(set(paths)):
        digest.text("path", path)
        local = unquote(urlparse(path).path) if path.startswith("file:") else path
        if "://" in path and not path.startswith("file:"):
            digest.tag("remote")
            continue
        try:
            info = os.stat(local)
        except OSError:
            digest.tag("missing")
            continue
        digest.text("stat", f"{info.st_size}:{info.st_mtime_ns}")
    return digest.hexdigest()


_SECTION = re.compile(r"== Analyzed Logical Plan ==\n(.*?)(?:\n== |\Z)", re.S)
_VOLATILE = [
    (re.compile(r"#\d+L?\b"), "#"),  # expression ids: attr#12L
    (re.compile(r"\bplan_id=\d+"), "plan_id"),  # Spark Connect's plan ids
    (re.compile(r"\b(Generate|Expand|Window|Aggregate)\s*\[\s*\d+\s*\]"), r"\1"),
]
#: Leaf nodes whose rows Spark's semantic hash includes and whose hash is stable across processes.
_STABLE_LEAVES = frozenset({"LocalRelation", "Range", "OneRowRelation"})
_NODE = re.compile(r"^[\s+\-:|!']*([A-Za-z][A-Za-z0-9]*)")
_RELATION = re.compile(r"Relation|RDD|Scan|Table|Range")


def plan_text(explain: str) -> str:
    """The analyzed logical plan in ``DataFrame.explain(mode="extended")``'s output, ids removed."""
    match = _SECTION.search(explain)
    text = (match.group(1) if match else explain).strip()
    for pattern, replacement in _VOLATILE:
        text = pattern.sub(replacement, text)
    return text


def plan_leaves(plan: str) -> set[str]:
    """The relation-like node names (leaves that hold or read rows) of a plan text."""
    found = set()
    for line in plan.splitlines():
        match = _NODE.match(line)
        if match and _RELATION.search(match.group(1)):
            found.add(match.group(1))
    return found


def dataframe_digest(df) -> dict[str, str]:
    """A Spark DataFrame (classic or Connect) as pieces: its plan, the files it reads, its rows.

    ``plan``: the analyzed plan text without ids; ``files``: ``inputFiles()`` by size and
    modification time; ``rows``: Spark's ``semanticHash()`` when every leaf of the plan holds
    its rows (local rows, a range), else ``UNKNOWN`` when a leaf is an RDD (its rows are seen
    by no plan), else left out (rows of files and tables are covered by ``files`` at best).
    """
    buffer = io.StringIO()
    with contextlib.redirect_stdout(buffer):
        df.explain(mode="extended")
    plan = plan_text(buffer.getvalue())
    pieces = {"plan": hashlib.sha256(plan.encode()).hexdigest()}
    try:
        files = list(df.inputFiles())
    except Exception:  # a source without files (or a server that cannot say): the plan must do
        files = []
    if files:
        pieces["files"] = files_digest(files)
    leaves = plan_leaves(plan)
    if leaves and leaves <= _STABLE_LEAVES:
        pieces["rows"] = hashlib.sha256(str(df.semanticHash()).encode()).hexdigest()
    elif any("RDD" in leaf for leaf in leaves):
        pieces["rows"] = UNKNOWN + "its rows come from an RDD, which no Spark plan shows"
    return pieces
