"""Restoring a savepoint into changed code: the one verdict on each keyed state, and what it asks of the data.

A savepoint records what its function declared (``declared.FIELD``: each state's name, kind and type); the
restoring function declares its own. States are matched by descriptor name (Flink's rule) and each gets a
``Change``:

* ``carried``: the same kind and type;
* ``widened``: a compatible type change: an integer to a wider integer (int -> long), float -> double, a
  struct that gains fields (null in every restored value) or whose fields widen, lists and map values of
  those;
* ``new``: declared now, not recorded: starts empty for every key;
* ``dropped``: recorded, not declared now, and the restore allows it (``allow_non_restored_state=True``,
  Flink's flag): its values are removed from every key;
* ``refused``: another kind, a type changed otherwise (narrowed, another type, a struct field gone), or a
  state that vanished without the flag.

``verdict(recorded, now, allow)`` compares the two declarations once; ``start(from_savepoint=)`` and
``fw.check_savepoint`` both ask it. Its ``refusal`` is the one line a restore raises; ``rewrites`` says
whether the stored states change form (a struct's fields are stored by position, a dropped state's values
are removed), and ``upgrade(doc)`` is that change for one key's state document, pure JSON to JSON.
Widening needs no rewrite: a JSON number is the same for int and long, float and double.

An operator's **operator state** (a ``CheckpointedFunction``'s list, union list and broadcast states) gets its
own rows from ``operator_verdict``, by name and mode (what the savepoint's snapshots hold, what the restoring
function's ``initialize_state`` asks for): ``carried`` (the same mode; or not asked for: restored into the
store and saved again, as Flink does), ``new``, ``refused`` (another mode: the store would refuse it in the
tasks), and, for a function that keeps no operator state any more, ``refused`` or ``dropped`` with the flag.

Pure: pyarrow types only, no Spark session.
"""

from __future__ import annotations

import enum
from dataclasses import dataclass, field

import pyarrow as pa

from ....api.state import StateKind


class Change(str, enum.Enum):
    CARRIED = "carried"
    WIDENED = "widened"
    NEW = "new"
    DROPPED = "dropped"
    REFUSED = "refused"

    def __str__(self) -> str:
        return self.value


@dataclass(frozen=True)
class Row:
    """One state's verdict: its name, what was recorded and what is declared now (in words, "" for none),
    the change, and why it is refused (or how a state nothing declares now is carried; "" otherwise)."""

    state: str
    recorded: str
    now: str
    verdict: Change
    why: str = ""


#: What a type may become and be carried, as a refusal says it.
CARRIED = "carried are int -> long, float -> double and a struct gaining a field"
#: The columns of ``fw.check_savepoint``'s table.
COLUMNS = ("state", "recorded", "now", "verdict")


def value_type(state_type) -> pa.DataType | None:
    """A declared ``StateType``'s values as one Arrow type (a record's: a struct of its fields); None: JSON."""
    if state_type is None or state_type.ddl is None or state_type.arrow_schema is None:
        return None
    schema = state_type.arrow_schema
    return pa.struct(list(schema)) if state_type.record else schema.field(0).type


def in_words(kind, state_type) -> str:
    """"value bigint", "list struct<a:bigint,b:string>", "value JSON": Spark's names where the type has them."""
    if state_type is None or state_type.ddl is None:
        return f"{kind} JSON"
    spark = tuple(state_type.spark_types or ())
    names = state_type.names
    if spark and hasattr(spark[0], "simpleString"):
        if state_type.record:
            ddl = "struct<" + ",".join(f"{n}:{t.simpleString()}" for n, t in zip(names, spark)) + ">"
        else:
            ddl = spark[0].simpleString()
    else:
        ddl = str(value_type(state_type))
    return f"{kind} {ddl}"


class _Refused(Exception):
    pass


def _identity(data):
    return data


