"""The %%fullwindow grammar: valid lines give the documented Command, anything else one UsageError line.

Pure parser tests: no Spark starts here.
"""

import keyword
import string

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from IPython.core.error import UsageError

from fw_magics.magics.grammar import (
    AGGREGATES,
    Aggregate,
    AggregateCalls,
    Call,
    Command,
    Function,
    Map,
    Reduce,
    Sort,
    parse,
)
from tests.examples import examples

VALID = [
    ("sort field=price desc", Command((Sort((("price", "desc"),)),))),
    ("sort field=2", Command((Sort(((2, "asc"),)),))),
    ('sort field=customer ASC field="unit price" desc field=0',
     Command((Sort((("customer", "asc"), ("unit price", "desc"), (0, "asc"))),))),
    ('sort field="2"', Command((Sort((("2", "asc"),)),))),
    ("sort field=info.city", Command((Sort((("info.city", "asc"),)),))),
    ('map fn=top3 schema="customer string, price double"',
     Command((Map(Function("top3"), "customer string, price double"),))),
    ("map fn=helpers.top3", Command((Map(Function("helpers.top3")),))),
    ('map fn="lambda rs: [(sum(r.qty for r in rs),)]" schema=long',
     Command((Map(Function("lambda rs: [(sum(r.qty for r in rs),)]", is_lambda=True), "long"),))),
    ("reduce fn='lambda a, b: a if a.qty > b.qty else b'",
     Command((Reduce(Function("lambda a, b: a if a.qty > b.qty else b", is_lambda=True)),))),
    ("aggregate fn=Revenue", Command((Aggregate(Function("Revenue")),))),
    ('aggregate fn=revenue schema="total double"', Command((Aggregate(Function("revenue"), "total double"),))),
    ("aggregate sum(qty) count() count(*) max(price) percentile_approx(price, 0.5) first(name, true)",
     Command((AggregateCalls((
         Call("sum", ("qty",)), Call("count", ()), Call("count", ("*",)), Call("max", ("price",)),
         Call("percentile_approx", ("price", 0.5)), Call("first", ("name", True)),
     )),))),
    ('aggregate count_distinct( a , "b c" )', Command((AggregateCalls((Call("count_distinct", ("a", "b c")),)),))),
    ("sort field=price desc|map fn=top3 | aggregate sum(qty)",
     Command((Sort((("price", "desc"),)), Map(Function("top3")), AggregateCalls((Call("sum", ("qty",)),))))),
    ("sort field=price key=customer,city", Command((Sort((("price", "asc"),)),), key=("customer", "city"))),
    ('key="home city" sort field=price', Command((Sort((("price", "asc"),)),), key=("home city",))),
    ("sort field=1 --in df -o out --show 2 --explain",
     Command((Sort(((1, "asc"),)),), input="df", output="out", show=2, explain=True)),
    ("sort field=1 --show=0 -o=out", Command((Sort(((1, "asc"),)),), output="out", show=0)),
    ("  sort field=1 ;  ", Command((Sort(((1, "asc"),)),), silent=True)),
]


@pytest.mark.parametrize("line, command", VALID, ids=[line for line, _ in VALID])
def test_valid_lines_give_the_documented_command(line, command):
    assert parse(line) == command
    assert parse(str(command)) == command  # the canonical line reads back the same


ERRORS = [
    ("sortt field=price desc", "unknown operation 'sortt'; did you mean 'sort'?"),
    ("SORT field=price", "unknown operation 'SORT'; did you mean 'sort'?"),
    ("frobnicate", "unknown operation 'frobnicate'; operations are: sort, map, reduce, aggregate"),
    ("", "missing operation; expected one of: sort, map, reduce, aggregate"),
    ("sort field=price dsc", "unexpected 'dsc' in sort; did you mean 'desc'?"),
    ("sort feild=price", "unexpected 'feild=' in sort; did you mean 'field='?"),
    ("sort desc", "'desc' must follow a field"),
    ("sort", "sort needs field=F"),
    ("sort field=", "field= needs a 0-based position or a column name"),
    ("sort field=a asc desc", "two orders for field=a: 'asc' and 'desc'"),
    ("map fn=top3 schem='a int'", "unexpected 'schem=' in map; did you mean 'schema='?"),
    ("map schema='a int'", "map needs fn=NAME"),
    ("map fn=top3 fn=top4", "fn= given twice in map"),
    ("map fn=3x", "fn=3x: expected a function name"),
    ("map fn='top3 +'", "is not valid Python"),
    ("map fn='print(1)'", "a quoted fn= must be a lambda"),
    ("map fn=f schema=''", "schema= needs a DDL string"),
    ("reduce fn=f schema='a int'", "unexpected 'schema=' in reduce"),
    ("aggregate", "aggregate needs fn=NAME"),
    ("aggregate summ(qty)", "unknown aggregate 'summ'; did you mean 'sum'?"),
    ("aggregate sum", "write Spark aggregates as name(column)"),
    ("aggregate sum(qty) fn=Revenue", "use either fn=NAME or Spark aggregates"),
    ("aggregate fn=Revenue sum(qty)", "use either fn=NAME or Spark aggregates"),
    ("aggregate sum(qty,)", "empty item in"),
    ("aggregate sum(qty", "unclosed '('"),
    ("sort field=a)", "unmatched ')'"),
    ('sort field="a', "unclosed quote"),
    ('sort field=a"b"', "misplaced quote"),
    ("sort field=a |", "no operation after the last '|'"),
    ("| sort field=a", "no operation before the first '|'"),
    ("sort field=a || map fn=f", "no operation between two '|'"),
    ("sort field=a --expalin", "unknown option '--expalin'; did you mean '--explain'?"),
    ("sort field=a --explain=yes", "--explain takes no value"),
    ("sort field=a --explain --explain", "--explain given twice"),
    ("sort field=a -o", "-o needs a value: a Python variable name"),
    ("sort field=a -o class", "-o takes a Python variable name; got 'class'"),
    ("sort field=a --show many", "--show takes how many records"),
    ("sort field=a --show -1", "--show takes how many records"),
    ("sort field=a --show ²", "--show takes how many records"),
    ("sort field=a key=", "key= needs column name(s)"),
    ("sort field=a key=b key=c", "key= given twice"),
    ("sort field=a key=b,,c", "empty item in"),
    ("sort field=a --in", "--in needs a value"),
]


