"""The ``%%fullwindow`` grammar: a pure parser from a magic's line to a Command.

No Spark and no user namespace here: names of functions and columns are kept as text
and resolved later (``build.py``), when the input and the notebook's variables are known.
Every problem is an IPython ``UsageError`` with one line that quotes the bad token and,
where one is close, suggests the valid word.

    line    := stage ('|' stage)* [option ...] [';']      options may stand anywhere
    stage   := sort (field=F [asc|desc])+
             | map fn=FN [schema=DDL]
             | reduce fn=FN
             | aggregate fn=FN [schema=DDL]
             | aggregate CALL+                             CALL: sum(price), count(), ...
    option  := key=COL[,COL...] | -o NAME | --show N | --explain | --graph | --in NAME
"""

from __future__ import annotations

import ast
import keyword
import re
from dataclasses import dataclass

from IPython.core.error import UsageError

from ..errors import did_you_mean
from ..streams.preview import DEFAULT_SHOW

OPERATIONS = ("sort", "map", "reduce", "aggregate")
OPTIONS = ("-o", "--show", "--explain", "--graph", "--in")
FLAGS = ("--explain", "--graph")  # options without a value
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
_IDENTIFIER = re.compile(r"[A-Za-z_][A-Za-z0-9_]*\Z")
_INTEGER = re.compile(r"[+-]?\d+\Z", re.ASCII)
_NUMBER = re.compile(r"[+-]?(\d+\.?\d*|\.\d+)([eE][+-]?\d+)?\Z", re.ASCII)
_PIPE = object()  # the token between stages
#: How much of a user's token a message quotes; longer ones are cut with "...".
QUOTE_LIMIT = 60
#: The most digits an integer in a line may have (a position, a count, an argument).
MAX_DIGITS = 18


def quoted(text) -> str:
    """``text`` quoted for a message (``'price'``), cut to about QUOTE_LIMIT characters with "...".

    Every user token a ``%%fullwindow`` message quotes goes through here
    (or :func:`shortened`), so one long token cannot make a message long.
    """
    text = str(text)
    return repr(text if len(text) <= QUOTE_LIMIT else text[:QUOTE_LIMIT - 3] + "...")


def shortened(text) -> str:
    """``text`` as it is (unquoted) for a message, cut to about QUOTE_LIMIT characters with "..."."""
    text = str(text)
    return text if len(text) <= QUOTE_LIMIT else text[:QUOTE_LIMIT - 3] + "..."


def _integer(text: str, what: str) -> int:
    """A whole number of at most MAX_DIGITS digits, or a one-line UsageError."""
    if len(text.lstrip("+-")) > MAX_DIGITS:
        raise UsageError(f"{what} {quoted(text)} has {len(text.lstrip('+-'))} digits; accepted: at most {MAX_DIGITS}")
    return int(text)


# -- the command --------------------------------------------------------------------------


@dataclass(frozen=True)
class Function:
    """A user function: a (dotted) name in the notebook, or the source of a lambda."""

    text: str
    is_lambda: bool = False

    def __str__(self) -> str:
        return _quote(self.text) if self.is_lambda else self.text


@dataclass(frozen=True)
class Sort:
    keys: tuple[tuple[int | str, str], ...]  # (0-based position or column name, "asc" | "desc")

    def __str__(self) -> str:
        return "sort " + " ".join(f"field={_value(field)} {order}" for field, order in self.keys)


@dataclass(frozen=True)
class Map:
    fn: Function
    schema: str | None = None

    def __str__(self) -> str:
        return f"map fn={self.fn}" + (f" schema={_quote(self.schema)}" if self.schema is not None else "")


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
        return f"aggregate fn={self.fn}" + (f" schema={_quote(self.schema)}" if self.schema is not None else "")


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
            parts.append("key=" + ",".join(_value(k) for k in self.key))
        if self.input is not None:
            parts.append(f"--in {self.input}")
        if self.output is not None:
            parts.append(f"-o {self.output}")
        if self.show != DEFAULT_SHOW:
            parts.append(f"--show {self.show}")
        if self.explain:
            parts.append("--explain")
        if self.graph:
            parts.append("--graph")
        return " ".join(parts) + (";" if self.silent else "")


