"""The ``%%fullwindow`` grammar: a pure parser from a magic's line to a Command.

No Spark and no user namespace here: names of functions and columns are kept as text
and resolved later (``build.py``), when the input and the notebook's variables are known.
Every problem is an IPython ``UsageError`` with one line that quotes the bad token and,
where one is close, suggests the valid word. The words themselves (the tokenizer, quoting,
names, functions, the option table) are ``words.py``'s, shared with ``%%fwstream``.

    line    := stage ('|' stage)* [option ...] [';']      options may stand anywhere
    stage   := sort (field=F [asc|desc])+
             | map fn=FN [schema=DDL]
             | reduce fn=FN
             | aggregate fn=FN [schema=DDL]
             | aggregate CALL+                             CALL: sum(price), count(), ...
    option  := key=COL[,COL...] | -o NAME | --show N | --explain | --graph | --in NAME
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from IPython.core.error import UsageError

from ..datastream.preview import DEFAULT_SHOW
from .words import (
    IDENTIFIER,
    PIPE,
    Function,
    Option,
    function,
    integer,
    key_text,
    name,
    name_text,
    option_words,
    quote,
    quoted,
    read_options,
    shortened,
    split_commas,
    split_semicolon,
    tokenize,
    unknown,
    unquote,
    variable_name,
    whole_number,
)

#: The options of a ``%%fullwindow`` line (besides ``key=``), in the order messages list them.
OPTION_TABLE = (
    Option("-o", "a Python variable name", variable_name),
    Option("--show", "how many records to preview per partition (a whole number, 0 or more)", whole_number("--show")),
    Option("--explain"),
    Option("--graph"),
    Option("--in", "the name of a variable holding the input", variable_name),
)
OPERATIONS = ("sort", "map", "reduce", "aggregate")
OPTIONS = tuple(option.name for option in OPTION_TABLE)
FLAGS = tuple(option.name for option in OPTION_TABLE if option.flag)  # options without a value
ORDERS = ("asc", "desc")

#: Spark's built-in aggregate functions the ``aggregate`` stage accepts by name; each is a
#: function of ``pyspark.sql.functions`` (a test checks that against the installed PySpark).
AGGREGATES = (
    "any_value", "approx_count_distinct", "array_agg", "avg", "bit_and", "bit_or", "bit_xor",
    "bool_and", "bool_or", "collect_list", "collect_set", "corr", "count", "count_distinct",
    "count_if", "covar_pop", "covar_samp", "every", "first", "first_value", "kurtosis", "last",
    "last_value", "max", "max_by", "mean", "median", "min", "min_by", "mode", "percentile",
    "percentile_approx", "product", "skewness", "some", "std", "stddev", "stddev_pop",
    "stddev_samp", "sum", "sum_distinct", "try_avg", "try_sum", "var_pop", "var_samp", "variance",
)

_ARGUMENTS = {"sort": ("field",), "map": ("fn", "schema"), "reduce": ("fn",), "aggregate": ("fn", "schema")}
_INTEGER = re.compile(r"[+-]?\d+\Z", re.ASCII)
_NUMBER = re.compile(r"[+-]?(\d+\.?\d*|\.\d+)([eE][+-]?\d+)?\Z", re.ASCII)


# -- the command --------------------------------------------------------------------------


@dataclass(frozen=True)
class Sort:
    keys: tuple[tuple[int | str, str], ...]  # (0-based position or column name, "asc" | "desc")

    def __str__(self) -> str:
        return "sort " + " ".join(f"field={name_text(field)} {order}" for field, order in self.keys)


@dataclass(frozen=True)
class Map:
    fn: Function
    schema: str | None = None

    def __str__(self) -> str:
        return f"map fn={self.fn}" + (f" schema={quote(self.schema)}" if self.schema is not None else "")


@dataclass(frozen=True)
class Reduce:
    fn: Function

    def __str__(self) -> str:
        return f"reduce fn={self.fn}"


@dataclass(frozen=True)
class Aggregate:
    """``aggregate fn=NAME``: an fw.AggregateFunction instance or class."""

    fn: Function
    schema: str | None = None

    def __str__(self) -> str:
        return f"aggregate fn={self.fn}" + (f" schema={quote(self.schema)}" if self.schema is not None else "")


@dataclass(frozen=True)
class Call:
    """One Spark built-in aggregate: ``sum(price)``; str args are columns ("*" for count)."""

    name: str
    args: tuple[str | int | float | bool, ...]

    def __str__(self) -> str:
        return f"{self.name}({', '.join(_argument_text(a) for a in self.args)})"


@dataclass(frozen=True)
class AggregateCalls:
    calls: tuple[Call, ...]

    def __str__(self) -> str:
        return "aggregate " + " ".join(map(str, self.calls))


Stage = Sort | Map | Reduce | Aggregate | AggregateCalls


@dataclass(frozen=True)
class Command:
    """What one ``%%fullwindow`` line asks for; ``str(command)`` is its canonical line."""

    stages: tuple[Stage, ...]
    key: tuple[str, ...] | None = None
    output: str | None = None
    show: int = DEFAULT_SHOW
    explain: bool = False
    graph: bool = False
    input: str | None = None
    silent: bool = False  # the line ended in ';'

    def __str__(self) -> str:
        parts = [" | ".join(map(str, self.stages))]
        if self.key is not None:
            parts.append(key_text(self.key))
        parts += option_words(OPTION_TABLE, [
            ("--in", self.input), ("-o", self.output), ("--show", None if self.show == DEFAULT_SHOW else self.show),
            ("--explain", self.explain), ("--graph", self.graph),
        ])
        return " ".join(parts) + (";" if self.silent else "")


# -- parsing ---------------------------------------------------------------------------


def parse(line: str) -> Command:
    """The Command for a magic's line, or a one-line UsageError naming the bad token."""
    text, silent = split_semicolon(line)
    options, words = read_options(tokenize(text), OPTION_TABLE)
    stages = tuple(_stage(group) for group in _split_stages(words))
    return Command(
        stages=stages, key=options.get("key"), output=options.get("-o"),
        show=options.get("--show", DEFAULT_SHOW), explain=options.get("--explain", False),
        graph=options.get("--graph", False),
        input=options.get("--in"), silent=silent,
    )


