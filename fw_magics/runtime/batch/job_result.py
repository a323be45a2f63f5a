"""JobResult: what execute() returns, read back from the committed result files."""

from __future__ import annotations

from ...datastream.datastream import DataStream
from ...datastream.lineage import Step
from ...recovery.paths import EVENTS, result_file
from .result_files import read_results


class JobResult:
    """The output of a finished job and what ran where.

    ``ran``: the (operator, subtask) execution vertices computed in this process;
    ``recovered``: those kept from an earlier run because their results were intact;
    ``regions_run``: the pipelined regions scheduled, in order; ``attempts``: Spark jobs run;
    ``afresh``: why a finished run was set aside and the job ran afresh (its rows, a function
    or another part of its content changed), else None; ``notes``: anything else worth
    knowing about how the result was obtained (read back without the lock, results kept
    without a content check). The repr says all of it, with the job's name.
    """

    def __init__(self, *, stream, graph, root, job_name, sink, vertices, ran, recovered, regions_run, attempts,
                 afresh=None, notes=()):
        self.job_name, self.job_dir, self.graph = job_name, root, graph
        self.ran, self.recovered = frozenset(ran), frozenset(recovered)
        self.regions_run, self.attempts = list(regions_run), attempts
        self.afresh, self.notes = afresh, tuple(notes)
        self._stream, self._sink, self._vertices = stream, sink, vertices

    @property
    def stream(self) -> DataStream:
        """The DataStream that was executed (its job graph is ``graph``)."""
        return self._stream

    def _result_stream(self) -> DataStream:
        sink = self._sink
        paths = [result_file(sink.name, i) for i in range(sink.parallelism)]
        schema = sink.steps[-1].detail["schema"]
        spark = self._stream.spark
        step = Step(name=f"{self.job_name} (result)", kind="source", parallelism=sink.parallelism)
        return DataStream(lambda: read_results(spark, self.job_dir, paths, schema), spark, step, schema)

    def to_dataframe(self):
        return self._result_stream().to_dataframe()

    def to_pandas(self):
        return self._result_stream().to_pandas()

    def collect(self):
        return self._result_stream().collect()

    def collect_partitions(self):
        return self._result_stream().collect_partitions()

    def show_graph(self, title=None):
        """The job-graph widget, each operator coloured by what ran and what was recovered."""
        from ...widgets import show_graph

        return show_graph(self, title)

    def events(self) -> list[dict]:
        """The job's event log, in write order (FLIP-383's job events)."""
        from ...recovery import JobEventStore
        from ...recovery.filesystem import Storage

        return JobEventStore(Storage(self.job_dir).path(EVENTS)).read_events()

    def __repr__(self) -> str:
        extra = ([f"ran afresh: {self.afresh}"] if self.afresh else []) + list(self.notes)
        return (
            f"JobResult({self.job_name!r}: {len(self.ran)} execution vertices ran, "
            f"{len(self.recovered)} recovered, {self.attempts} Spark jobs"
            + "".join(f"; {text}" for text in extra) + ")"
        )
