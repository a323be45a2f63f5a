"""The words both magics' lines are made of: ``%%fullwindow``'s (``grammar.py``) and ``%%fwstream``'s
(``stream_grammar.py``).

Pure text, no Spark and no user namespace. Every problem is an IPython ``UsageError`` with one
line, and every user token a message quotes goes through :func:`quoted` or :func:`shortened`, so
one long token cannot make a message long.

* the tokenizer: :func:`tokenize` (whitespace and ``|`` split, quotes and parentheses kept whole;
  ``|`` itself is the token :data:`PIPE`), and :func:`split_semicolon` for a line's final ``;``;
* quoting: :func:`quoted` and :func:`shortened` for messages, :func:`unquote` and :func:`quote`
  for values in a line;
* names: :func:`name` (a column), :func:`key_columns` (``key=a,b``), :func:`split_commas`,
  :func:`integer` (at most :data:`MAX_DIGITS` digits), :class:`Function` and :func:`function`
  (``fn=NAME`` or ``fn="lambda ..."``), :func:`name_text` and :func:`key_text` to write them back;
* :func:`once` ("given twice") and :func:`unknown` (did you mean);
* the options: an :class:`Option` says one option of a magic's line (its name, whether it is a
  flag, what its value is for messages, the parser of its value); :func:`read_options` takes
  ``key=`` and a table of Options out of a line's tokens, :func:`option_words` writes them back.
"""

from __future__ import annotations

import ast
import keyword
import re
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass

from IPython.core.error import UsageError

from ..errors import did_you_mean

#: How much of a user's token a message quotes; longer ones are cut with "...".
QUOTE_LIMIT = 60
#: The most digits an integer in a line may have (a position, a count, an argument).
MAX_DIGITS = 18
#: A Python identifier (a variable, a function name's part, a keyword argument's name).
IDENTIFIER = re.compile(r"[A-Za-z_][A-Za-z0-9_]*\Z")


class _Pipe:
    def __repr__(self) -> str:
        return "PIPE"


#: The token :func:`tokenize` gives for ``|`` (between ``%%fullwindow``'s stages).
PIPE = _Pipe()
#: Words the grammars read as themselves, so a column of that name is written quoted.
RESERVED = ("true", "false", "asc", "desc")
#: An option's value written bare in a canonical line; anything else is quoted.
_PLAIN_VALUE = re.compile(r"[A-Za-z0-9_][A-Za-z0-9_.\-]*\Z")
#: A column name written bare in a canonical line (unless it is one of RESERVED).
_PLAIN_NAME = re.compile(r"[A-Za-z_][\w.]*\Z")


# -- quoting -------------------------------------------------------------------------------


def quoted(text) -> str:
    """``text`` quoted for a message (``'price'``), cut to about QUOTE_LIMIT characters with "...".

    Every user token a magic's message quotes goes through here (or :func:`shortened`), so one
    long token cannot make a message long.
    """
    return repr(shortened(text))


def shortened(text) -> str:
    """``text`` as it is (unquoted) for a message, cut to about QUOTE_LIMIT characters with "..."."""
    text = str(text)
    return text if len(text) <= QUOTE_LIMIT else text[:QUOTE_LIMIT - 3] + "..."


def quote(text: str) -> str:
    """``text`` in double quotes as a line writes it (``"a \\"b\\""``); :func:`unquote` reads it back."""
    return '"' + text.replace("\\", "\\\\").replace('"', '\\"') + '"'


def unquote(text: str) -> tuple[str, bool]:
    """The text inside matching quotes (backslash escapes resolved) and whether it was quoted."""
    if len(text) >= 2 and text[0] in "\"'" and text[-1] == text[0] and _closing_quote(text, 0) == len(text) - 1:
        return re.sub(r"\\(.)", r"\1", text[1:-1], flags=re.DOTALL), True
    return text, False


# -- the tokenizer -------------------------------------------------------------------------


def split_semicolon(line: str) -> tuple[str, bool]:
    """The line without its spaces and final ``;``, and whether it had one (a silent cell)."""
    text = line.strip()
    silent = text.endswith(";")
    return (text[:-1] if silent else text), silent


