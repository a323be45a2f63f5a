"""The ``%%fwstream`` grammar: a pure parser from the magic's line to a StreamCommand.

The same style as ``%%fullwindow`` (``grammar.py``: its tokenizer and its word rules), for a
running keyed operator over a source with a backlog (FLIP-327). No Spark and no user namespace
here; every problem is a one-line ``UsageError`` naming the bad token, raised before anything runs.

    line      := operation fn=FN key=COL[,COL...] [option ...] [';']     options may stand anywhere
    operation := reduce | aggregate | process
    option    := --mode mixed|stream|batch | --job NAME | --job-dir DIR | --trigger T
               | --max-files N | -o NAME | --show N | --graph | --no-wait | --in NAME
"""

from __future__ import annotations

import keyword
import re
from dataclasses import dataclass

from IPython.core.error import UsageError

from .grammar import _IDENTIFIER, _PIPE, Function, _function, _key_columns, _once, _quote, _unknown, _unquote, tokenize

OPERATIONS = ("reduce", "aggregate", "process")
MODES = ("mixed", "stream", "batch")
OPTIONS = ("--mode", "--job", "--job-dir", "--trigger", "--max-files", "-o", "--show", "--graph", "--no-wait",
           "--in")
FLAGS = ("--graph", "--no-wait")
DEFAULT_SHOW = 5
AVAILABLE_NOW = "available_now"
_INTERVAL = re.compile(r"\d+(\.\d+)?\s*(millisecond|second|minute|hour)s?\Z", re.IGNORECASE)
_JOB_NAME = re.compile(r"[A-Za-z0-9_][A-Za-z0-9_.\-]*\Z")
_OPTION_VALUE = {
    "--mode": "one of " + ", ".join(MODES),
    "--job": "a job name (letters, digits, _ . -)",
    "--job-dir": "a directory (quote it if it has spaces)",
    "--trigger": f'a processing-time interval ("5 seconds") or {AVAILABLE_NOW}',
    "--max-files": "a whole number of files per micro-batch, 1 or more",
    "-o": "a Python variable name",
    "--show": "how many keys' latest values to show (a whole number, 0 or more)",
    "--in": "the name of a variable holding the input",
}
#: what each operation's fn= is
FN_KINDS = {"reduce": "FN(a, b) -> record", "aggregate": "an fw.AggregateFunction instance or class",
            "process": "an fw.KeyedProcessFunction instance or class"}


@dataclass(frozen=True)
class StreamCommand:
    """What one ``%%fwstream`` line asks for; ``str(command)`` is its canonical line."""

    operation: str
    fn: Function
    key: tuple[str, ...]
    mode: str = "mixed"
    job: str | None = None
    job_dir: str | None = None
    trigger: str | None = None
    max_files: int | None = None
    output: str | None = None
    show: int = DEFAULT_SHOW
    graph: bool = False
    wait: bool = True
    input: str | None = None
    silent: bool = False

    def __str__(self) -> str:
        parts = [f"{self.operation} fn={self.fn}", "key=" + ",".join(self.key)]
        if self.mode != "mixed":
            parts.append(f"--mode {self.mode}")
        for flag, value in (("--job", self.job), ("--job-dir", self.job_dir), ("--trigger", self.trigger)):
            if value is not None:
                parts.append(f"{flag} {value if _JOB_NAME.match(value) else _quote(value)}")
        if self.max_files is not None:
            parts.append(f"--max-files {self.max_files}")
        if self.output is not None:
            parts.append(f"-o {self.output}")
        if self.show != DEFAULT_SHOW:
            parts.append(f"--show {self.show}")
        if self.graph:
            parts.append("--graph")
        if not self.wait:
            parts.append("--no-wait")
        if self.input is not None:
            parts.append(f"--in {self.input}")
        return " ".join(parts) + (";" if self.silent else "")


