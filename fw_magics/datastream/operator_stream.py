"""A non-keyed operator over a stream, with operator state (FLIP-8): ``fw.from_files(...).process(fn)``
(or ``fw.from_table(...)``).

``DataStream.process(fn)`` checks the function and its output schema here, before anything
runs, and gives an :class:`OperatorStream`; ``start()`` runs it as a job of
``fw_magics.runtime.streaming`` (the one late import upward, as ``StatefulStream.start`` does). The
operator runs at a parallelism ``p``: subtask ``i`` gets the records source subtask ``i`` reads (a
forward edge: a folder's files are spread over the source subtasks, a table is one split read by
subtask 0), and keeps its own operator state.
"""

from __future__ import annotations

from pyspark.sql import types as T

from ..api.process_function import check_process_function
from ..connectors.registry import is_backlog_source
from ..errors import FullWindowError
from ..operators import OPERATOR
from ..operators.spec import OperatorSpec
from ..values.schema import nullable, parse_schema
from .lineage import Step
from .stateful import struct_state_type


def process(stream, fn, schema=None) -> OperatorStream:
    """The OperatorStream of ``fn`` (an ``fw.ProcessFunction``) over ``stream`` (a ``fw.from_files`` or
    ``fw.from_table`` stream)."""
    if isinstance(fn, type):
        raise FullWindowError(f"process takes an instance of the function: {fn.__name__}(), not the class")
    name = check_process_function(fn)
    source = stream.step.lineage()[0]
    if not is_backlog_source(source.detail) or stream.step is not source:
        raise FullWindowError(
            f"process(fn) runs a ProcessFunction over a stream read by fw.from_files(...) or fw.from_table(...); "
            f"{stream.name!r} is "
            f"{'a ' + str(source.detail.get('source', 'derived')) + ' stream' if stream.step is source else 'derived'}"
            " (for bounded data use full_window_partition())"
        )
    declared = schema if schema is not None else fn.schema
    if declared is None:
        raise FullWindowError(
            f"{name} emits rows of an unknown schema: set {name}.schema = '...' (a DDL string of the output "
            "columns) or pass schema='...' to process"
        )
    result = nullable(parse_schema(declared, stream.spark, what=f"{name}.schema"))
    spec = OPERATOR.spec(function=fn, label=name, record=struct_state_type(stream.schema, "record"),
                         result=struct_state_type(result, "result"))
    return OperatorStream(stream, spec, result)


class OperatorStream:
    """A running non-keyed operator over a stream; ``start()`` runs it, ``job_graph()`` draws it.

    ``schema``: the rows the function emits (``job.changelog()`` lists them with the subtask
    and micro-batch that emitted them). ``parallelism``: how many subtasks it runs with by
    default (``spark.sql.shuffle.partitions`` when the source was made; ``start(parallelism=N)``
    chooses another for a new job). Nothing runs on Spark until ``start()``.
    """

    def __init__(self, stream, spec: OperatorSpec, schema: T.StructType):
        self.stream = stream
        self.spec = spec
        self.schema = schema
        self.parallelism = int(stream.step.detail["partitions"])
        self.step = Step(name=spec.kind.step_name(spec), kind=spec.kind.graph_kind, parallelism=self.parallelism,
                         parent=stream.step,
                         detail={"schema": schema, "streaming": True, "identity": {"function": spec.function}})

    @property
    def source(self):
        """The DataStream it reads (a ``fw.from_files`` or ``fw.from_table`` stream)."""
        return self.stream

    @property
    def name(self) -> str:
        return self.step.name

    @property
    def spark(self):
        return self.stream.spark

    @property
    def key_names(self) -> tuple[str, ...]:
        return ()

    @property
    def columns(self) -> list[str]:
        return list(self.schema.names)

    def job_graph(self):
        """The streaming job graph: source -> operator (forward) -> changelog sink."""
        from .job_graph import build_operator_graph

        return build_operator_graph(self)

    def start(self, job_dir=None, job_name=None, sink=None, trigger=None, max_files_per_trigger=None,
              from_savepoint=None, parallelism=None, reset=False, restart=None, resume="auto",
              allow_non_restored_state=False):
        """Run as a streaming job in ``job_dir/job_name`` (default ``.fw-jobs/<name>``); see docs/state.md.

        Every file of the source is read by the stream (those present at the first start in its
        first micro-batch, at most ``max_files_per_trigger`` at a time). ``sink``: a Parquet
        table directory or ``fn(df, batch_id)``, besides the job's own changelog. ``trigger``: a
        processing-time interval ("1 second") or "available_now". Starting again with the same
        job directory and name continues the job (a changed function is refused in one line;
        ``reset=True`` discards what the job recorded and starts afresh). ``from_savepoint``: a
        path ``job.savepoint()`` returned: a new job (new job name) starts from its operator
        state and source positions, at ``parallelism`` (1 to 1024; default the savepoint's); a state held
        in another mode than the function asks for it is refused in one line (``fw.check_savepoint(path,
        stream)`` shows each state's verdict), and so is operator state a function that keeps none any more
        is given, unless ``allow_non_restored_state=True`` drops it (Flink's flag).
        ``restart``: what a failure does, as in ``execute()`` (default ``FixedDelayRestart()``).
        ``resume``: as in ``execute()``, "auto", "never" (``reset=True``) or "require".
        """
        from ..runtime.streaming.driver.start import start  # the runtime, above: a documented late import

        return start(self, job_dir=job_dir, job_name=job_name, mode="stream", sink=sink,
                     trigger=trigger, max_files_per_trigger=max_files_per_trigger,
                     from_savepoint=from_savepoint, parallelism=parallelism, reset=reset,
                     restart=restart, resume=resume, allow_non_restored_state=allow_non_restored_state)

    def __repr__(self) -> str:
        fields = ", ".join(f"{f.name}: {f.dataType.simpleString()}" for f in self.schema.fields)
        return (f"OperatorStream {self.name!r} over {self.source.name!r} at parallelism {self.parallelism} "
                f"[{fields}]; .start() runs it")
