"""DataStream: a named, partitioned stream of records backed by a Spark DataFrame."""

from __future__ import annotations

import functools
import warnings
from collections.abc import Callable

import pyarrow as pa
from pyspark.sql import DataFrame
from pyspark.sql import functions as F
from pyspark.sql import types as T

from ..errors import FullWindowError
from ..spark.actions import run_action
from ..values.records import Record, batch_records
from ..values.schema import arrow_schema, nullable
from .lineage import Step
from .physical import workers
from .physical.arrow_calls import map_in_arrow

_UNREAD = object()  # the plan has not been read yet


class DataStream:
    """A stream of records over a PySpark DataFrame (classic or Spark Connect).

    Spark partition ``i`` of the DataFrame is subtask ``i`` of the operator. Build one with
    ``fw.from_dataframe``, ``fw.from_pandas`` or ``fw.from_records``; transform it with
    ``full_window_partition()`` or ``key_by(...)``; read it with the ``to_*``/``collect*``
    methods. Nothing runs on Spark until one of those is called.
    """

    def __init__(self, build: Callable[[], DataFrame] | DataFrame, spark, step: Step, schema: T.StructType | None = None,
                 partitions: int | None = None, placed: Callable[[], DataFrame] | None = None):
        if isinstance(build, DataFrame):
            frame = build
            self._build: Callable[[], DataFrame] = lambda: frame
        else:
            self._build = build
        self._df: DataFrame | None = None
        self._placed_build = placed  # None: the DataFrame is placed (partition i = subtask i)
        self._placed: DataFrame | None = None
        self._spark = spark
        self._step = step
        self._schema = schema
        if schema is not None:
            step.detail.setdefault("schema", schema)  # the runtime reads materialized results with it
        self._partitions = step.parallelism if partitions is None else partitions
        self._planned = _UNREAD

    # -- identity ----------------------------------------------------------------

    @property
    def name(self) -> str:
        return self._step.name

    @property
    def spark(self):
        """The SparkSession the stream runs on (classic or Spark Connect)."""
        return self._spark

    @property
    def step(self) -> Step:
        """The stream's last operator; ``step.lineage()`` is every operator, source first.

        The job graph (``job_graph()``) and the runtime's job vertices are built from it.
        """
        return self._step

    @property
    def known_partitions(self) -> int | None:
        """The partition count when known without a Spark job, else None (``num_partitions()`` counts)."""
        return self._partitions

    def planned_partitions(self) -> int | None:
        """The partition count when known without a job: made by fw-magics (``known_partitions``)
        or fixed by the DataFrame's plan (``df.repartition(3)``: see ``streams.planned``), else None."""
        if self._partitions is not None:
            return self._partitions
        if self._planned is _UNREAD:
            from .physical.planned import partitions_of

            self._planned = partitions_of(self.placed_dataframe())
        return self._planned

    @property
    def case_sensitive(self) -> bool:
        """Spark's rule for column names on this stream's session (``spark.sql.caseSensitive``,
        false by default), read once per lineage: every stream derived from the same source shares it."""
        from ..values.schema import case_sensitive

        shared = self._step.lineage()[0].detail
        if "case_sensitive" not in shared:
            shared["case_sensitive"] = case_sensitive(self._spark)
        return shared["case_sensitive"]

    @property
    def schema(self) -> T.StructType:
        """The Spark schema of the records (no Spark job runs to learn it)."""
        if self._schema is None:
            self._schema = self.to_dataframe().schema
        return self._schema

    @property
    def columns(self) -> list[str]:
        return list(self.schema.names)

    def num_partitions(self) -> int:
        """How many partitions (subtasks) the stream has.

        Known without Spark for streams made by ``from_records``/``from_pandas`` and every
        operation on them; for a DataFrame of unknown layout one small job counts them.
        """
        if self._partitions is None and self.planned_partitions() is not None:
            self._partitions = self._planned
        if self._partitions is None:
            frame = self.placed_dataframe().select(F.lit(0).alias("_"))
            # one tiny row per partition, read through Arrow (a blocking Py4J count() could not
            # be interrupted cleanly)
            counted = run_action(lambda: frame.mapInArrow(workers.count_partition, "p int").toArrow().num_rows,
                                 self._spark)
            self._partitions = int(counted)
        return self._partitions

    @property
    def is_streaming(self) -> bool:
        """Whether the stream is unbounded (a streaming DataFrame source)."""
        return bool(self._step.lineage()[0].detail.get("streaming", False))

    def __repr__(self) -> str:
        fields = ", ".join(f"{f.name}: {f.dataType.simpleString()}" for f in self.schema.fields)
        parts = self._partitions if self._partitions is not None else "?"
        return f"DataStream {self.name!r} [{fields}] in {parts} partitions"

    def _repr_mimebundle_(self, include=None, exclude=None):
        """Notebook display: a preview of each partition from one Spark job (fw_magics.datastream.preview); an
        unbounded stream, what it reads and how to start it, no job (fw_magics.datastream.unbounded)."""
        if self.is_streaming:
            from .unbounded import mimebundle as unbounded

            return unbounded(self)
        from .preview import mimebundle

        return mimebundle(self)

    # -- transformations -----------------------------------------------------------

    def full_window_partition(self):
        """All records of each partition as one window, processed at end of input (FLIP-380)."""
        from .windowed import PartitionWindowedStream

        self.require_bounded("full_window_partition()")
        return PartitionWindowedStream(self)

    def key_by(self, key):
        """Partition by key: column name(s) or a function of the record (-> KeyedStream)."""
        from .keyed import KeyedStream

        return KeyedStream(self, key)

    def connect(self, other):
        """Connect with another source stream (-> ConnectedStreams): ``key_by(key1, key2).process(co_fn)``
        runs an ``fw.KeyedCoProcessFunction`` over both (docs/streaming.md, two inputs)."""
        from .connected import ConnectedStreams

        return ConnectedStreams(self, other)

    def broadcast(self):
        """This stream, every record to every subtask (-> BroadcastStream): ``keyed.connect(it).process(fn)``
        runs an ``fw.KeyedBroadcastProcessFunction`` whose broadcast state it fills (docs/state.md)."""
        from .connected import BroadcastStream

        return BroadcastStream(self)

    def process(self, fn, schema=None):
        """Run an ``fw.ProcessFunction`` per record on a ``fw.from_files`` stream, non-keyed (-> OperatorStream).

        With ``fw.CheckpointedFunction`` it keeps operator state (list, union list, broadcast:
        FLIP-8), which savepoints keep and restores at another parallelism redistribute;
        ``start()`` runs it. See docs/state.md.
        """
        from .operator_stream import process

        return process(self, fn, schema)

    def job_graph(self):
        """The job graph (FLIP-331 attributes, chains, pipelined regions) of this stream."""
        from .job_graph import build_graph

        return build_graph(self)

    def show_graph(self, title=None):
        """The interactive job-graph widget (fw_magics.widgets.GraphView) of this stream."""
        from ..widgets import show_graph

        return show_graph(self, title)

    def execute(self, job_dir=None, job_name=None, failover="region", restart=None, resume="auto"):
        """Run as a recoverable batch job in ``job_dir`` (default ``.fw-jobs/``); see fw.execute."""
        from ..runtime.batch.job import execute  # the runtime, above this layer: a documented late import

        return execute(self, job_dir=job_dir, job_name=job_name, failover=failover, restart=restart, resume=resume)

    def require_bounded(self, what: str) -> None:
        """Refuse, in one line, a full-window ``what`` on a streaming (unbounded) source."""
        if self.is_streaming:
            raise FullWindowError(
                f"full-window processing needs bounded input: {self.name!r} is a streaming "
                f"DataFrame and {what} would never emit; read the data as a batch DataFrame "
                "(spark.read instead of spark.readStream)"
            )

    def derive(self, build, step: Step, schema: T.StructType | None = None, partitions: int | None = None,
               placed=None) -> DataStream:
        """A stream computed from this one: ``build()`` makes its DataFrame, ``step`` is its operator.

        How each operation makes its output; ``partitions``: its partition count, when known;
        ``placed()``: its DataFrame with subtask i's records in partition i, when ``build()``'s
        are not (see ``placed_dataframe``).
        """
        return DataStream(build, self._spark, step, schema, partitions, placed)

    # -- reading -------------------------------------------------------------------

    def to_dataframe(self) -> DataFrame:
        """The Spark DataFrame behind the stream (lazy: no job runs).

        Its records come in the stream's order (partition after partition). Its Spark
        partitions are the stream's subtasks, except after a non-keyed ``aggregate`` with
        Spark Columns, whose one row per subtask sits in one Spark partition (in subtask
        order): placing each row in its own partition costs an exchange that only
        per-partition reads (``collect_partitions()``, a later full-window operation,
        ``execute()``) pay, through ``placed_dataframe()``.
        """
        if self._df is None:
            self._df = self._build()
        return self._df

    def placed_dataframe(self) -> DataFrame:
        """The DataFrame whose Spark partition ``i`` holds exactly subtask ``i``'s records (lazy)."""
        if self._placed_build is None:
            return self.to_dataframe()
        if self._placed is None:
            self._placed = self._placed_build()
        return self._placed

    def to_pandas(self):
        return run_action(lambda: _to_pandas(self.to_dataframe()), self._spark)

    def to_arrow(self) -> pa.Table:
        return run_action(lambda: self.to_dataframe().toArrow(), self._spark)

    def collect(self) -> list[Record]:
        """All records, partition after partition."""
        return list(batch_records(self.to_arrow()))

    def collect_partitions(self) -> list[list[Record]]:
        """One list of records per partition, in partition order (empty partitions included)."""
        frame = self.placed_dataframe()
        data_schema = nullable(frame.schema)
        tagged = T.StructType(
            data_schema.fields
            + [T.StructField(workers.PID_COLUMN, T.IntegerType()), T.StructField(workers.SEQ_COLUMN, T.LongType())]
        )
        marker = arrow_schema(tagged)
        table = run_action(
            lambda: map_in_arrow(frame, functools.partial(workers.tag_partition, marker), tagged).toArrow(), self._spark
        )
        table = table.sort_by([(workers.PID_COLUMN, "ascending"), (workers.SEQ_COLUMN, "ascending")])
        pids = table.column(workers.PID_COLUMN).to_pylist()
        seqs = table.column(workers.SEQ_COLUMN).to_pylist()
        data = table.drop_columns([workers.PID_COLUMN, workers.SEQ_COLUMN])
        records = list(batch_records(data))
        count = (max(pids) + 1) if pids else 0
        partitions: list[list[Record]] = [[] for _ in range(count)]
        for pid, seq, record in zip(pids, seqs, records):
            if seq >= 0:
                partitions[pid].append(record)
        self._partitions = count
        return partitions


def _to_pandas(frame):
    """``frame.toPandas()`` without PySpark's warning that Arrow "reached the error below":
    the error itself follows, once."""
    with warnings.catch_warnings():
        warnings.filterwarnings("ignore", message="toPandas attempted Arrow optimization", category=UserWarning)
        return frame.toPandas()
