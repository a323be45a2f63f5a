"""Operator state inside a keyed operator (FLIP-8): one store per state partition, kept beside its keys.

A ``KeyedProcessFunction`` or ``KeyedCoProcessFunction`` that is also an ``fw.CheckpointedFunction``
has, besides each key's state, the operator state of its subtask: list, union list and broadcast
state that every key of the subtask sees. In fw-magics a keyed operator's subtask is a state
partition of its ``transformWithState`` (the keys Spark hashes to it), so its operator state is
kept in that partition's own state store, committed with every micro-batch as the keys' state is:
under one fixed key (``placeholder``: 0, "", false... per column), in its own value state
``fw_operator``, which no key's state (``fw_state``) shares, so a real key of that value keeps its
state apart. (Not the all-null key: in a broadcast job, a micro-batch of broadcast rows only wrote
and read it as the key 0, most likely because Spark encodes the grouping key by the nullability of
that micro-batch's plan.) Per micro-batch, in each state partition that has a key or a timer to run::

    before its first key: the store read back (else, after a restore, the savepoint's share of this
                          subtask; else fresh), then fn.initialize_state(ctx), then fn.open(ctx)
    each key:             process_element / on_timer, which see the function's fields and states
    at its end:           fn.snapshot_state(ctx), the store written back, then fn.close()

A savepoint reads each partition's snapshot with Spark's state data source (``partition_id``; a
partition that never ran the function has an empty one), and a restore at another parallelism
redistributes them by each state's mode (``fw_magics.state.redistribute_snapshots``), as a
non-keyed operator's are. Keys and operator state move independently on a rescale, as in Flink.
"""

from __future__ import annotations

import datetime as _dt
import decimal
import json

from pyspark.sql import types as T

from ....errors import FullWindowError
from ..operator.core import SubtaskState
from ..operator.query import OPERATOR_VARIABLE, batch_id

#: Spark's schema of the value state that holds a partition's operator state (JSON text).
STATE_SCHEMA = "state string"


class PartitionOperatorState:
    """The operator state of the state partition a ``KeyedProcessor`` task runs (pickled into the tasks).

    ``restored``: the snapshots of a restored job's subtasks (one per new subtask, already
    redistributed), read where a partition has not written its own yet; None for a job not restored.
    """

    def __init__(self, key_types, parallelism: int, restored: list[dict] | None = None):
        self.home_key = tuple(placeholder(t) for t in key_types)
        self.parallelism = parallelism
        self.restored = restored
        self.state = None  # the SubtaskState, once opened in a task

    def declare(self, handle):
        """In ``init``: the value state it is kept in (Spark needs every state variable declared there)."""
        self.state = None
        return handle.getValueState(OPERATOR_VARIABLE, STATE_SCHEMA)

    def open(self, handle, variable, function, partition: int, key) -> None:
        """Before the partition's first key (``key``, the one Spark is calling for): restore or start the
        store, and initialize ``function`` over it."""
        if partition >= self.parallelism:
            raise FullWindowError(
                f"state partition {partition} of a job at parallelism {self.parallelism}: operator state inside a "
                "keyed operator needs the query's state partitions to be the job's (a Spark Connect server that "
                "sets spark.sql.shuffle.partitions for every query?); remove that setting")
        api = _state_client(handle)
        api.set_implicit_key(self.home_key)
        try:
            stored = variable.get()
        finally:
            api.set_implicit_key(key)
        if stored is not None:
            text = stored[0]
        elif self.restored is not None:
            text = json.dumps(self.restored[partition])
        else:
            text = None
        self.state = SubtaskState(function, partition, self.parallelism, text)

    def close(self, handle, variable) -> None:
        """At the partition's end (no key current): snapshot the function's state and write it back."""
        if self.state is None:
            return
        text, self.state = self.state.snapshot(batch_id()), None
        api = _state_client(handle)
        api.set_implicit_key(self.home_key)
        try:
            variable.update((text,))
        finally:
            api.remove_implicit_key()


def _state_client(handle):
    """The handle's client of Spark's state server, whose ``set_implicit_key`` reaches a key Spark is not
    calling for: pyspark has no public way to (its ``StatefulProcessorHandle`` is bound to the current key).
    The one use of a private pyspark name in fw-magics (tests/test_layers.py names it), checked here so that
    a pyspark that renamed it fails in one line, not deep in a task."""
    client = getattr(handle, "_statefulProcessorApiClient", None)
    if client is None or not all(callable(getattr(client, m, None)) for m in ("set_implicit_key", "remove_implicit_key")):
        import pyspark

        raise FullWindowError(
            f"operator state inside a keyed operator needs pyspark's state client (StatefulProcessorHandle."
            f"_statefulProcessorApiClient.set_implicit_key), which pyspark {pyspark.__version__} lacks; accepted: "
            "pyspark 4.0 to 4.3")
    return client


def placeholder(data_type):
    """A fixed, non-null value of a key column's Spark type: the key a partition's operator state is kept under."""
    if isinstance(data_type, (T.StringType, T.VarcharType, T.CharType)):
        return ""
    if isinstance(data_type, (T.ByteType, T.ShortType, T.IntegerType, T.LongType)):
        return 0
    if isinstance(data_type, (T.FloatType, T.DoubleType)):
        return 0.0
    if isinstance(data_type, T.DecimalType):
        return decimal.Decimal(0)
    if isinstance(data_type, T.BooleanType):
        return False
    if isinstance(data_type, T.DateType):
        return _dt.date(1970, 1, 1)
    if isinstance(data_type, (T.TimestampType, T.TimestampNTZType)):
        return _dt.datetime(1970, 1, 1) if isinstance(data_type, T.TimestampNTZType) else _dt.datetime(
            1970, 1, 1, tzinfo=_dt.timezone.utc)
    if isinstance(data_type, T.BinaryType):
        return b""
    if isinstance(data_type, T.StructType):
        return tuple(placeholder(f.dataType) for f in data_type.fields)
    if isinstance(data_type, T.ArrayType):
        return []
    raise FullWindowError(f"operator state inside a keyed operator: a key column of type {data_type.simpleString()} "
                          "has no fixed value to keep it under; accepted: key columns of a scalar, struct or array type")
