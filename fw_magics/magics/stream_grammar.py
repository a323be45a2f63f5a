"""The ``%%fwstream`` grammar: a pure parser from the magic's line to a StreamCommand.

Made of the same words as ``%%fullwindow``'s (``words.py``: the tokenizer, names, functions, the
option table), for a running keyed operator over a source with a backlog (FLIP-327). No Spark and
no user namespace here; every problem is a one-line ``UsageError`` naming the bad token, raised
before anything runs. The option values follow the streaming API's own rules: the modes are
``phases.Mode``'s, the trigger is what ``plan.Trigger`` takes, a job name what
``recovery.paths.safe_job_path`` takes (without spaces).

    line      := operation fn=FN key=COL[,COL...] [option ...] [';']     options may stand anywhere
    operation := reduce | aggregate | process                      one input
               | co_process | interval_join                        two inputs (the cell gives both)
                 (the operator kinds' operations: ``fw_magics.operators``, in its registry's order)
    option    := --mode mixed|stream|batch | --job NAME | --job-dir DIR | --trigger T
               | --max-files N | --parallelism N | --from-savepoint NAME | -o NAME | --show N
               | --graph | --live | --no-wait | --reset | --in NAME[,NAME]
               | --allow-non-restored-state
               | --key2 COL[,COL...] | --between LOWER,UPPER            two inputs only
"""

from __future__ import annotations

from dataclasses import dataclass

from IPython.core.error import UsageError

from ..errors import FullWindowError
from ..graph import MAX_STATE_PARTITIONS
from ..operators import operations
from ..recovery.paths import safe_job_path
from ..runtime.streaming.driver.phases import MODES, Mode
from ..runtime.streaming.driver.plan import AVAILABLE_NOW, Trigger
from .words import (
    Function,
    Option,
    Refused,
    function,
    key_columns,
    key_text,
    option_words,
    quoted,
    read_options,
    shortened,
    split_commas,
    split_semicolon,
    tokenize,
    unknown,
    unquoted,
    variable_name,
    whole_number,
)

#: each operation by its word: what builds it, what its fn= is, its inputs (``fw_magics.operators.Operation``)
OPERATION = {op.name: op for op in operations()}
OPERATIONS = tuple(OPERATION)
#: the operations of two inputs: ``a.connect(b).key_by(k, k2).process(FN)``, ``a.key_by(k).interval_join(...)``
TWO_INPUTS = tuple(name for name, op in OPERATION.items() if op.inputs == 2)
#: those that take ``--between``: an interval join's bounds
INTERVALS = tuple(name for name, op in OPERATION.items() if op.interval)
DEFAULT_MODE = Mode.MIXED.value
DEFAULT_SHOW = 5  # keys whose latest values the status shows
#: what each operation's fn= is
FN_KINDS = {name: op.fn for name, op in OPERATION.items()}


def operation_help(inputs: int, indent: str) -> str:
    """The help's lines for the operations of ``inputs`` inputs: "reduce fn=FN        FN(a, b) -> record..."."""
    lines = []
    for op in operations():
        if op.inputs == inputs:
            head = f"{op.name} fn=FN"
            lines += [indent + f"{head:<19} {op.help[0]}", *(indent + " " * 20 + more for more in op.help[1:])]
    return "\n".join(lines)


def mode(text: str) -> str:
    """``--mode M``: one of phases.MODES (``Mode.of`` decides), the closest named when it is not."""
    try:
        return Mode.of(text).value
    except FullWindowError:
        raise unknown(f"--mode {quoted(text)}", text, MODES, f"accepted: {', '.join(MODES)}") from None


def trigger(text: str) -> str:
    """``--trigger T``: what ``plan.Trigger.of`` takes (an interval such as "5 seconds", or available_now)."""
    try:
        Trigger.of(text)
    except FullWindowError:
        raise Refused from None
    return text.strip()


def job_name(text: str) -> str:
    """``--job NAME``: a name ``safe_job_path`` takes for a job's folder, without spaces (a line
    would have to quote them)."""
    if " " in text:
        raise Refused
    try:
        safe_job_path("/jobs", text)
    except FullWindowError:
        raise Refused from None
    return text


def directory(text: str) -> str:
    """``--job-dir DIR``: any path; ``start()`` checks it."""
    if not text.strip():
        raise Refused
    return text


def parallelism(text: str) -> int:
    """``--parallelism N``: what ``plan.check_parallelism`` takes, 1 to MAX_STATE_PARTITIONS."""
    number = whole_number("--parallelism", least=1)(text)
    if number > MAX_STATE_PARTITIONS:
        raise Refused
    return number


