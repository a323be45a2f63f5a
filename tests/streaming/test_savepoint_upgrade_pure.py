"""Issue 50, item 3, without Spark: the one verdict on a savepoint's states against a changed function.

``upgrade.verdict`` compares what a savepoint recorded its function declared (through its document's
``states``, as ``declared.record``/``parse`` carry them) with what the restoring function declares; a tiny
model here says, from types written as tuples, what each change must be (Flink's rule: matched by name, a
new state empty, int -> long, float -> double and a struct gaining a field carried, anything else refused, a
vanished state refused unless dropped on purpose). On random declarations (hypothesis) the verdict must be
the model's, and a value stored by the recorded type's codec, upgraded, must decode under the new type to
the model's value (fields matched by name, a new field null).
"""

from __future__ import annotations

import json

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from pyspark.sql import types as T

from fw_magics.operators.spec import StateType, codec_for
from fw_magics.runtime.streaming.savepoints import declared
from fw_magics.runtime.streaming.savepoints.upgrade import Change, verdict
from fw_magics.values.schema import arrow_schema

# -- types as tuples, and the model ------------------------------------------------------------------

ATOMS = ("int", "long", "float", "double", "string")
SPARK = {"int": T.IntegerType(), "long": T.LongType(), "float": T.FloatType(), "double": T.DoubleType(),
         "string": T.StringType()}
WIDER = {("int", "long"), ("float", "double")}
NAMES = ("a", "b", "c", "d")


def spark_of(t):
    if t[0] == "struct":
        return T.StructType([T.StructField(n, spark_of(f)) for n, f in t[1]])
    if t[0] == "list":
        return T.ArrayType(spark_of(t[1]))
    return SPARK[t[0]]


def state_type(t) -> StateType | None:
    if t is None:
        return StateType(ddl=None)
    dtype = spark_of(t)
    struct = T.StructType([T.StructField("value", dtype)])
    return StateType(ddl=dtype.simpleString(), arrow_schema=arrow_schema(struct), spark_types=(dtype,))


def model(old, new) -> str:
    """'carried', 'widened' or 'refused' for a value type ``old`` declared now as ``new`` (None: JSON)."""
    if old is None or new is None:
        return "carried" if old is new else "refused"
    if old == new:
        return "carried"
    if (old[0], new[0]) in WIDER:
        return "widened"
    if old[0] == new[0] == "list":
        return model(old[1], new[1])
    if old[0] == new[0] == "struct":
        olds, news = dict(old[1]), dict(new[1])
        if not set(olds) <= set(news):
            return "refused"
        inner = [model(t, news[n]) for n, t in olds.items()]
        if "refused" in inner:
            return "refused"
        return "widened" if "widened" in inner or len(news) > len(olds) else "carried"
    return "refused"


def model_value(value, old, new):
    """The value ``value`` of ``old`` as ``new`` holds it (a struct as a dict: by name, new fields None)."""
    if value is None or old is None:
        return value
    if new[0] == "list":
        return [model_value(v, old[1], new[1]) for v in value]
    if new[0] == "struct":
        olds = dict(old[1])
        return {n: model_value(value.get(n), olds[n], t) if n in olds else None for n, t in new[1]}
    return float(value) if new[0] in ("float", "double") else value


def plain(value):
    """A decoded value (records for structs) as the model writes it."""
    if hasattr(value, "_fields"):
        return {n: plain(v) for n, v in zip(value._fields, value)}
    if isinstance(value, list):
        return [plain(v) for v in value]
    return value


# -- random types, their changes and values ----------------------------------------------------------

def types(depth=2):
    atom = st.sampled_from(ATOMS).map(lambda a: (a,))
    if depth == 0:
        return atom
    inner = types(depth - 1)
    struct = st.lists(st.tuples(st.sampled_from(NAMES), inner), min_size=1, max_size=3,
                      unique_by=lambda f: f[0]).map(lambda fs: ("struct", tuple(fs)))
    return st.one_of(atom, atom, struct, inner.map(lambda t: ("list", t)))