def tokenize(text: str) -> list:
    """Split on whitespace and '|', keeping quoted text and parentheses whole; each '|' is PIPE."""
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
                tokens.append(PIPE)
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
    quote_char = text[start]
    index = start + 1
    while index < len(text):
        if text[index] == "\\":
            index += 2
            continue
        if text[index] == quote_char:
            return index
        index += 1
    raise UsageError(f"unclosed quote {quote_char} in {quoted(text[start:])}")


def _word_at(text: str, index: int) -> str:
    start = max(text.rfind(" ", 0, index), text.rfind("|", 0, index)) + 1
    return text[start:index + 1]


def split_commas(text: str, where: str) -> list[str]:
    """Comma-separated parts, commas inside quotes kept; no part may be empty (``where`` names the word)."""
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


# -- names, numbers, functions -------------------------------------------------------------


def integer(text: str, what: str) -> int:
    """A whole number of at most MAX_DIGITS digits, or a one-line UsageError naming ``what``."""
    digits = len(text.lstrip("+-"))
    if digits > MAX_DIGITS:
        raise UsageError(f"{what} {quoted(text)} has {digits} digits; accepted: at most {MAX_DIGITS}")
    return int(text)


def is_variable_name(text: str) -> bool:
    """Whether ``text`` can name a Python variable (an identifier, not a keyword)."""
    return bool(IDENTIFIER.match(text)) and not keyword.iskeyword(text)


def name(text: str, what: str) -> str:
    """A column name: bare, or quoted when it has spaces or punctuation (``what`` names it in messages)."""
    value, was_quoted = unquote(text)
    if not was_quoted and any(q in value for q in "\"'"):
        raise UsageError(f"misplaced quote in {quoted(text)}; quote the whole {what}")
    if not value:
        raise UsageError(f"empty {what}")
    return value


def key_columns(text: str) -> tuple[str, ...]:
    """The columns of ``key=TEXT``: ``customer``, ``city,day``, ``"home city"``."""
    if not text:
        raise UsageError("key= needs column name(s), e.g. key=customer or key=city,day")
    return tuple(name(part, "key column") for part in split_commas(text, "key=" + text))


@dataclass(frozen=True)
class Function:
    """A user function: a (dotted) name in the notebook, or the source of a lambda."""

    text: str
    is_lambda: bool = False

    def __str__(self) -> str:
        return quote(self.text) if self.is_lambda else self.text


def function(text: str) -> Function:
    """The function of ``fn=TEXT``: a (dotted) name, or a quoted lambda (checked to compile; nothing runs)."""
    value, was_quoted = unquote(text)
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
    if not all(IDENTIFIER.match(part) and not keyword.iskeyword(part) for part in value.split(".")):
        raise UsageError(f"fn={shortened(text)}: expected a function name (top3, mod.top3) or a quoted lambda")
    return Function(value)


def name_text(value: int | str) -> str:
    """A field or key as written in a line: positions bare, names bare when they can be, else quoted."""
    if isinstance(value, int):
        return str(value)
    plain = _PLAIN_NAME.match(value) and value.lower() not in RESERVED
    return value if plain else quote(value)


def key_text(columns: Iterable[str]) -> str:
    """``key=COL[,COL...]`` as a canonical line writes it; :func:`key_columns` reads it back."""
    return "key=" + ",".join(name_text(column) for column in columns)


# -- messages ------------------------------------------------------------------------------


def once(found: dict, name: str, label: str | None = None) -> None:
    """Refuse ``name`` (``label`` in the message) when ``found`` has it already: "LABEL given twice"."""
    if name in found:
        raise UsageError(f"{label or name} given twice")


def unknown(head: str, word: str, choices, listing: str) -> UsageError:
    """'HEAD; did you mean X?' when a choice is close to ``word``, else 'HEAD; LISTING'."""
    return UsageError(head + did_you_mean(word, choices, otherwise=f"; {listing}"))


# -- options -------------------------------------------------------------------------------


class Refused(Exception):
    """Raised by an Option's parser for a value it does not take; the message is the option's own:
    "NAME takes ACCEPTS; got 'VALUE'". A parser raises UsageError instead for a message of its own."""