def inputs(text: str) -> tuple[str, ...]:
    """``--in NAME[,NAME]``: the variable(s) holding the input (two for an operation of two inputs)."""
    names = split_commas(text, "--in " + text)
    if not 1 <= len(names) <= 2:
        raise Refused
    return tuple(variable_name(name) for name in names)


def between(text: str) -> tuple[int, int]:
    """``--between LOWER,UPPER``: an interval join's bounds, whole milliseconds (may be negative), lower <= upper."""
    parts = text.split(",")
    if len(parts) != 2 or not all(p.strip().lstrip("-").isdigit() and p.strip().isascii() and len(p.strip()) <= 19
                                  for p in parts):
        raise Refused
    lower, upper = (int(p) for p in parts)
    if lower > upper:
        raise UsageError(f"--between {text}: the lower bound is above the upper; accepted: LOWER,UPPER with "
                         "LOWER <= UPPER (milliseconds)")
    return lower, upper


#: The options of a ``%%fwstream`` line (besides ``key=``), in the order messages list them. A
#: value may be quoted: ``--trigger "5 seconds"``, ``--job-dir "my jobs"``.
OPTION_TABLE = (
    Option("--mode", "one of " + ", ".join(MODES), unquoted(mode)),
    Option("--job", "a job name (up to 200 letters, digits, _ . -)", unquoted(job_name)),
    Option("--job-dir", "a directory (quote it if it has spaces)", unquoted(directory)),
    Option("--trigger", f'a processing-time interval ("5 seconds") or {AVAILABLE_NOW}', unquoted(trigger)),
    Option("--max-files", "a whole number of files per micro-batch, 1 or more",
           unquoted(whole_number("--max-files", least=1))),
    Option("--parallelism", f"a whole number of state partitions, 1 to {MAX_STATE_PARTITIONS}", unquoted(parallelism)),
    Option("--from-savepoint", "the name of a variable holding a savepoint's path (what %fw_savepoint or "
           "job.savepoint() returned)", unquoted(variable_name)),
    Option("-o", "a Python variable name", unquoted(variable_name)),
    Option("--show", "how many keys' latest values to show (a whole number, 0 or more)",
           unquoted(whole_number("--show"))),
    Option("--graph"),
    Option("--live"),
    Option("--no-wait"),
    Option("--reset"),
    Option("--allow-non-restored-state"),
    Option("--in", "the name of a variable holding the input (two, NAME,NAME, for co_process and interval_join)",
           unquoted(inputs)),
    Option("--key2", "the second input's key column(s) (co_process, interval_join; default: the columns key= names)",
           unquoted(key_columns)),
    Option("--between", "an interval join's bounds LOWER,UPPER in milliseconds, e.g. -600000,0",
           unquoted(between)),
)
OPTIONS = tuple(option.name for option in OPTION_TABLE)
FLAGS = tuple(option.name for option in OPTION_TABLE if option.flag)


@dataclass(frozen=True)
class StreamCommand:
    """What one ``%%fwstream`` line asks for; ``str(command)`` is its canonical line."""

    operation: str
    fn: Function
    key: tuple[str, ...]
    mode: str = DEFAULT_MODE
    job: str | None = None
    job_dir: str | None = None
    trigger: str | None = None
    max_files: int | None = None
    parallelism: int | None = None  # start(parallelism=N): the number of state partitions
    savepoint: str | None = None  # the variable holding start(from_savepoint=PATH): a new job restored from it
    output: str | None = None
    show: int = DEFAULT_SHOW
    graph: bool = False
    live: bool = False  # job.show() under the cell instead of the status
    wait: bool = True
    reset: bool = False  # start(reset=True): discard what the job recorded (never its savepoints), start afresh
    allow_non_restored_state: bool = False  # start(allow_non_restored_state=True): drop the vanished states
    input: tuple[str, ...] | None = None  # the line form's variable(s): two for an operation of two inputs
    key2: tuple[str, ...] | None = None  # the second input's key columns (None: key's names)
    between: tuple[int, int] | None = None  # an interval join's bounds (ms)
    silent: bool = False

    @property
    def two_inputs(self) -> bool:
        return self.operation in TWO_INPUTS

    def __str__(self) -> str:
        parts = [f"{self.operation} fn={self.fn}", key_text(self.key)]
        parts += option_words(OPTION_TABLE, [
            ("--mode", None if self.mode == DEFAULT_MODE else self.mode), ("--job", self.job),
            ("--job-dir", self.job_dir), ("--trigger", self.trigger), ("--max-files", self.max_files),
            ("--parallelism", self.parallelism), ("--from-savepoint", self.savepoint), ("-o", self.output), ("--show", None if self.show == DEFAULT_SHOW else self.show),
            ("--graph", self.graph), ("--live", self.live), ("--no-wait", not self.wait), ("--reset", self.reset),
            ("--allow-non-restored-state", self.allow_non_restored_state),
            ("--in", None if self.input is None else ",".join(self.input)),
            ("--key2", None if self.key2 is None else key_text(self.key2)[len("key="):]),
            ("--between", None if self.between is None else f"{self.between[0]},{self.between[1]}"),
        ])
        return " ".join(parts) + (";" if self.silent else "")