@st.composite
def changed(draw, t, depth=2):
    """``t`` as a function might declare it next: the same, widened, narrowed, another type, a struct with
    fields added, removed, moved or changed."""
    how = draw(st.sampled_from(["same", "same", "other", "widen", "narrow", "fields"]))
    if how == "same":
        return t
    if how == "other":
        return draw(types(depth))
    if how in ("widen", "narrow") and t[0] in ATOMS:
        pairs = WIDER if how == "widen" else {(b, a) for a, b in WIDER}
        return next(((b,) for a, b in pairs if a == t[0]), t)
    if t[0] == "list":
        return ("list", draw(changed(t[1], max(depth - 1, 0))))
    if t[0] == "struct":
        fields = [(n, draw(changed(f, max(depth - 1, 0)))) for n, f in t[1]]
        if draw(st.booleans()):
            fields = [f for f in fields if draw(st.booleans())] or fields[:1]
        added = [n for n in NAMES if n not in dict(fields) and draw(st.booleans())]
        fields += [(n, draw(types(0))) for n in added]
        return ("struct", tuple(draw(st.permutations(fields))))
    return t


def values(t):
    if t[0] == "int":
        return st.integers(-(2 ** 31), 2 ** 31 - 1)
    if t[0] == "long":
        return st.integers(-(2 ** 63), 2 ** 63 - 1)
    if t[0] in ("float", "double"):
        return st.integers(-(2 ** 20), 2 ** 20).map(lambda n: n / 4)  # exact in a float
    if t[0] == "string":
        return st.text(max_size=5)
    if t[0] == "list":
        return st.lists(st.none() | values(t[1]), max_size=3)
    return st.fixed_dictionaries({n: st.none() | values(f) for n, f in t[1]})


def recorded(states: dict) -> dict:
    """``states`` as a savepoint's document carries them: recorded, written as JSON, parsed back."""
    return declared.parse(json.loads(json.dumps(declared.record(states))))


KINDS = st.sampled_from(["value", "list"])


@st.composite
def declarations(draw):
    """(recorded, now): random states by name, some kept (maybe changed), some gone, some new."""
    before = draw(st.dictionaries(st.sampled_from(["s1", "s2", "s3", "s4"]), st.tuples(KINDS, st.none() | types()),
                                  max_size=4))
    after = {}
    for name, (kind, t) in before.items():
        fate = draw(st.sampled_from(["keep", "keep", "gone", "kind"]))
        if fate == "keep":
            after[name] = (kind, None if t is None or draw(st.integers(0, 9)) == 0 else draw(changed(t)))
        elif fate == "kind":
            after[name] = ("list" if kind == "value" else "value", t)
    for name in draw(st.lists(st.sampled_from(["n1", "n2"]), unique=True)):
        after[name] = (draw(KINDS), draw(st.none() | types()))
    return before, after


def as_states(decl: dict) -> dict:
    return {name: (kind, state_type(t)) for name, (kind, t) in decl.items()}


@settings(max_examples=150, deadline=None)
@given(declarations(), st.booleans())
def test_the_verdict_on_random_declarations_is_the_models(pair, allow):
    before, after = pair
    upgrade = verdict(recorded(as_states(before)), as_states(after), allow, "process(F)")
    got = {row.state: str(row.verdict) for row in upgrade.rows}
    want = {}
    for name in set(before) | set(after):
        if name not in before:
            want[name] = "new"
        elif name not in after:
            want[name] = "dropped" if allow else "refused"
        elif before[name][0] != after[name][0]:
            want[name] = "refused"
        else:
            want[name] = model(before[name][1], after[name][1])
    assert got == want
    assert [row.state for row in upgrade.rows] == sorted(want)
    refused = sorted(n for n, v in want.items() if v == "refused")
    if refused:
        assert upgrade.refusal.startswith(f"holds state {refused[0]!r} recorded as ") and "\n" not in upgrade.refusal
        assert upgrade.refusal.endswith("fw.check_savepoint(path, stream) shows every state's verdict")
    else:
        assert upgrade.refusal is None
    assert set(upgrade.dropped) == {n for n, v in want.items() if v == "dropped"}


@st.composite
def carried_values(draw):
    """(a type, what it becomes without a refusal, values of it)."""
    old = draw(types())
    new = draw(changed(old))
    while model(old, new) == "refused":
        new = draw(changed(old))
    return old, new, draw(st.lists(values(old), min_size=1, max_size=4))