# -- parsing ---------------------------------------------------------------------------


def parse(line: str) -> Command:
    """The Command for a magic's line, or a one-line UsageError naming the bad token."""
    text = line.strip()
    silent = text.endswith(";")
    if silent:
        text = text[:-1]
    tokens = tokenize(text)
    options: dict = {}
    words: list = []
    position = 0
    while position < len(tokens):
        token = tokens[position]
        position += 1
        if token is _PIPE:
            words.append(token)
        elif token.startswith("key="):
            _once(options, "key", token)
            options["key"] = _key_columns(token[4:])
        elif token.startswith("-"):
            name, equals, inline = token.partition("=")
            if name not in OPTIONS:
                raise _unknown(f"unknown option {quoted(token)}", name, OPTIONS, "options are: key=COL, " + ", ".join(OPTIONS))
            if name in FLAGS:
                if equals:
                    raise UsageError(f"{name} takes no value; got {quoted(token)}")
                _once(options, name, token)
                options[name] = True
                continue
            if inline:
                value = inline
            elif position < len(tokens) and tokens[position] is not _PIPE:
                value = tokens[position]
                position += 1
            else:
                raise UsageError(f"{name} needs a value: {_OPTION_VALUE[name]}")
            _once(options, name, token)
            options[name] = _option_value(name, value)
        else:
            words.append(token)
    stages = tuple(_stage(group) for group in _split_stages(words))
    return Command(
        stages=stages, key=options.get("key"), output=options.get("-o"),
        show=options.get("--show", DEFAULT_SHOW), explain=options.get("--explain", False),
        graph=options.get("--graph", False),
        input=options.get("--in"), silent=silent,
    )


def _unknown(head: str, word: str, choices, listing: str) -> UsageError:
    """'HEAD; did you mean X?' when a choice is close, else 'HEAD; LISTING'."""
    return UsageError(head + did_you_mean(word, choices, otherwise=f"; {listing}"))


def tokenize(text: str) -> list:
    """Split on whitespace and '|', keeping quoted text and parentheses whole."""
    tokens: list = []
    current: list[str] = []
    depth = 0
    index = 0
    while index < len(text):
        char = text[index]
        if char in "\"'":
            end = _closing_quote(text, index)
            current.append(text[index:end + 1])
            index = end + 1
            continue
        if depth == 0 and (char.isspace() or char == "|"):
            if current:
                tokens.append("".join(current))
                current = []
            if char == "|":
                tokens.append(_PIPE)
        else:
            if char == "(":
                depth += 1
            elif char == ")":
                if depth == 0:
                    raise UsageError(f"unmatched ')' in {quoted(_word_at(text, index))}")
                depth -= 1
            current.append(char)
        index += 1
    if depth:
        raise UsageError(f"unclosed '(' in {quoted(''.join(current))}")
    if current:
        tokens.append("".join(current))
    return tokens


def _closing_quote(text: str, start: int) -> int:
    quote = text[start]
    index = start + 1
    while index < len(text):
        if text[index] == "\\":
            index += 2
            continue
        if text[index] == quote:
            return index
        index += 1
    raise UsageError(f"unclosed quote {quote} in {text[start:start + 30]!r}")


def _word_at(text: str, index: int) -> str:
    start = max(text.rfind(" ", 0, index), text.rfind("|", 0, index)) + 1
    return text[start:index + 1]


def _split_stages(words: list) -> list[list[str]]:
    groups: list[list[str]] = [[]]
    for word in words:
        if word is _PIPE:
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
        raise _unknown(f"unknown operation {quoted(operation)}", operation, OPERATIONS, "operations are: " + ", ".join(OPERATIONS))
    if operation == "sort":
        return _sort(arguments)
    if operation == "aggregate" and arguments and not _keyword(arguments[0]):
        return _aggregate_calls(arguments)
    values = _keywords(operation, arguments)
    if "fn" not in values:
        also = " or Spark aggregates such as sum(qty) count()" if operation == "aggregate" else ""
        raise UsageError(f"{operation} needs fn=NAME (a function in the notebook or a quoted lambda){also}")
    fn = _function(values["fn"])
    if operation == "reduce":
        return Reduce(fn)
    schema = _schema(values["schema"]) if "schema" in values else None
    return Map(fn, schema) if operation == "map" else Aggregate(fn, schema)


