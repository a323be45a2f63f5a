"""What every user function is, and the one check of a function handed to the API.

``Function`` (PyFlink's ``Function``) gives ``open(ctx)``, called once per parallel instance before
its first record, and ``close()``, after its last. Each kind of user function derives from it and
marks what a subclass must define with ``@abc.abstractmethod``. The bases are deliberately not
``abc.ABC``: a class that lacks a method can still be made (``Half()``); :func:`check_function`
refuses it where it is handed to the API, in one line naming the method and its parameters (an
``abc`` ``TypeError`` at construction would name neither the call that took it nor what to write).
"""

from __future__ import annotations

import inspect

from ..errors import FullWindowError
from .checkpointed import check_both_or_neither


class Function:
    """The base of every user function: ``open`` and ``close``, which do nothing unless overridden."""

    #: Whether a function of this kind may also be an ``fw.CheckpointedFunction`` (keep operator state):
    #: then it defines both of that class's methods or neither (``check_function`` says so in one line).
    may_keep_operator_state = False
    #: A required method that another one may stand in for, {"add": "add_batch"} (``AggregateFunction``).
    _instead: dict = {}

    def open(self, ctx) -> None:
        """Called once per parallel instance before any record (a keyed function declares its state here:
        ``ctx.get_state(fw.ValueStateDescriptor(...))``)."""

    def close(self) -> None:
        """Called once per parallel instance after its last record."""


def required_methods(base: type) -> list[str]:
    """The methods ``base`` marks ``@abc.abstractmethod``, in the order its classes declare them."""
    names: list[str] = []
    for cls in reversed(base.__mro__):
        names += [name for name, value in vars(cls).items()
                  if getattr(value, "__isabstractmethod__", False) and name not in names]
    return names


def signature(base: type, name: str) -> str:
    """``name(parameters)`` as ``base`` declares the method, without ``self``: "process_element(record, ctx)"."""
    parameters = list(inspect.signature(getattr(base, name)).parameters)[1:]
    return f"{name}({', '.join(parameters)})"


def missing_methods(cls: type, base: type) -> list[str]:
    """The methods ``base`` requires that ``cls`` leaves abstract, each as its signature (with what may stand in)."""
    missing = []
    for name in required_methods(base):
        instead = base._instead.get(name)
        if getattr(getattr(cls, name, None), "__isabstractmethod__", False) and \
                (instead is None or getattr(cls, instead, None) is None):
            missing.append(signature(base, name) + (f" (or {instead})" if instead else ""))
    return missing


def check_function(fn, base: type, takes: str) -> tuple:
    """``fn`` as the API takes it: an instance of ``base`` (a subclass of ``base`` is made, with no arguments)
    defining every method ``base`` requires and, where it may keep operator state, both
    ``CheckpointedFunction`` methods or neither. Returns (the function, its class's name); else one
    line: ``takes`` and what was given, or what the class must define."""
    if isinstance(fn, type) and issubclass(fn, base):
        fn = fn()
    if not isinstance(fn, base):
        raise FullWindowError(f"{takes}; got {type(fn).__name__} {fn!r:.60}")
    name = type(fn).__name__
    missing = missing_methods(type(fn), base)
    if missing:
        raise FullWindowError(f"{name} must define {', '.join(missing)}")
    if base.may_keep_operator_state:
        check_both_or_neither(fn, name)
    return fn, name
