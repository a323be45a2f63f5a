"""From a Command and its input to a DataStream, through the public Python API only.

Also writes what ``--explain`` shows: the same calls as Python code, a plain-PySpark
rendering of what they do, and Spark's physical plan. Misuse surfaces as
``FullWindowError`` (from the API) or ``UsageError`` (names the magic resolves); the
magic turns both into one line.
"""

from __future__ import annotations

import builtins
import contextlib
import html
import inspect
import io
import re
from collections.abc import Callable
from dataclasses import dataclass

from IPython.core.error import UsageError

from ..api.functions import Order
from ..datastream import DataStream, from_dataframe, from_pandas
from ..errors import did_you_mean
from ..values.schema import resolve_field
from .grammar import Aggregate, AggregateCalls, Call, Command, Map, Reduce, Sort, Stage
from .words import Function, quoted, shortened

ACCEPTED_INPUT = "a Spark DataFrame, a pandas DataFrame or a DataStream"


@dataclass(frozen=True)
class Built:
    """The streams a command produced: the input, then one output per stage."""

    command: Command
    source: DataStream
    outputs: tuple[DataStream, ...]
    calls: tuple[str, ...]  # per stage, the Python API call that made its output

    @property
    def result(self) -> DataStream:
        return self.outputs[-1]


def _kind(value) -> str | None:
    import pandas as pd
    from pyspark.sql import DataFrame

    if isinstance(value, DataStream):
        return "stream"
    if isinstance(value, DataFrame):
        return "spark"
    if isinstance(value, pd.DataFrame):
        return "pandas"
    return None


def as_stream(value, what: str) -> DataStream:
    """The input as a DataStream: Spark DataFrames and pandas DataFrames are wrapped."""
    kind = _kind(value)
    if kind is None:
        raise UsageError(f"{shortened(what)} is a {type(value).__name__}, not {ACCEPTED_INPUT}")
    return {"stream": lambda v: v, "spark": from_dataframe, "pandas": from_pandas}[kind](value)


def source_code(value, expression: str) -> str:
    """The Python that makes the input stream from the expression the user wrote."""
    return {"stream": "{}", "spark": "fw.from_dataframe({})", "pandas": "fw.from_pandas({})"}[_kind(value)].format(expression)


def build(command: Command, source: DataStream, namespace: dict, filename: Callable[[str], str] = lambda _: "<fn>") -> Built:
    """Apply each stage of ``command`` to ``source`` with the Python API.

    ``namespace`` holds the user's functions; ``filename(source)`` names a quoted lambda's
    code (IPython caches it there, so a traceback can show the line).
    """
    stream = source
    outputs, calls = [], []
    for stage in command.stages:
        window, window_code = _window(stream, command.key)
        stream, call = _apply(stage, window, stream, namespace, filename)
        outputs.append(stream)
        calls.append(f"{window_code}.{call}")
    return Built(command, source, tuple(outputs), tuple(calls))


def _window(stream: DataStream, key):
    if key is None:
        return stream.full_window_partition(), "full_window_partition()"
    columns = key[0] if len(key) == 1 else list(key)
    return stream.key_by(columns).full_window_partition(), f"key_by({columns!r}).full_window_partition()"


def _apply(stage: Stage, window, stream: DataStream, namespace: dict, filename) -> tuple[DataStream, str]:
    if isinstance(stage, Sort):
        fields = [field for field, _ in stage.keys]
        orders = [order for _, order in stage.keys]
        if len(fields) == 1:
            args = (fields[0],) if orders[0] == Order.ASCENDING.value else (fields[0], orders[0])
        else:
            args = (fields, orders)
        return window.sort_partition(*args), f"sort_partition({', '.join(map(repr, args))})"
    if isinstance(stage, AggregateCalls):
        columns, code = zip(*(aggregate_column(call, stream) for call in stage.calls))
        return window.aggregate(list(columns)), f"aggregate([{', '.join(code)}])"
    fn = lookup(stage.fn, namespace, filename)
    schema = f", schema={stage.schema!r}" if getattr(stage, "schema", None) is not None else ""
    if isinstance(stage, Map):
        return window.map_partition(fn, schema=stage.schema), f"map_partition({stage.fn.text}{schema})"
    if isinstance(stage, Reduce):
        return window.reduce(fn), f"reduce({stage.fn.text})"
    assert isinstance(stage, Aggregate)
    return window.aggregate(fn, schema=stage.schema), f"aggregate({stage.fn.text}{schema})"


