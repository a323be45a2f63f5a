"""Two keyed inputs, one operator: ``connect(...).key_by(...).process(...)`` and ``interval_join``.

``a.connect(b)`` gives :class:`ConnectedStreams`; ``.key_by(key_a, key_b)`` keys each input by its
own column(s) (of the same types), and ``.process(fn)`` runs an ``fw.KeyedCoProcessFunction`` over
both. ``a.key_by(k).interval_join(b.key_by(k)).between(lower, upper).process(join)`` is Flink's
interval join, a built-in co-process function (``fw_magics.operators.co_process``).

Both give a ``StatefulStream`` whose input is a :class:`TaggedStream`: the two inputs seen as one
stream of tagged rows (the key, the input, the event time, each input's record as a struct;
``fw_magics.operators.spec`` says why), so the streaming runtime runs it as it runs one input: the
backlog engine, the handover, the stream, every mode. Each input must be a source with a backlog
(``fw.from_files`` or ``fw.from_table``) read as it is.
"""

from __future__ import annotations

from pyspark.sql import types as T

from ..api.co_process import KeyedBroadcastProcessFunction, KeyedCoProcessFunction, ProcessJoinFunction
from ..api.function import check_function, required_methods, signature
from ..api.state import StateKind
from ..connectors.registry import is_backlog_source
from ..connectors.two_inputs.source import ConnectedSource
from ..errors import FullWindowError
from ..operators import CO_PROCESS
from ..operators.co_process import BroadcastOperator, IntervalJoinOperator, check_bound
from ..operators.spec import INPUT, SIDES, TIME, StateType
from ..values.schema import nullable
from .lineage import Step


class TaggedStream:
    """Two source streams as one stream of tagged rows: what a two-input operator reads."""

    def __init__(self, first, second, keys: tuple[list[str], list[str]], key_fields: list, broadcast: bool = False):
        self.inputs = (first, second)
        self.spark = first.spark
        timed = first.step.detail.get("event_time") is not None
        fields = list(key_fields) + [T.StructField(INPUT, T.IntegerType())]
        if timed:
            fields.append(T.StructField(TIME, T.TimestampType()))
        fields += [T.StructField(side, nullable(s.schema)) for side, s in zip(SIDES, self.inputs)]
        self.schema = nullable(T.StructType(fields))
        names = [s.name for s in self.inputs]
        if names[0] == names[1]:
            names[1] += "#2"
        labels = [s.step.detail["label"] for s in self.inputs]
        detail = ConnectedSource.detail_of([(s.step.detail, s.schema, list(k)) for s, k in zip(self.inputs, keys)],
                                           TIME if timed else None, labels, names, self.schema, broadcast)
        second_name = f"broadcast({names[1]})" if broadcast else names[1]
        self.step = Step(name=f"connect({names[0]}, {second_name})", kind="source", parallelism=None, detail=detail)

    @property
    def name(self) -> str:
        return self.step.name


class _KeyedPair:
    """Two inputs, the first keyed: what ``StatefulStream`` asks of a keyed stream (the key named as the
    first's). ``second`` is the other keyed stream, or (``broadcast``) a source stream whose every record goes
    to every subtask."""

    selector = None

    def __init__(self, first, second, broadcast: bool = False):
        self.names = list(first.names)
        self.key_fields = list(first.key_fields)
        self.parallelism = first.parallelism
        other, keys = (second, []) if broadcast else (second.stream, second.columns)
        self.stream = TaggedStream(first.stream, other, (first.columns, keys), self.key_fields, broadcast)
        self.columns = self.names


class BroadcastStream:
    """``stream.broadcast()``: a stream whose every record goes to every subtask of the operator it is connected to
    (Flink's BroadcastStream); ``keyed.connect(it).process(fn)`` runs an ``fw.KeyedBroadcastProcessFunction``."""

    def __init__(self, stream):
        self.stream = _source(stream, "broadcast()")

    def __repr__(self) -> str:
        return f"BroadcastStream({self.stream.name!r}); keyed.connect(it).process(fw.KeyedBroadcastProcessFunction)"


class BroadcastConnectedStream:
    """A keyed stream connected with a broadcast stream (Flink's BroadcastConnectedStream)."""

    def __init__(self, keyed, broadcast):
        from .stateful import key_type

        if not isinstance(broadcast, BroadcastStream):
            raise FullWindowError(f"a keyed stream connects with a broadcast stream: keyed.connect(other.broadcast()); "
                                  f"got {type(broadcast).__name__} {broadcast!r:.60}")
        _source(keyed.stream, "keyed.connect(...)")
        key_type(keyed)
        if keyed.stream.spark is not broadcast.stream.spark:
            raise FullWindowError("connect: the two streams were made on different Spark sessions; accepted: one session")
        _same_timing(keyed.stream, broadcast.stream, "connect")
        self._pair = _KeyedPair(keyed, broadcast.stream, broadcast=True)

    def process(self, fn, schema=None):
        """Run an ``fw.KeyedBroadcastProcessFunction``: the keyed records per key, the broadcast ones everywhere."""
        fn, name = _checked_function(fn, KeyedBroadcastProcessFunction, "keyed.connect(other.broadcast()).process")
        return co_process(self._pair, BroadcastOperator(fn), name, schema, schema_owner=name)