def _converter(old: pa.DataType, new: pa.DataType, where: str):
    """(whether ``old`` -> ``new`` widens, a function of a stored JSON form of ``old`` giving ``new``'s, or None
    when the form is the same); ``_Refused`` (its words) for an incompatible change."""
    t = pa.types
    if old == new:
        return False, None
    if t.is_signed_integer(old) and t.is_signed_integer(new) and new.bit_width >= old.bit_width:
        return True, None
    if t.is_floating(old) and t.is_floating(new) and new.bit_width >= old.bit_width:
        return True, None
    if t.is_struct(old) and t.is_struct(new):
        olds = {old.field(i).name: (i, old.field(i).type) for i in range(old.num_fields)}
        news = [new.field(i) for i in range(new.num_fields)]
        gone = [name for name in olds if new.get_field_index(name) < 0]
        if gone:
            raise _Refused(f"field {where + '.' if where else ''}{gone[0]} is gone")
        parts, widened, same_form = [], len(news) > len(olds), [f.name for f in news] == list(olds)
        for f in news:
            if f.name in olds:
                index, was = olds[f.name]
                wider, inner = _converter(was, f.type, f"{where}.{f.name}".lstrip("."))
                widened, same_form = widened or wider, same_form and inner is None
                parts.append((index, inner or _identity))
            else:
                parts.append((None, None))
        if same_form:
            return widened, None

        def one(data):
            return None if data is None else [None if i is None else part(data[i]) if i < len(data) else None
                                               for i, part in parts]
        return widened, one
    if (t.is_list(old) or t.is_large_list(old)) and (t.is_list(new) or t.is_large_list(new)):
        widened, inner = _converter(old.value_type, new.value_type, f"{where}[]" if where else "")
        return widened, None if inner is None else (lambda data: None if data is None else [inner(v) for v in data])
    if t.is_map(old) and t.is_map(new):
        if old.key_type != new.key_type:
            raise _Refused(f"field {where}'s map key is another type" if where else "its map key is another type")
        widened, inner = _converter(old.item_type, new.item_type, f"{where}{{}}" if where else "")
        return widened, None if inner is None else (
            lambda data: None if data is None else [[k, inner(v)] for k, v in data])
    raise _Refused(f"field {where} is another type" if where else "another type")


@dataclass
class Upgrade:
    """The verdict on every state, and the rewrite it asks of each key's state document."""

    rows: list
    operator: str = "the function"
    dropped: tuple = ()
    convert: dict = field(default_factory=dict)  # (kind, name) -> a JSON form's converter

    @property
    def refused(self) -> list:
        return [r for r in self.rows if r.verdict is Change.REFUSED]

    @property
    def refusal(self) -> str | None:
        """The one line a restore raises, naming the first refused state and what was recorded; None: restorable."""
        bad = self.refused
        if not bad:
            return None
        row = bad[0]
        more = f" (and {len(bad) - 1} more)" if len(bad) > 1 else ""
        return (f"holds state {row.state!r} recorded as {row.recorded}, which {self.operator} {row.why}{more}; "
                "fw.check_savepoint(path, stream) shows every state's verdict")

    @property
    def rewrites(self) -> bool:
        """Whether a key's stored state changes form (a state dropped, a struct's fields changed)."""
        return bool(self.dropped or self.convert)

    def upgrade(self, doc: dict) -> dict:
        """One key's state document (``{"v": ..., "l": ..., "t": ...}``) in the restoring function's form."""
        out = dict(doc)
        for letter, kind in (("v", StateKind.VALUE), ("l", StateKind.LIST)):
            named = doc.get(letter)
            if not named:
                continue
            kept = {}
            for name, stored in named.items():
                if name in self.dropped:
                    continue
                convert = self.convert.get((kind, name))
                if convert is not None:
                    stored = convert(stored) if kind is StateKind.VALUE else [convert(v) for v in stored]
                kept[name] = stored
            if kept:
                out[letter] = kept
            else:
                out.pop(letter)
        return out