def _split_stages(words: list) -> list[list[str]]:
    groups: list[list[str]] = [[]]
    for word in words:
        if word is PIPE:
            groups.append([])
        else:
            groups[-1].append(word)
    if len(groups) == 1 and not groups[0]:
        raise UsageError(f"missing operation; expected one of: {', '.join(OPERATIONS)}")
    for number, group in enumerate(groups):
        if not group:
            where = "before the first" if number == 0 else "after the last" if number == len(groups) - 1 else "between two"
            raise UsageError(f"no operation {where} '|'; expected one of: {', '.join(OPERATIONS)}")
    return groups


def _stage(words: list[str]) -> Stage:
    operation, arguments = words[0], words[1:]
    if operation not in OPERATIONS:
        raise unknown(f"unknown operation {quoted(operation)}", operation, OPERATIONS, "operations are: " + ", ".join(OPERATIONS))
    if operation == "sort":
        return _sort(arguments)
    if operation == "aggregate" and arguments and not _keyword(arguments[0]):
        return _aggregate_calls(arguments)
    values = _keywords(operation, arguments)
    if "fn" not in values:
        also = " or Spark aggregates such as sum(qty) count()" if operation == "aggregate" else ""
        raise UsageError(f"{operation} needs fn=NAME (a function in the notebook or a quoted lambda){also}")
    fn = function(values["fn"])
    if operation == "reduce":
        return Reduce(fn)
    schema = _schema(values["schema"]) if "schema" in values else None
    return Map(fn, schema) if operation == "map" else Aggregate(fn, schema)


def _keyword(word: str) -> str | None:
    """The name of a ``name=value`` word (None for a bare word or a call)."""
    keyword, equals, _ = word.partition("=")
    return keyword if equals and IDENTIFIER.match(keyword) else None