def lookup(fn: Function, namespace: dict, filename: Callable[[str], str]):
    """The object ``fn=`` names: a (dotted) variable of the notebook, or a lambda evaluated there."""
    if fn.is_lambda:
        return eval(compile(fn.text, filename(fn.text), "eval"), namespace)  # the user's own code
    head, *rest = fn.text.split(".")
    if head in namespace:
        value = namespace[head]
    elif hasattr(builtins, head):
        value = getattr(builtins, head)
    else:
        functions = [n for n, v in namespace.items() if callable(v) and not n.startswith("_")]
        hint = did_you_mean(head, functions, otherwise="; define it in this cell or an earlier one")
        raise UsageError(f"fn={shortened(fn.text)}: no {quoted(head)} in the notebook{hint}")
    for depth, attribute in enumerate(rest, start=1):
        if not hasattr(value, attribute):
            hint = did_you_mean(attribute, [a for a in dir(value) if not a.startswith("_")])
            raise UsageError(f"fn={shortened(fn.text)}: {quoted('.'.join([head, *rest[:depth - 1]]))} has no attribute "
                             f"{quoted(attribute)}{hint}")
        value = getattr(value, attribute)
    return value


def aggregate_column(call: Call, stream: DataStream):
    """A Spark aggregate Column for ``sum(price)`` and the Python that makes it."""
    from pyspark.sql import functions as F

    function = getattr(F, call.name)
    args = call.args
    if call.name == "count" and args in ((), ("*",)):
        return F.count("*"), 'F.count("*")'
    parameters = list(inspect.signature(function).parameters.values())
    try:
        inspect.signature(function).bind(*args)
    except TypeError:
        wanted = ", ".join(p.name if p.kind is not p.VAR_POSITIONAL else f"*{p.name}" for p in parameters)
        raise UsageError(f"{shortened(call)}: {call.name} takes ({wanted}); got {len(args)} argument(s)") from None
    resolved = []
    for position, arg in enumerate(args):
        parameter = parameters[min(position, len(parameters) - 1)]
        is_column = "ColumnOrName" in str(parameter.annotation)
        got = quoted(arg) if isinstance(arg, str) else shortened(repr(arg))
        if is_column != isinstance(arg, str) or arg == "*":
            wanted = "a column name" if is_column else "a number or true/false"
            raise UsageError(f"{shortened(call)}: argument {parameter.name!r} takes {wanted}; got {got}")
        wanted = _literal_kinds(parameter.annotation)
        if not _literal_fits(arg, wanted, is_column):  # true for a count, 2.5 for a whole number, ...
            raise UsageError(f"{shortened(call)}: argument {parameter.name!r} takes {wanted}; got {got}")
        resolved.append(resolve_field(stream.schema, arg, what="column", case_sensitive=stream.case_sensitive)[0]
                        if is_column else arg)
    try:  # Spark checks the rest (a classic session at once, through py4j): one line either way
        column = function(*resolved)
    except Exception as error:
        first = (str(error).strip().splitlines() or [type(error).__name__])[0]
        raise UsageError(f"{shortened(call)}: {shortened(first)}") from None
    return column, f"F.{call.name}({', '.join(map(repr, resolved))})"


def _literal_kinds(annotation) -> str:
    """What a literal argument of a Spark function accepts, from its annotation: for messages."""
    text = str(annotation)
    kinds = [word for word, pattern in (("true/false", r"\bbool\b"), ("a whole number", r"\bint\b"),
                                        ("a number", r"\bfloat\b")) if re.search(pattern, text)]
    return " or ".join(kinds) or "a number or true/false"


def _literal_fits(value, wanted: str, is_column: bool) -> bool:
    if is_column:
        return True
    if isinstance(value, bool):
        return "true/false" in wanted
    if isinstance(value, int):
        return "number" in wanted
    return "a number" in wanted.replace("a whole number", "")


# -- --explain ---------------------------------------------------------------------------


