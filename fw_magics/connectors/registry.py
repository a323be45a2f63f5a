"""Every kind of source with a backlog, by the name its step's detail and its records carry.

A new source is one folder of ``fw_magics/connectors`` (its ``source.py``: a ``base.OneInput``) and
one line in ``KINDS`` below. Whatever the rest of fw-magics asks about sources, it asks here or asks
the source itself, never which kind it is: making the source of a step (``source_for``), whether a step
is read straight from a source with a backlog (``is_backlog_source``), how a recorded description
differs from a source's (``source_change``), and a savepoint's position, read from disk without a
source at hand: checked by its own kind's codec (``check_saved_position``), in words
(``position_in_words``), its document's fields (``position_document_fields``, ``check_position_fields``),
its splits against it (``check_saved_splits``) and where each input reads (``places``).
"""

from __future__ import annotations

import functools

from ..errors import FullWindowError, did_you_mean
from .base import Composite, OneInput, Source
from .files.source import FilesSource
from .postgres.source import TableSource
from .postgres_cdc.source import ChangesSource
from .two_inputs.source import ConnectedSource

#: Every kind, by its name (the ``"source"`` of a step's detail, the ``"kind"`` of a description).
KINDS: dict[str, type[Source]] = {cls.kind: cls for cls in (FilesSource, TableSource, ChangesSource, ConnectedSource)}
#: The kind whose codec checks a savepoint's position when its description names no kind registered
#: here (a forged or future document), as fw-magics did before kinds had a registry: a restore then
#: refuses it as another source (``source_change``).
UNNAMED = FilesSource
_ONE_INPUT = [cls for cls in KINDS.values() if issubclass(cls, OneInput)]
_COMPOSITE = [cls for cls in KINDS.values() if issubclass(cls, Composite)]


def source_class(kind) -> type[Source]:
    """The class of source ``kind``; one line naming it and the kinds there are when there is none."""
    cls = KINDS.get(kind) if isinstance(kind, str) else None
    if cls is None:
        hint = did_you_mean(kind, list(KINDS), form=" (did you mean {!r}?)") if isinstance(kind, str) else ""
        raise FullWindowError(f"no source kind {kind!r:.60}{hint}; accepted: {', '.join(KINDS)}")
    return cls


def source_for(detail: dict, schema) -> Source | None:
    """The source a source step's ``detail`` describes (of one input or made of several), or None for a
    step that is not read from a source with a backlog (a DataFrame, records, a derived stream)."""
    cls = KINDS.get(detail.get("source"))
    if cls is None:
        return None
    if issubclass(cls, Composite):
        return cls(detail, schema, [source_for(d, s) for d, s in cls.input_details(detail)])
    return cls(detail, schema)


def kept_on_server(described, root: str) -> str | None:
    """What the stopped job in ``root``, whose source its log described as ``described`` (untrusted), keeps on a
    server (a replication slot: the server keeps its log for it), as a clause, or None; of a job of two inputs,
    what the first input that keeps something keeps."""
    cls = KINDS.get(described.get("kind")) if isinstance(described, dict) else None
    if cls is None or not issubclass(cls, Composite):
        return None if cls is None else cls.kept_on_server_as(described, root)
    parts = described.get(cls.PARTS)
    return next(filter(None, (kept_on_server(part, cls.input_root(root, i)) for i, part in enumerate(parts))), None) \
        if isinstance(parts, list) else None


def is_backlog_source(detail: dict) -> bool:
    """Whether a step's ``detail`` is read straight from one source with a backlog (``fw.from_files``,
    ``fw.from_table``): what a two-input or a non-keyed operator takes as an input."""
    return any(detail.get("source") == cls.kind for cls in _ONE_INPUT)


def source_of(stateful) -> Source:
    """The backlog source of a StatefulStream, or a one-line error when its input has none."""
    step = stateful.source.step.lineage()[0]
    source = source_for(step.detail, stateful.source.schema)
    if source is None:
        raise FullWindowError(
            f"start() runs a keyed operator over a source with a backlog: fw.from_files(...) or fw.from_table(...); "
            f"{stateful.source.name!r} is a {step.detail.get('source', 'derived')} stream"
        )
    return source


