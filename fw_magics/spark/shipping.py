"""User code from the user's own modules, shipped with the job (by value), so workers need not import it.

A function or ``AggregateFunction`` defined in a module beside the notebook (not installed)
is pickled *by reference* by default: the worker imports the module by name, which fails
with ``ModuleNotFoundError`` wherever the worker's Python path differs from the driver's
(a standalone cluster's Python workers run in their executors' work directories).
``ship_code(obj)`` finds the modules of the functions and classes ``obj`` reaches and asks
PySpark's cloudpickle to pickle those that are not installed *by value*: their code travels
inside the task. The same pickler serializes Python functions for Spark Connect, so this
works there too, with nothing uploaded as an artifact.

Installed code (the standard library, site-packages, any module of an installed
distribution, editable ones included) stays by reference: the workers must share the
driver's Python environment, as Spark requires anyway. A module that cannot travel by value
(a compiled extension, or one no longer in ``sys.modules``) is refused in one line naming it.
"""

from __future__ import annotations

import functools
import importlib.metadata
import os
import sys
import sysconfig
import types

from ..errors import FullWindowError

_SHIPPED: set[str] = set()


@functools.lru_cache(maxsize=1)
def _installed_roots() -> tuple[str, ...]:
    paths = sysconfig.get_paths()
    roots = {paths[k] for k in ("stdlib", "platstdlib", "purelib", "platlib") if k in paths}
    roots |= {sys.prefix, sys.base_prefix, sys.exec_prefix, sys.base_exec_prefix}
    return tuple(os.path.realpath(r) + os.sep for r in roots if r)


@functools.lru_cache(maxsize=1)
def _distribution_packages() -> frozenset[str]:
    """Top-level import names of every installed distribution (editable installs included)."""
    names = set(importlib.metadata.packages_distributions())
    for dist in importlib.metadata.distributions():  # editable installs list no files of their own
        top = dist.read_text("top_level.txt") or ""
        names.update(line.strip() for line in top.splitlines() if line.strip())
        name = (dist.metadata["Name"] or "").replace("-", "_")
        if name:
            names.add(name)
    return frozenset(names)


def is_user_module(name: str) -> bool:
    """True for a module that is neither built in, in the standard library or site-packages,
    nor part of an installed distribution: the user's own code, which workers may not see."""
    if not name or name == "__main__" or name in sys.builtin_module_names:
        return False
    top = name.split(".")[0]
    if top in sys.stdlib_module_names or top in _distribution_packages():
        return False
    module = sys.modules.get(name)
    path = getattr(module, "__file__", None) if module is not None else None
    if path is None:  # gone from sys.modules, or made in memory: the workers cannot import it either
        return True
    return not os.path.realpath(path).startswith(_installed_roots())


def _modules_reached(obj, limit: int = 2000) -> set[str]:
    """The ``__module__`` of every function and class ``obj`` reaches through wrappers,
    partials, closures, defaults, bound methods and the globals their code names."""
    seen: set[int] = set()
    found: set[str] = set()
    stack = [obj]
    while stack and len(seen) < limit:
        item = stack.pop()
        if id(item) in seen or item is None or isinstance(item, (str, bytes, int, float, bool, types.ModuleType)):
            continue
        seen.add(id(item))
        if isinstance(item, functools.partial):
            stack += [item.func, *item.args, *item.keywords.values()]
        elif isinstance(item, types.MethodType):
            stack += [item.__func__, item.__self__]
        elif isinstance(item, types.FunctionType):
            if isinstance(item.__module__, str):  # None for code made by exec(): pickled by value anyway
                found.add(item.__module__)
            stack += [c.cell_contents for c in item.__closure__ or () if _filled(c)]
            stack += [*(item.__defaults__ or ()), getattr(item, "__wrapped__", None)]
            if item.__module__ == "__main__" or is_user_module(item.__module__):  # by value: its globals too
                stack += [item.__globals__[n] for n in _names(item.__code__) if n in item.__globals__]
        elif isinstance(item, type):
            if isinstance(item.__module__, str):
                found.add(item.__module__)
            if is_user_module(item.__module__):
                stack += [v for v in vars(item).values() if isinstance(v, (types.FunctionType, type))]
                stack += list(item.__bases__)
        elif isinstance(item, (list, tuple, set, frozenset)):
            stack += list(item)
        elif isinstance(item, dict):
            stack += list(item.values())
        elif callable(item) or hasattr(item, "__dict__"):
            stack.append(type(item))
            stack += list(getattr(item, "__dict__", {}).values())
    return found


def _filled(cell) -> bool:
    try:
        cell.cell_contents
    except ValueError:
        return False
    return True


def _names(code: types.CodeType) -> set[str]:
    names = set(code.co_names)
    for const in code.co_consts:
        if isinstance(const, types.CodeType):
            names |= _names(const)
    return names


def ship_code(obj) -> list[str]:
    """Pickle by value every user module ``obj`` reaches (see the module docstring); the names."""
    from pyspark import cloudpickle

    shipped = []
    for name in sorted(_modules_reached(obj)):
        if name in _SHIPPED or not is_user_module(name):
            continue
        module = sys.modules.get(name)
        path = getattr(module, "__file__", None) or ""
        if module is None or (path and not path.endswith(".py")):
            where = f" ({path})" if path else ""
            raise FullWindowError(
                f"module {name!r}{where} holds user code Spark's workers must run, but it cannot be "
                "shipped with the job (only imported plain .py modules can); install it in the workers' Python "
                "environment (pip install) or use a .py module beside the notebook"
            )
        cloudpickle.register_pickle_by_value(module)
        _SHIPPED.add(name)
        shipped.append(name)
    return shipped