def python_code(built: Built, expression: str, value) -> str:
    """The Python API calls the magic made, as code a user can paste."""
    lines = ["import fw_magics as fw"]
    if any(isinstance(stage, AggregateCalls) for stage in built.command.stages):
        lines.append("from pyspark.sql import functions as F")
    lines.append(f"ds = {source_code(value, expression)}")
    lines += [f"ds = ds.{call}" for call in built.calls]
    return "\n".join(lines)


def pyspark_code(built: Built, expression: str, value) -> str:
    """What the same job does in plain PySpark DataFrame calls (one line per stage)."""
    start = {
        "spark": expression,
        "stream": f"{expression}.to_dataframe()",
        "pandas": f"fw.from_pandas({expression}).to_dataframe()   # {built.source.num_partitions()} contiguous chunks",
    }[_kind(value)]
    lines = ["from pyspark.sql import functions as F", f"df = {start}"]
    inputs = (built.source,) + built.outputs[:-1]
    for stage, stream, output in zip(built.command.stages, inputs, built.outputs):
        lines += _pyspark_stage(stage, stream, output, built.command.key)
    return "\n".join(lines)


def _pyspark_stage(stage: Stage, stream: DataStream, output: DataStream, key) -> list[str]:
    """The PySpark that ``stage`` runs: the same calls, partition counts and hash columns as the API's."""
    keyed = refs = ""
    if key is not None:
        by = stream.key_by(list(key) if len(key) > 1 else key[0])  # no job: what the stage was built with
        refs = ", ".join(repr(column) for column in by.columns)
        keyed = f".repartition({by.parallelism}, {refs})"
    ddl = ", ".join(f"`{f.name}` {f.dataType.simpleString()}" for f in output.schema.fields)
    if isinstance(stage, Sort):
        columns = [
            f"F.col({resolve_field(stream.schema, field, case_sensitive=stream.case_sensitive)[0]!r}).{order}()"
            for field, order in stage.keys
        ]
        if key is not None:
            columns = [f"F.col({c!r}).asc()" for c in by.columns] + columns
        return [f"df = df{keyed}.sortWithinPartitions({', '.join(columns)})"]
    if isinstance(stage, AggregateCalls):
        columns = ", ".join(aggregate_column(call, stream)[1] for call in stage.calls)
        if key is not None:
            # Hashing struct(key) is the same hash as the key columns; Spark would drop a plain
            # repartition(n, key) after the groupBy's own exchange (see KeyedStream.placed).
            return [f"df = df.groupBy({refs}).agg({columns}).repartition({by.parallelism}, F.struct({refs}))"]
        return [
            "# one row per partition; fw-magics also gives an empty partition its row, and puts",
            "# partition i's row in partition i when something reads per partition (a repartition)",
            f"df = df.groupBy(F.spark_partition_id()).agg({columns})",
        ]
    kind = {Map: "map_partition", Reduce: "reduce", Aggregate: "aggregate"}[type(stage)]
    helper = f"run_{kind}({stage.fn.text})"
    note = (
        f"# run_{kind}: calls your function over the records of each "
        f"{'key' if key else 'partition'}, read from Arrow batches; its output becomes Arrow batches"
    )
    if key is not None:
        return [note, f'df = df{keyed}.groupBy({refs}).applyInArrow({helper}, "{ddl}")']
    return [note, f'df = df.mapInArrow({helper}, "{ddl}")']


def explanation_bundle(title: str, sections: list[tuple[str, str]]) -> dict[str, str]:
    """text/plain and text/html for ``--explain``: a title, then headed code blocks."""
    text = [title] + [f"\n{heading}\n" + "\n".join("    " + line for line in body.splitlines()) for heading, body in sections]
    markup = [f"<p><code>{html.escape(title)}</code></p>"] + [
        f"<p><b>{html.escape(heading)}</b></p><pre>{html.escape(body)}</pre>" for heading, body in sections
    ]
    return {"text/plain": "\n".join(text), "text/html": '<div class="fw-explain">' + "".join(markup) + "</div>"}


def physical_plan(stream: DataStream) -> str:
    """Spark's physical plan for the stream (``DataFrame.explain()``, captured)."""
    buffer = io.StringIO()
    with contextlib.redirect_stdout(buffer):
        stream.to_dataframe().explain()
    return buffer.getvalue().strip()