def source_change(recorded: dict, now: dict) -> str | None:
    """How the source described as ``now`` differs from the one a job or a savepoint recorded, in
    words ("its path was '/a', now '/b'"), or None. A key the kind added since (``ADDED_SINCE``: a
    ``glob``) missing from a record is the one an older fw-magics read with, not a difference; a
    composite's inputs are compared each as its own kind ("input 2: ...")."""
    cls = KINDS.get(now.get("kind"), Source)
    for key, value in now.items():
        if key not in recorded and key in cls.ADDED_SINCE:
            continue
        if issubclass(cls, Composite) and key == cls.PARTS and isinstance(recorded.get(key), list) \
                and len(recorded[key]) == len(value):
            for number, (was, is_now) in enumerate(zip(recorded[key], value), start=1):
                change = source_change(was if isinstance(was, dict) else {}, is_now)
                if change is not None:
                    return f"input {number}: {change}"
            continue
        if recorded.get(key) != value:
            return f"its {key} was {recorded.get(key)!r:.200}, now {value!r:.200}"
    return None


# -- a savepoint's position, read from disk: each kind's codec ------------------------------------------


def _codec(described: dict) -> type[Source]:
    return KINDS.get(described.get("kind"), UNNAMED)


def check_saved_position(doc, described: dict, where: str, error) -> dict:
    """A savepoint's source position ``doc`` checked as the source ``described`` (its ``describe()``)
    writes it: a composite's (``{"inputs": [...]}``) each input's as its own kind writes it."""
    cls = _codec(described)
    if issubclass(cls, Composite):
        parts = cls.described_parts(described)
        own = cls.split_position(doc, len(parts), where, error)
        return cls.joined([check_saved_position(p, d, f"{where} (input {number})", error)
                           for number, (p, d) in enumerate(zip(own, parts), start=1)])
    return cls.check_position(doc, where, error)


def check_saved_splits(operator_state: dict, names: list, described: dict, position: dict, where: str,
                       error) -> None:
    """The splits each source operator (``names``: the graph's, in order) holds in a savepoint's
    ``operator_state`` agree with the checked ``position`` of its input (each kind's ``check_splits``)."""
    cls = _codec(described)
    parts = cls.described_parts(described) if issubclass(cls, Composite) else [described]
    positions = position[cls.PARTS] if issubclass(cls, Composite) else [position]
    if len(names) != len(parts):
        raise error(f"{where} has {len(names)} source operators in its graph for {len(parts)} inputs; the "
                    "savepoint is damaged")
    for number, (name, part, own) in enumerate(zip(names, parts, positions), start=1):
        snapshots = operator_state.get(name)
        if snapshots is None:
            raise error(f"{where} has no state for the source {name!r}")
        at = where if len(names) == 1 else f"{where} (input {number})"
        _codec(part).check_splits(snapshots, own, at, error)


def position_in_words(described: dict, position: dict) -> str:
    """A checked position of the source ``described``, in words; a composite's, each input's."""
    cls = _codec(described)
    if issubclass(cls, Composite):
        return "; ".join(position_in_words(d, p)
                         for d, p in zip(cls.described_parts(described), position[cls.PARTS]))
    return cls.position_in_words(position)


def position_document_fields() -> dict:
    """The fields a savepoint's document may hold about how far its source read, of every kind:
    name -> (what it accepts, its check)."""
    return {name: field for cls in _ONE_INPUT for name, field in cls.POSITION_FIELDS.items()}


def check_position_fields(document: dict, position: dict, where: str, error) -> None:
    """Each such field the ``document`` holds agrees with the ``position`` it holds (its kind checks it)."""
    for cls in _ONE_INPUT:
        cls.check_position_fields(document, position, where, error)


def places(described: dict) -> list:
    """What each one-input source in ``described`` names as where it reads (its ``PLACE``: a path, a
    table; the first of them it has), unchecked: a savepoint's document is untrusted."""
    inputs = next((described[cls.PARTS] for cls in _COMPOSITE if cls.PARTS in described), [described])
    return [functools.reduce(lambda found, cls: found or d.get(cls.PLACE), _ONE_INPUT, None) for d in inputs]


#: What a source's description in a savepoint's document accepts, in words.
DESCRIBED = ("an object describing the source, with its "
             + " or ".join(repr(cls.PLACE) for cls in _ONE_INPUT)
             + "".join(f", or {cls.PARTS_IN_WORDS}" for cls in _COMPOSITE))
