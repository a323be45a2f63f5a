"""The verbs a stream offers that run it: ``DataStream.execute()`` and ``.start()`` of a running operator.

A stream (``fw_magics.datastream``, layer 3) knows what it is, not how it runs: ``execute()`` is the
runtime's (layer 4), ``start()`` the streaming side's (layer 5). Rather than reach up to them, a
stream calls the verb by name here, and the package facade (``fw_magics/__init__.py``, on top of
every layer) provides each verb's implementation when the package is imported, with a late import
so that ``import fw_magics`` stays free of Spark. Nothing here imports anything of fw-magics.
"""

from __future__ import annotations

from collections.abc import Callable

_provided: dict[str, Callable] = {}


def provide(verb: str, implementation: Callable) -> None:
    """Make ``implementation`` what ``call(verb, ...)`` runs (the facade does, once)."""
    _provided[verb] = implementation


def call(verb: str, *args, **options):
    """Run ``verb``'s implementation; an internal error if nothing provides it."""
    implementation = _provided.get(verb)
    if implementation is None:
        raise RuntimeError(f"fw-magics: nothing provides {verb}() (the package facade fw_magics/__init__.py does)")
    return implementation(*args, **options)