def parse(line: str) -> StreamCommand:
    """The StreamCommand for a ``%%fwstream`` line, or a one-line UsageError naming the bad token."""
    text, silent = split_semicolon(line)
    options, words = read_options(tokenize(text), OPTION_TABLE,
                                  pipe="%%fwstream runs one keyed operation; '|' pipes are for %%fullwindow")
    operation, fn = _operation(words)
    if "key" not in options:
        raise UsageError(f"%%fwstream {operation} needs key=COL[,COL...]: a running {operation} keeps state per key")
    _check_inputs(operation, options)
    if "--allow-non-restored-state" in options and "--from-savepoint" not in options:
        raise UsageError("--allow-non-restored-state drops states a savepoint holds that FN no longer declares; "
                         "accepted only with --from-savepoint NAME")
    return StreamCommand(
        operation=operation, fn=fn, key=options["key"], mode=options.get("--mode", DEFAULT_MODE),
        job=options.get("--job"), job_dir=options.get("--job-dir"), trigger=options.get("--trigger"),
        max_files=options.get("--max-files"), parallelism=options.get("--parallelism"),
        savepoint=options.get("--from-savepoint"), output=options.get("-o"), show=options.get("--show", DEFAULT_SHOW),
        graph=options.get("--graph", False), live=options.get("--live", False), wait=not options.get("--no-wait", False),
        reset=options.get("--reset", False), input=options.get("--in"), key2=options.get("--key2"),
        between=options.get("--between"), silent=silent,
        allow_non_restored_state=options.get("--allow-non-restored-state", False),
    )


def _check_inputs(operation: str, options: dict) -> None:
    """The options of two inputs only with an operation of two, ``--between`` with an interval join, and
    ``--in`` naming as many variables as the operation has inputs."""
    two = operation in TWO_INPUTS
    for option in ("--key2", "--between"):
        if option in options and not two:
            raise UsageError(f"{option} is for an operation of two inputs ({', '.join(TWO_INPUTS)}); {operation} "
                             "has one")
    if operation in INTERVALS and "--between" not in options:
        raise UsageError(f"{operation} needs --between LOWER,UPPER: the right records joined with a left one at t "
                         "are those from t+LOWER to t+UPPER (milliseconds, inclusive), e.g. --between -600000,0")
    if two and operation not in INTERVALS and "--between" in options:
        raise UsageError(f"--between is for {', '.join(INTERVALS)}; {operation} has no interval")
    names = options.get("--in")
    if names is not None and len(names) != (2 if two else 1):
        takes = "two inputs, --in FIRST,SECOND" if two else "one input, --in NAME"
        raise UsageError(f"--in {','.join(names)}: {operation} takes {takes}")


def _operation(words: list[str]) -> tuple[str, Function]:
    if not words:
        raise UsageError("%%fwstream needs an operation: " + ", ".join(f"{op} fn=FN" for op in OPERATIONS))
    head, *arguments = words
    if head not in OPERATIONS:
        raise unknown(f"unknown operation {quoted(head)}", head, OPERATIONS, "operations are: " + ", ".join(OPERATIONS))
    fn = None
    for word in arguments:
        keyword, equals, value = word.partition("=")
        if keyword != "fn" or not equals:
            raise UsageError(f"{head}: unexpected {quoted(word)}; {head} takes fn=FN ({FN_KINDS[head]})")
        if fn is not None:
            raise UsageError(f"{head}: fn= given twice")
        if not value:
            raise UsageError(f"{head}: fn= needs a value ({FN_KINDS[head]})")
        fn = function(value)
    if fn is None:
        raise UsageError(f"{head} needs fn=FN ({FN_KINDS[head]})")
    if fn.is_lambda and not OPERATION[head].lambdas:
        raise UsageError(f"{head} fn={shortened(fn)}: a lambda cannot be {FN_KINDS[head]}; define a class in the cell")
    return head, fn