def _keyword(word: str) -> str | None:
    """The name of a ``name=value`` word (None for a bare word or a call)."""
    name, equals, _ = word.partition("=")
    return name if equals and _IDENTIFIER.match(name) else None


def _keywords(operation: str, arguments: list[str]) -> dict[str, str]:
    accepted = _ARGUMENTS[operation]
    values: dict[str, str] = {}
    for word in arguments:
        name = _keyword(word)
        if name is None or name not in accepted:
            label = f"{name}=" if name else word
            if operation == "aggregate" and name is None and "(" in word:
                raise UsageError(f"unexpected {quoted(word)} in aggregate; use either fn=NAME or Spark aggregates such as sum(qty), not both")
            listing = f"{operation} takes: " + " ".join(f"{a}=" for a in accepted)
            raise _unknown(f"unexpected {quoted(label)} in {operation}", label, [f"{a}=" for a in accepted] + ["key="], listing)
        if name in values:
            raise UsageError(f"{shortened(name)}= given twice in {operation}")
        values[name] = word[len(name) + 1:]
    return values


def _sort(arguments: list[str]) -> Sort:
    keys: list[tuple[int | str, str]] = []
    ordered = False  # whether the last field already has its asc/desc
    for word in arguments:
        name = _keyword(word)
        if name == "field":
            keys.append((_field(word[len("field="):]), "asc"))
            ordered = False
        elif name is None and word.lower() in ORDERS:
            if not keys:
                raise UsageError(f"{quoted(word)} must follow a field: sort field=F {word}")
            if ordered:
                raise UsageError(f"two orders for field={shortened(_value(keys[-1][0]))}: {keys[-1][1]!r} and {word!r}")
            keys[-1] = (keys[-1][0], word.lower())
            ordered = True
        else:
            label = f"{name}=" if name else word
            raise _unknown(f"unexpected {quoted(label)} in sort", label, ["field=", *ORDERS, "key="], "sort takes: field=F [asc|desc] ...")
    if not keys:
        raise UsageError("sort needs field=F (a 0-based position or a column name), e.g. sort field=price desc")
    return Sort(tuple(keys))


def _aggregate_calls(arguments: list[str]) -> AggregateCalls:
    calls = []
    for word in arguments:
        name, paren, rest = word.partition("(")
        if _keyword(word) is not None:
            raise UsageError(
                f"unexpected {quoted(word)} in aggregate; use either fn=NAME or Spark aggregates such as sum(qty), not both"
            )
        if not paren or not rest.endswith(")") or not _IDENTIFIER.match(name):
            raise UsageError(f"unexpected {quoted(word)} in aggregate; write Spark aggregates as name(column), e.g. sum(qty) count() max(price)")
        if name not in AGGREGATES:
            raise _unknown(f"unknown aggregate {quoted(name)}", name, AGGREGATES, "Spark aggregates include: sum, count, min, max, avg, collect_list, first")
        calls.append(Call(name, tuple(_call_argument(a, word) for a in _split_commas(rest[:-1], word))))
    return AggregateCalls(tuple(calls))


def _call_argument(text: str, word: str) -> str | int | float | bool:
    """A column name (bare or quoted, "*"), or a number or true/false literal."""
    if text.lower() in ("true", "false"):
        return text.lower() == "true"
    if _NUMBER.match(text):
        return _integer(text, f"argument of {shortened(word)}") if _INTEGER.match(text) else float(text)
    return _name(text, f"argument of {quoted(word)}")


def _split_commas(text: str, where: str) -> list[str]:
    """Comma-separated parts, commas inside quotes kept; no part may be empty."""
    if not text.strip():
        return []
    parts: list[str] = []
    current = ""
    index = 0
    while index < len(text):
        char = text[index]
        if char in "\"'":
            end = _closing_quote(text, index)
            current += text[index:end + 1]
            index = end + 1
            continue
        if char == ",":
            parts.append(current.strip())
            current = ""
        else:
            current += char
        index += 1
    parts.append(current.strip())
    if not all(parts):
        raise UsageError(f"empty item in {quoted(where)}")
    return parts