@pytest.mark.parametrize("line, message", ERRORS, ids=[line or "<empty>" for line, _ in ERRORS])
def test_mistakes_are_one_line_naming_the_token(line, message):
    with pytest.raises(UsageError) as caught:
        parse(line)
    assert message in str(caught.value)
    assert "\n" not in str(caught.value)


# -- properties --------------------------------------------------------------------------

VOCABULARY = [
    "sort", "map", "reduce", "aggregate", "field=", "fn=", "schema=", "key=", "asc", "desc", "-o", "--show",
    "--explain", "--in", "|", "sum(", "count()", ")", "(", ",", '"', "'", "\\", "=", ";", "price", "2", "-1",
    "lambda r: r", " ", "  ", "\t", "\n", "*", "true", "1.5e3",
]
lines = st.text(max_size=60) | st.lists(st.sampled_from(VOCABULARY), max_size=14).map("".join) | st.lists(
    st.sampled_from(VOCABULARY) | st.text(string.printable, max_size=4), max_size=10
).map(" ".join)


@settings(max_examples=examples(1500), deadline=None)
@given(lines)
def test_any_line_parses_or_raises_one_usage_error_line(line):
    try:
        command = parse(line)
    except UsageError as error:
        message = str(error)
        assert message and "\n" not in message, message
    else:
        assert isinstance(command, Command) and command.stages
        assert parse(str(command)) == command


identifiers = st.from_regex(r"[A-Za-z_][A-Za-z0-9_]{0,8}", fullmatch=True).filter(lambda s: not keyword.iskeyword(s))
names = identifiers | st.text(min_size=1, max_size=8)  # any column name: spaces, quotes, unicode
fields = st.integers(0, 50) | names
functions = identifiers.map(Function) | st.sampled_from(
    ["lambda rs: rs", "lambda a, b: a if a.x > b.x else b", 'lambda rs: [(r["a b"],) for r in rs]']
).map(lambda text: Function(text, is_lambda=True))
schemas = st.none() | st.text(min_size=1, max_size=20).filter(str.strip)
arguments = names | st.just("*") | st.integers(-5, 10**6) | st.floats(-1e6, 1e6, allow_nan=False) | st.booleans()
stages = st.one_of(
    st.builds(Sort, st.lists(st.tuples(fields, st.sampled_from(["asc", "desc"])), min_size=1, max_size=3).map(tuple)),
    st.builds(Map, functions, schemas),
    st.builds(Reduce, functions),
    st.builds(Aggregate, functions, schemas),
    st.builds(AggregateCalls, st.lists(
        st.builds(Call, st.sampled_from(AGGREGATES), st.lists(arguments, max_size=3).map(tuple)), min_size=1, max_size=3
    ).map(tuple)),
)
commands = st.builds(
    Command, st.lists(stages, min_size=1, max_size=4).map(tuple),
    key=st.none() | st.lists(names, min_size=1, max_size=2).map(tuple),
    output=st.none() | identifiers, show=st.integers(0, 1000), explain=st.booleans(),
    input=st.none() | identifiers, silent=st.booleans(),
)


@settings(max_examples=examples(400), deadline=None)
@given(commands)
def test_every_command_reads_back_from_its_canonical_line(command):
    assert parse(str(command)) == command


def test_aggregate_names_are_pyspark_functions():
    from pyspark.sql import functions as F

    assert [name for name in AGGREGATES if not callable(getattr(F, name, None))] == []


LONG = "x" * 300


@pytest.mark.parametrize("line", [
    LONG, f"sort field=a --{LONG}", f"sort field=a -o 1{LONG}", f"sort field=a --show {'9' * 300}",
    f'sort field="{LONG}', f"sort field=a{LONG})", f"sort field=a{LONG}\"b\"", f"sort field=a {LONG}",
    f"sort field=a {LONG}=1", f"map fn={LONG}+", f"aggregate {LONG}(a)", f"aggregate sum(a,,{LONG})",
    f"sort field=a --explain={LONG}", f"sort field=a key={LONG}'b'",
])
def test_a_long_token_is_cut_in_the_message(line):
    with pytest.raises(UsageError) as caught:
        parse(line)
    message = str(caught.value)
    assert "..." in message and len(message) < 250 and "\n" not in message, message