@dataclass(frozen=True)
class Option:
    """One option of a magic's line: ``--show N``, ``-o NAME``, the flag ``--graph``.

    ``accepts`` says what its value is, for messages ("a Python variable name"); ``parse`` reads
    the value's text (the token as written, quotes and all) and returns the value, or raises
    :class:`Refused`. An option without ``parse`` is a flag: given, its value is True.
    """

    name: str
    accepts: str = ""
    parse: Callable[[str], object] | None = None

    @property
    def flag(self) -> bool:
        return self.parse is None

    def read(self, text: str):
        """The value of ``NAME TEXT``, or the one-line UsageError saying what the option takes."""
        try:
            return self.parse(text)
        except Refused:
            raise UsageError(f"{self.name} takes {self.accepts}; got {quoted(text)}") from None

    def words(self, value) -> str:
        """The option with ``value`` as a canonical line writes it: the flag, or ``NAME VALUE``
        (the value quoted unless it is one plain word)."""
        if self.flag:
            return self.name
        text = str(value)
        return f"{self.name} {text if _PLAIN_VALUE.match(text) else quote(text)}"


def read_options(tokens: Sequence, table: Sequence[Option], *, pipe: str | None = None) -> tuple[dict, list]:
    """Take ``key=COLS`` and the options of ``table`` out of a line's ``tokens``.

    Returns the values found, by option name (``"key"`` for the key columns), and the other tokens
    in their order (PIPE included). Options may stand anywhere: ``-o NAME`` or ``-o=NAME``, a flag
    alone. Each appears at most once; an unknown one is refused with the closest name. ``pipe``:
    the message refusing ``|`` in a line that has no stages (None keeps it as a token).
    """
    by_name = {option.name: option for option in table}
    listing = "options are: key=COL, " + ", ".join(by_name)
    found: dict = {}
    words: list = []
    position = 0
    while position < len(tokens):
        token = tokens[position]
        position += 1
        if token is PIPE:
            if pipe is not None:
                raise UsageError(pipe)
            words.append(token)
        elif token.startswith("key="):
            once(found, "key", "key=")
            found["key"] = key_columns(token[4:])
        elif token.startswith("-"):
            option_name, equals, inline = token.partition("=")
            option = by_name.get(option_name)
            if option is None:
                raise unknown(f"unknown option {quoted(token)}", option_name, list(by_name), listing)
            if option.flag:
                if equals:
                    raise UsageError(f"{option.name} takes no value; got {quoted(token)}")
                once(found, option.name)
                found[option.name] = True
                continue
            if inline:
                value = inline
            elif position < len(tokens) and tokens[position] is not PIPE:
                value = tokens[position]
                position += 1
            else:
                raise UsageError(f"{option.name} needs a value: {option.accepts}")
            once(found, option.name)
            found[option.name] = option.read(value)
        else:
            words.append(token)
    return found, words


def option_words(table: Sequence[Option], values: Iterable[tuple[str, object]]) -> list[str]:
    """The canonical words of ``(option name, value)`` pairs, in their order; a value None or
    False (an option not given, a flag not set) writes nothing."""
    by_name = {option.name: option for option in table}
    return [by_name[option].words(value) for option, value in values if value is not None and value is not False]


# -- option values both magics take ----------------------------------------------------------


def variable_name(text: str) -> str:
    """An option's value that names a Python variable (``-o NAME``, ``--in NAME``)."""
    if not is_variable_name(text):
        raise Refused
    return text


def whole_number(option: str, least: int = 0) -> Callable[[str], int]:
    """The parser of ``option``'s value: a whole number, ``least`` or more, of at most MAX_DIGITS digits."""

    def parse(text: str) -> int:
        if not (text.isascii() and text.isdigit()):
            raise Refused
        number = integer(text, option)
        if number < least:
            raise Refused
        return number

    return parse


def unquoted(parse: Callable[[str], object]) -> Callable[[str], object]:
    """``parse`` applied to the value with its quotes taken off (``--trigger "5 seconds"``)."""
    return lambda text: parse(unquote(text)[0])