def _same_timing(first, second, what: str) -> None:
    """Refuse in one line two inputs of which only one has an event time."""
    timed = [s.step.detail.get("event_time") is not None for s in (first, second)]
    if timed[0] != timed[1]:
        has, lacks = (first, second) if timed[0] else (second, first)
        raise FullWindowError(
            f"{what}: {has.name!r} has an event time and {lacks.name!r} has none; accepted: both with "
            "event_time='<column>' (the operator's watermark is the smaller of theirs) or neither")


def _checked_function(fn, base: type, what: str):
    """``fn`` (a ``base`` instance, or its class) defining what ``base`` requires, and its name; one line otherwise."""
    wanted = ", ".join(signature(base, method) for method in required_methods(base))
    return check_function(fn, base, f"{what} takes an fw.{base.__name__} ({wanted})")


def _source(stream, what: str):
    """``stream`` if it is a source with a backlog, read as it is; one line otherwise."""
    steps = stream.step.lineage()
    if len(steps) != 1 or not is_backlog_source(steps[0].detail):
        raise FullWindowError(f"{what} takes streams read straight from fw.from_files(...) or fw.from_table(...); "
                              f"{stream.name!r} is a {steps[-1].detail.get('source', 'derived')} stream")
    return stream


def keyed_pair(first, second, what: str) -> _KeyedPair:
    """Two KeyedStreams as one keyed input pair, checked: sources, one session, keys of the same types,
    event time on both or neither."""
    from .stateful import key_type

    for keyed in (first, second):
        _source(keyed.stream, what)
        key_type(keyed)  # key columns, top-level
    if first.stream.spark is not second.stream.spark:
        raise FullWindowError(f"{what}: the two streams were made on different Spark sessions; accepted: one session")
    types = [[f.dataType.simpleString() for f in k.key_fields] for k in (first, second)]
    if types[0] != types[1]:
        raise FullWindowError(
            f"{what}: the keys differ in type: {first.label} {', '.join(types[0])} ({first.stream.name}) and "
            f"{second.label} {', '.join(types[1])} ({second.stream.name}); accepted: key columns of the same types")
    _same_timing(first.stream, second.stream, what)
    return _KeyedPair(first, second)


class ConnectedStreams:
    """Two streams connected (Flink's ConnectedStreams): ``key_by(key1, key2)`` keys both."""

    def __init__(self, first, second):
        if not isinstance(second, type(first)):
            raise FullWindowError(f"connect takes a DataStream (fw.from_files or fw.from_table); got "
                                  f"{type(second).__name__} {second!r:.60}")
        self.first, self.second = first, second

    def key_by(self, key1, key2=None) -> ConnectedKeyedStreams:
        """Key the first input by ``key1`` and the second by ``key2`` (default: the same column name(s))."""
        pair = keyed_pair(self.first.key_by(key1), self.second.key_by(key1 if key2 is None else key2),
                          "connect(...).key_by")
        return ConnectedKeyedStreams(pair)

    def __repr__(self) -> str:
        return f"ConnectedStreams({self.first.name!r}, {self.second.name!r}); .key_by(key1, key2) keys them"


class ConnectedKeyedStreams:
    """Two connected streams keyed alike; ``process(fn)`` runs a ``KeyedCoProcessFunction`` over both."""

    def __init__(self, pair: _KeyedPair):
        self._pair = pair

    def process(self, fn, schema=None):
        """Run an ``fw.KeyedCoProcessFunction`` per key over both inputs; emits the key, then its rows."""
        fn, name = _checked_function(fn, KeyedCoProcessFunction, "connect(...).key_by(...).process")
        return co_process(self._pair, fn, name, schema)


class IntervalJoin:
    """``a.key_by(k).interval_join(b.key_by(k))``: ``between(lower, upper)`` sets the interval."""

    def __init__(self, first, second):
        if not isinstance(second, type(first)):
            raise FullWindowError(f"interval_join takes the other stream keyed: b.key_by('column'); got "
                                  f"{type(second).__name__} {second!r:.60}")
        self._pair = keyed_pair(first, second, "interval_join")
        if self._pair.stream.step.detail["event_time"] is None:
            raise FullWindowError("interval_join needs event times: read both inputs with event_time='<column>'")

    def between(self, lower, upper) -> IntervalJoined:
        """Join each left record at ``t`` with the right records at ``t + lower`` to ``t + upper`` (ms, inclusive)."""
        low, high = check_bound(lower, "lower"), check_bound(upper, "upper")
        if low > high:
            raise FullWindowError(f"interval_join between({lower!r}, {upper!r}): the lower bound is above the upper; "
                                  "accepted: lower <= upper")
        return IntervalJoined(self._pair, low, high)