@settings(max_examples=100, deadline=None)
@given(carried_values(), KINDS, st.booleans())
def test_a_carried_or_widened_state_decodes_under_the_new_type_as_the_model_says(case, kind, with_other):
    old, new, stored_values = case
    before, after = state_type(old), state_type(new)
    codec = codec_for(before, "old")
    stored = codec.encode_all(stored_values)
    doc = {"v": {"x": stored[0]}} if kind == "value" else {"l": {"x": stored}}
    if with_other:  # a state the function no longer declares, dropped on purpose
        doc.setdefault("v", {})["gone"] = 7
    states_before = {"x": (kind, before), **({"gone": ("value", state_type(("long",)))} if with_other else {})}
    upgrade = verdict(recorded(states_before), {"x": (kind, after)}, True)
    assert upgrade.refusal is None
    upgraded = json.loads(json.dumps(upgrade.upgrade(doc)))
    assert "gone" not in upgraded.get("v", {})
    now = codec_for(after, "new")
    got = [now.decode(v) for v in ([upgraded["v"]["x"]] if kind == "value" else upgraded["l"]["x"])]
    want = [model_value(v, old, new) for v in (stored_values[:1] if kind == "value" else stored_values)]
    assert [plain(v) for v in got] == want
    assert now.encode_all(got) == ([upgraded["v"]["x"]] if kind == "value" else upgraded["l"]["x"])  # a new value
    if not upgrade.rewrites:
        assert upgraded == doc  # no rewrite: the stored form is the new type's already


def test_hand_picked_changes_and_their_lines():
    rec = T.StructType([T.StructField("n", T.IntegerType()), T.StructField("name", T.StringType())])
    wider = T.StructType([T.StructField("n", T.LongType()), T.StructField("name", T.StringType()),
                          T.StructField("since", T.TimestampType())])

    def typed(dtype, record=False):
        struct = dtype if record else T.StructType([T.StructField("value", dtype)])
        return StateType(ddl=dtype.simpleString(), arrow_schema=arrow_schema(struct),
                         spark_types=tuple(f.dataType for f in struct.fields), record=record)

    before = recorded({"count": ("value", typed(T.IntegerType())), "who": ("value", typed(rec, record=True)),
                       "seen": ("list", StateType(ddl=None)), "avg": ("value", typed(T.FloatType()))})
    now = {"count": ("value", typed(T.LongType())), "who": ("value", typed(wider, record=True)),
           "seen": ("list", StateType(ddl=None)), "avg": ("value", typed(T.DoubleType())),
           "last": ("value", typed(T.StringType()))}
    upgrade = verdict(before, now, False, "process(Tally)")
    assert [(r.state, r.recorded, r.now, str(r.verdict)) for r in upgrade.rows] == [
        ("avg", "value float", "value double", "widened"),
        ("count", "value int", "value bigint", "widened"),
        ("last", "", "value string", "new"),
        ("seen", "list JSON", "list JSON", "carried"),
        ("who", "value struct<n:int,name:string>", "value struct<n:bigint,name:string,since:timestamp>", "widened"),
    ]
    assert upgrade.refusal is None and upgrade.rewrites  # the record's new field: stored by position
    assert upgrade.upgrade({"v": {"count": 3, "who": [3, "x"]}, "t": [9]}) == \
        {"v": {"count": 3, "who": [3, "x", None]}, "t": [9]}
    narrowed = verdict(recorded({"count": ("value", typed(T.LongType()))}), {"count": ("value", typed(T.IntegerType()))},
                       False, "process(Tally)")
    assert narrowed.refusal == (
        "holds state 'count' recorded as value bigint, which process(Tally) declares as value int (another type; "
        "carried are int -> long, float -> double and a struct gaining a field); fw.check_savepoint(path, stream) "
        "shows every state's verdict")
    gone = verdict(recorded({"count": ("value", typed(T.LongType()))}), {}, False, "process(Tally)")
    assert gone.refusal == (
        "holds state 'count' recorded as value bigint, which process(Tally) no longer declares "
        "(allow_non_restored_state=True drops it); fw.check_savepoint(path, stream) shows every state's verdict")
    lost = verdict(before, {**now, "who": ("value", typed(T.StructType(rec.fields[:1]), record=True))}, False, "p")
    assert "(field name is gone;" in lost.refusal
    kinds = verdict(before, {**now, "seen": ("value", StateType(ddl=None))}, False, "p")
    assert "which p declares as value JSON (another kind)" in kinds.refusal
    assert not verdict(before, {**now, "who": before["who"]}, False).rewrites  # widening alone: no rewrite


@pytest.mark.parametrize("old, new, widened", [
    (("int",), ("long",), True), (("float",), ("double",), True), (("list", ("int",)), ("list", ("long",)), True),
    (("struct", (("a", ("int",)), ("b", ("string",)))), ("struct", (("b", ("string",)), ("a", ("int",)))), False),
])
def test_moved_fields_are_carried_by_name(old, new, widened):
    upgrade = verdict(recorded({"s": ("value", state_type(old))}), {"s": ("value", state_type(new))})
    assert upgrade.rows[0].verdict is (Change.WIDENED if widened else Change.CARRIED)