def verdict(recorded: dict, now: dict, allow_non_restored_state: bool = False,
            operator: str = "the function") -> Upgrade:
    """Each state of ``recorded`` (what the savepoint's function declared) and ``now`` (what the restoring one
    declares), both name -> (kind, ``StateType`` or None: JSON), in name order."""
    rows, dropped, convert = [], [], {}
    for name in sorted(set(recorded) | set(now)):
        was, is_ = recorded.get(name), now.get(name)
        before = "" if was is None else in_words(str(was[0]), was[1])
        after = "" if is_ is None else in_words(str(is_[0]), is_[1])
        if was is None:
            rows.append(Row(name, before, after, Change.NEW))
            continue
        if is_ is None:
            if allow_non_restored_state:
                dropped.append(name)
                rows.append(Row(name, before, after, Change.DROPPED))
            else:
                rows.append(Row(name, before, after, Change.REFUSED,
                                "no longer declares (allow_non_restored_state=True drops it)"))
            continue
        if str(was[0]) != str(is_[0]):
            rows.append(Row(name, before, after, Change.REFUSED, f"declares as {after} (another kind)"))
            continue
        old, new = value_type(was[1]), value_type(is_[1])
        if (old is None) != (new is None):
            rows.append(Row(name, before, after, Change.REFUSED, f"declares as {after} (JSON values and typed "
                                                                  "ones are not converted)"))
            continue
        if old is None:
            rows.append(Row(name, before, after, Change.CARRIED))
            continue
        try:
            widened, one = _converter(old, new, "")
        except _Refused as why:
            rows.append(Row(name, before, after, Change.REFUSED, f"declares as {after} ({why}; {CARRIED})"))
            continue
        if one is not None:
            convert[(StateKind(str(was[0])), name)] = one
        rows.append(Row(name, before, after, Change.WIDENED if widened else Change.CARRIED))
    return Upgrade(rows, operator, tuple(dropped), convert)


#: An operator state's mode in words ("recorded" and "now" in ``fw.check_savepoint``'s table).
OPERATOR_KINDS = {"split": "operator list state", "union": "operator union list state",
                  "broadcast": "operator broadcast state"}


def operator_verdict(recorded: dict, declared: dict | None, allow_non_restored_state: bool = False,
                     operator: str = "the function", other_mode: str | None = None) -> Upgrade:
    """Each operator state of ``recorded`` (name -> mode: what a savepoint's snapshots of ``operator`` hold) and
    ``declared`` (name -> mode: what the restoring function's ``initialize_state`` asks for; None: the function
    keeps no operator state), in name order. ``other_mode``: the mode of a state the function keeps by any
    name without asking for it in ``initialize_state`` (a broadcast input's broadcast states)."""
    rows, dropped = [], []
    for name in sorted(set(recorded) | set(declared or {})):
        was, is_ = recorded.get(name), (declared or {}).get(name)
        before, after = OPERATOR_KINDS.get(was, ""), OPERATOR_KINDS.get(is_, "")
        if declared is None:
            if allow_non_restored_state:
                dropped.append(name)
                rows.append(Row(name, before, after, Change.DROPPED))
            else:
                rows.append(Row(name, before, after, Change.REFUSED, "no longer keeps (its function has no "
                                "initialize_state and snapshot_state; allow_non_restored_state=True drops it)"))
        elif was is None:
            rows.append(Row(name, before, after, Change.NEW))
        elif is_ is None and was == other_mode:
            rows.append(Row(name, before, OPERATOR_KINDS[was], Change.CARRIED))
        elif is_ is None:
            rows.append(Row(name, before, after, Change.CARRIED, "initialize_state does not ask for it: restored "
                            "into the store and saved again, as in Flink"))
        elif was != is_:
            rows.append(Row(name, before, after, Change.REFUSED, f"asks for as {after} (another mode; a state "
                            "keeps its mode across a restore)"))
        else:
            rows.append(Row(name, before, after, Change.CARRIED))
    return Upgrade(rows, operator, tuple(dropped))