def _keywords(operation: str, arguments: list[str]) -> dict[str, str]:
    accepted = _ARGUMENTS[operation]
    values: dict[str, str] = {}
    for word in arguments:
        keyword = _keyword(word)
        if keyword is None or keyword not in accepted:
            label = f"{keyword}=" if keyword else word
            if operation == "aggregate" and keyword is None and "(" in word:
                raise UsageError(f"unexpected {quoted(word)} in aggregate; use either fn=NAME or Spark aggregates such as sum(qty), not both")
            listing = f"{operation} takes: " + " ".join(f"{a}=" for a in accepted)
            raise unknown(f"unexpected {quoted(label)} in {operation}", label, [f"{a}=" for a in accepted] + ["key="], listing)
        if keyword in values:
            raise UsageError(f"{shortened(keyword)}= given twice in {operation}")
        values[keyword] = word[len(keyword) + 1:]
    return values


def _sort(arguments: list[str]) -> Sort:
    keys: list[tuple[int | str, str]] = []
    ordered = False  # whether the last field already has its asc/desc
    for word in arguments:
        keyword = _keyword(word)
        if keyword == "field":
            keys.append((_field(word[len("field="):]), "asc"))
            ordered = False
        elif keyword is None and word.lower() in ORDERS:
            if not keys:
                raise UsageError(f"{quoted(word)} must follow a field: sort field=F {word}")
            if ordered:
                raise UsageError(f"two orders for field={shortened(name_text(keys[-1][0]))}: "
                                 f"{quoted(keys[-1][1])} and {quoted(word)}")
            keys[-1] = (keys[-1][0], word.lower())
            ordered = True
        else:
            label = f"{keyword}=" if keyword else word
            raise unknown(f"unexpected {quoted(label)} in sort", label, ["field=", *ORDERS, "key="], "sort takes: field=F [asc|desc] ...")
    if not keys:
        raise UsageError("sort needs field=F (a 0-based position or a column name), e.g. sort field=price desc")
    return Sort(tuple(keys))


def _aggregate_calls(arguments: list[str]) -> AggregateCalls:
    calls = []
    for word in arguments:
        call, paren, rest = word.partition("(")
        if _keyword(word) is not None:
            raise UsageError(
                f"unexpected {quoted(word)} in aggregate; use either fn=NAME or Spark aggregates such as sum(qty), not both"
            )
        if not paren or not rest.endswith(")") or not IDENTIFIER.match(call):
            raise UsageError(f"unexpected {quoted(word)} in aggregate; write Spark aggregates as name(column), e.g. sum(qty) count() max(price)")
        if call not in AGGREGATES:
            raise unknown(f"unknown aggregate {quoted(call)}", call, AGGREGATES, "Spark aggregates include: sum, count, min, max, avg, collect_list, first")
        calls.append(Call(call, tuple(_call_argument(a, word) for a in split_commas(rest[:-1], word))))
    return AggregateCalls(tuple(calls))


def _call_argument(text: str, word: str) -> str | int | float | bool:
    """A column name (bare or quoted, "*"), or a number or true/false literal."""
    if text.lower() in ("true", "false"):
        return text.lower() == "true"
    if _NUMBER.match(text):
        return integer(text, f"argument of {shortened(word)}") if _INTEGER.match(text) else float(text)
    return name(text, f"argument of {quoted(word)}")


def _field(text: str) -> int | str:
    if not text:
        raise UsageError("field= needs a 0-based position or a column name, e.g. field=price or field=2")
    if _INTEGER.match(text):
        return integer(text, "field=")
    return name(text, "field name")


def _schema(text: str) -> str:
    value, _ = unquote(text)
    if not value.strip():
        raise UsageError('schema= needs a DDL string, e.g. schema="customer string, total double"')
    return value


# -- rendering the canonical line --------------------------------------------------------


def _argument_text(value: str | int | float | bool) -> str:
    if isinstance(value, bool):
        return str(value).lower()
    if isinstance(value, (int, float)):
        return repr(value)
    return value if value == "*" else name_text(value)