class IntervalJoined:
    """An interval join with its interval; ``process(join)`` says what each joined pair emits.
    ``lower_bound_exclusive()`` and ``upper_bound_exclusive()`` leave a bound out of the interval, as
    PyFlink's ``IntervalJoined`` does (event times are milliseconds: an exclusive bound is the inclusive one
    a millisecond inside, as Flink's ``IntervalJoinOperator`` makes it). ``side_output_left_late_data()`` and
    ``side_output_right_late_data()`` keep that side's late records (Flink's ``sideOutputLeftLateData``,
    ``sideOutputRightLateData``) for ``job.late_records("left")`` / ``("right")``."""

    def __init__(self, pair: _KeyedPair, lower: int, upper: int, exclusive: tuple[bool, bool] = (False, False),
                 late: tuple = ()):
        self._pair, self.lower, self.upper, self.exclusive, self.late = pair, lower, upper, exclusive, late

    def lower_bound_exclusive(self) -> IntervalJoined:
        """The same join without the records exactly at ``t + lower``."""
        return IntervalJoined(self._pair, self.lower, self.upper, (True, self.exclusive[1]), self.late)

    def upper_bound_exclusive(self) -> IntervalJoined:
        """The same join without the records exactly at ``t + upper``."""
        return IntervalJoined(self._pair, self.lower, self.upper, (self.exclusive[0], True), self.late)

    def side_output_left_late_data(self) -> IntervalJoined:
        """The same join, keeping the left input's late records (event time at or before the watermark) for
        ``job.late_records("left")``, committed with the micro-batch that met them."""
        return self._keeping("left")

    def side_output_right_late_data(self) -> IntervalJoined:
        """The same join, keeping the right input's late records for ``job.late_records("right")``."""
        return self._keeping("right")

    def _keeping(self, side: str) -> IntervalJoined:
        late = tuple(s for s in ("left", "right") if s in self.late or s == side)
        return IntervalJoined(self._pair, self.lower, self.upper, self.exclusive, late)

    def _interval(self) -> tuple[int, int, str]:
        """The inclusive bounds the operator joins in, and the interval as the graph's label shows it."""
        low, high = self.lower + self.exclusive[0], self.upper - self.exclusive[1]
        shown = f"{'(' if self.exclusive[0] else '['}{self.lower}, {self.upper}{')' if self.exclusive[1] else ']'}"
        return low, high, shown

    def process(self, join, schema=None):
        """``join``: an ``fw.ProcessJoinFunction`` or ``fn(left, right)``; returns the rows of each pair."""
        takes = "interval_join(...).process takes an fw.ProcessJoinFunction or fn(left, right)"
        if isinstance(join, ProcessJoinFunction) or (isinstance(join, type) and issubclass(join, ProcessJoinFunction)):
            join, name = check_function(join, ProcessJoinFunction, takes)
        elif callable(join):
            from .arguments import function_name

            name = function_name(join)
        else:
            raise FullWindowError(f"{takes}; got {type(join).__name__} {join!r:.60}")
        from .stateful import struct_state_type

        ddls = [s.schema.simpleString()[len("struct<"):-1] for s in self._pair.stream.inputs]
        sides = [(ddl, struct_state_type(s.schema, ddl))  # each side's buffer holds that input's records
                 for ddl, s in zip(ddls, self._pair.stream.inputs)]
        low, high, shown = self._interval()
        operator = IntervalJoinOperator(low, high, join, sides[0][0], sides[1][0], self.late)
        declared = schema if schema is not None else getattr(join, "schema", None)
        label = f"interval_join{shown}({name})"
        states = {"left": (StateKind.LIST, sides[0][1]), "right": (StateKind.LIST, sides[1][1]),
                  "left_times": (StateKind.LIST, StateType(ddl=None)),
                  "right_times": (StateKind.LIST, StateType(ddl=None))}
        return co_process(self._pair, operator, label, declared, states=states, schema_owner=name)


def co_process(pair: _KeyedPair, fn, label: str, schema, states=None, schema_owner: str | None = None):
    """The StatefulStream of a co-process function over ``pair`` (``states``: given, else learned from ``open``)."""
    from .stateful import StatefulStream, function_parts, key_type, struct_state_type

    result, out, learned = function_parts(pair, fn, schema_owner or label, schema, states is None)
    first, second = pair.stream.inputs
    spec = CO_PROCESS.spec(
        function=fn, label=label, record=struct_state_type(pair.stream.schema, "record"), key=key_type(pair),
        event_time=pair.stream.step.detail["event_time"], result=result, states=learned if states is None else states,
        inputs=(tuple(first.schema.names), tuple(second.schema.names)))
    return StatefulStream(pair, spec, out)