def _unquote(text: str) -> tuple[str, bool]:
    """The text inside matching quotes (backslash escapes resolved) and whether it was quoted."""
    if len(text) >= 2 and text[0] in "\"'" and text[-1] == text[0] and _closing_quote(text, 0) == len(text) - 1:
        return re.sub(r"\\(.)", r"\1", text[1:-1], flags=re.DOTALL), True
    return text, False


def _name(text: str, what: str) -> str:
    """A column name: bare, or quoted when it has spaces or punctuation."""
    value, was_quoted = _unquote(text)
    if not was_quoted and any(q in value for q in "\"'"):
        raise UsageError(f"misplaced quote in {quoted(text)}; quote the whole {what}")
    if not value:
        raise UsageError(f"empty {what}")
    return value


def _field(text: str) -> int | str:
    if not text:
        raise UsageError("field= needs a 0-based position or a column name, e.g. field=price or field=2")
    if _INTEGER.match(text):
        return _integer(text, "field=")
    return _name(text, "field name")


def _key_columns(text: str) -> tuple[str, ...]:
    if not text:
        raise UsageError("key= needs column name(s), e.g. key=customer or key=city,day")
    return tuple(_name(part, "key column") for part in _split_commas(text, "key=" + text))


def _function(text: str) -> Function:
    value, was_quoted = _unquote(text)
    if was_quoted:
        try:
            node = ast.parse(value.strip(), mode="eval").body
        except (SyntaxError, ValueError, RecursionError, MemoryError) as error:
            raise UsageError(f"fn={shortened(text)} is not valid Python: {shortened(getattr(error, 'msg', error))}") from None
        if not isinstance(node, ast.Lambda):
            raise UsageError(f"fn={shortened(text)}: a quoted fn= must be a lambda, e.g. fn=\"lambda rs: ...\"")
        try:  # what only compiling finds (a duplicate argument, a misplaced yield): nothing runs
            compile(ast.Expression(node), "<fn>", "eval")
        except (SyntaxError, ValueError, RecursionError, MemoryError) as error:
            raise UsageError(f"fn={shortened(text)} is not valid Python: {shortened(getattr(error, 'msg', error))}") from None
        return Function(value.strip(), is_lambda=True)
    if not all(_IDENTIFIER.match(part) and not keyword.iskeyword(part) for part in value.split(".")):
        raise UsageError(f"fn={shortened(text)}: expected a function name (top3, mod.top3) or a quoted lambda")
    return Function(value)


def _schema(text: str) -> str:
    value, _ = _unquote(text)
    if not value.strip():
        raise UsageError('schema= needs a DDL string, e.g. schema="customer string, total double"')
    return value


_OPTION_VALUE = {
    "-o": "a Python variable name",
    "--in": "the name of a variable holding the input",
    "--show": "how many records to preview per partition (a whole number, 0 or more)",
}


def _option_value(name: str, value: str) -> str | int:
    if name == "--show":
        if not (value.isascii() and value.isdigit()):
            raise UsageError(f"--show takes {_OPTION_VALUE[name]}; got {quoted(value)}")
        return _integer(value, "--show")
    if not _IDENTIFIER.match(value) or keyword.iskeyword(value):
        raise UsageError(f"{name} takes {_OPTION_VALUE[name]}; got {quoted(value)}")
    return value


def _once(options: dict, name: str, token: str) -> None:
    if name in options:
        raise UsageError(f"{token.partition('=')[0] if name != 'key' else 'key='} given twice")


# -- rendering the canonical line --------------------------------------------------------


def _quote(text: str) -> str:
    return '"' + text.replace("\\", "\\\\").replace('"', '\\"') + '"'


def _value(value: int | str) -> str:
    """A field or key as written in a line: positions bare, names bare when they can be."""
    if isinstance(value, int):
        return str(value)
    plain = re.fullmatch(r"[A-Za-z_][\w.]*", value) and value.lower() not in ("true", "false")
    return value if plain and not value.lower() in ORDERS else _quote(value)


def _argument_text(value: str | int | float | bool) -> str:
    if isinstance(value, bool):
        return str(value).lower()
    if isinstance(value, (int, float)):
        return repr(value)
    return value if value == "*" else _value(value)