def parse(line: str) -> StreamCommand:
    """The StreamCommand for a ``%%fwstream`` line, or a one-line UsageError naming the bad token."""
    text = line.strip()
    silent = text.endswith(";")
    if silent:
        text = text[:-1]
    tokens = tokenize(text)
    options: dict = {}
    words: list[str] = []
    position = 0
    while position < len(tokens):
        token = tokens[position]
        position += 1
        if token is _PIPE:
            raise UsageError("%%fwstream runs one keyed operation; '|' pipes are for %%fullwindow")
        if token.startswith("key="):
            _once(options, "key", token)
            options["key"] = _key_columns(token[4:])
        elif token.startswith("-"):
            name, equals, inline = token.partition("=")
            if name not in OPTIONS:
                raise _unknown(f"unknown option {token!r}", name, OPTIONS, "options are: key=COL, " + ", ".join(OPTIONS))
            _once(options, name, token)
            if name in FLAGS:
                if equals:
                    raise UsageError(f"{name} takes no value; got {token!r}")
                options[name] = True
                continue
            if inline:
                value = inline
            elif position < len(tokens) and tokens[position] is not _PIPE:
                value = tokens[position]
                position += 1
            else:
                raise UsageError(f"{name} needs a value: {_OPTION_VALUE[name]}")
            options[name] = _option_value(name, value)
        else:
            words.append(token)
    operation, fn = _operation(words)
    if "key" not in options:
        raise UsageError(f"%%fwstream {operation} needs key=COL[,COL...]: a running {operation} keeps state per key")
    return StreamCommand(
        operation=operation, fn=fn, key=options["key"], mode=options.get("--mode", "mixed"),
        job=options.get("--job"), job_dir=options.get("--job-dir"), trigger=options.get("--trigger"),
        max_files=options.get("--max-files"), output=options.get("-o"), show=options.get("--show", DEFAULT_SHOW),
        graph=options.get("--graph", False), wait=not options.get("--no-wait", False), input=options.get("--in"),
        silent=silent,
    )


def _operation(words: list[str]) -> tuple[str, Function]:
    if not words:
        raise UsageError("%%fwstream needs an operation: " + ", ".join(f"{op} fn=FN" for op in OPERATIONS))
    head, *arguments = words
    if head not in OPERATIONS:
        raise _unknown(f"unknown operation {head!r}", head, OPERATIONS, "operations are: " + ", ".join(OPERATIONS))
    fn = None
    for word in arguments:
        name, equals, value = word.partition("=")
        if name != "fn" or not equals:
            raise UsageError(f"{head}: unexpected {word!r}; {head} takes fn=FN ({FN_KINDS[head]})")
        if fn is not None:
            raise UsageError(f"{head}: fn= given twice")
        if not value:
            raise UsageError(f"{head}: fn= needs a value ({FN_KINDS[head]})")
        fn = _function(value)
    if fn is None:
        raise UsageError(f"{head} needs fn=FN ({FN_KINDS[head]})")
    if fn.is_lambda and head != "reduce":
        raise UsageError(f"{head} fn={fn}: a lambda cannot be {FN_KINDS[head]}; define a class in the cell")
    return head, fn


def _option_value(name: str, value: str) -> str | int:
    text, _ = _unquote(value)
    if name == "--mode":
        if text not in MODES:
            raise _unknown(f"--mode {value!r}", text, MODES, f"accepted: {', '.join(MODES)}")
        return text
    if name in ("--show", "--max-files"):
        if not (text.isascii() and text.isdigit()) or (name == "--max-files" and int(text) < 1):
            raise UsageError(f"{name} takes {_OPTION_VALUE[name]}; got {value!r}")
        return int(text)
    if name == "--trigger":
        if text != AVAILABLE_NOW and not _INTERVAL.match(text.strip()):
            raise UsageError(f"--trigger takes {_OPTION_VALUE[name]}; got {value!r}")
        return text.strip()
    if name == "--job":
        if not _JOB_NAME.match(text):
            raise UsageError(f"--job takes {_OPTION_VALUE[name]}; got {value!r}")
        return text
    if name == "--job-dir":
        if not text.strip():
            raise UsageError(f"--job-dir takes {_OPTION_VALUE[name]}; got {value!r}")
        return text
    if not _IDENTIFIER.match(text) or keyword.iskeyword(text):
        raise UsageError(f"{name} takes {_OPTION_VALUE[name]}; got {value!r}")
    return text
