"""The one-line error for misused operator state, its redistribution and its documents."""

from . import FullWindowError


class StateError(FullWindowError):
    """A misuse of operator state, reported as one line naming the culprit and what is accepted.

    It is a :class:`fw_magics.FullWindowError`, hence a ``ValueError``.
    """


def show(value, limit: int = 60) -> str:
    """``repr(value)`` cut to ``limit`` characters, for naming a culprit in one line."""
    text = repr(value)
    return text if len(text) <= limit else text[: limit - 3] + "..."


def type_name(value) -> str:
    """The type of ``value`` as a user would write it: ``set``, ``decimal.Decimal``, ``numpy.float64``."""
    kind = type(value)
    return kind.__qualname__ if kind.__module__ == "builtins" else f"{kind.__module__}.{kind.__qualname__}"
