"""fw_magics.widgets: the job-graph widget and the recovery panel (ipywidgets + anywidget).

Installed as ``fw_magics.widgets`` from the top-level folder ``widgets/``. Graphviz lays the
graph out in Python; the front-end code (``static/``) ships in the package: no CDN.
"""

import os

from fw_magics.errors import FullWindowError

from .graph_view import GraphView
from .recovery_panel import RecoveryPanel


def show_graph(value, title: str | None = None) -> GraphView:
    """A GraphView of a DataStream, a JobResult, a running or finished streaming job, or a JobGraph.

    Anything else is a one-line FullWindowError naming its type and what is accepted.
    """
    from fw_magics.datastream.datastream import DataStream
    from fw_magics.datastream.job_graph import build_graph
    from fw_magics.graph import JobGraph
    from fw_magics.runtime.batch.job_result import JobResult

    if isinstance(value, DataStream):
        return GraphView(build_graph(value), stream=value, title=title or value.name)
    if isinstance(value, JobResult):
        view = GraphView(value.graph, stream=value.stream, title=title or f"job {value.job_name!r}")
        vertex = view.vertex_of
        view.show_events(value.events(), recovered={(vertex[op], i) for op, i in value.recovered})
        return view
    if isinstance(value, JobGraph):
        return GraphView(value, title=title)
    if _is_streaming_job(value):
        return _streaming_view(value, title)
    raise FullWindowError(f"cannot draw a {type(value).__name__}; accepted: a DataStream, a JobResult, a streaming job "
                          "(start()) or a JobGraph")


def _is_streaming_job(value) -> bool:
    """A StreamingJob (or its OperatorJob)."""
    from fw_magics.runtime.streaming.driver.job import StreamingJob

    return isinstance(value, StreamingJob)


def _streaming_view(job, title) -> GraphView:
    """A running or finished streaming job: its phase, and its savepoints in the rescale what-if; for a
    job restored from a savepoint, where its operator state came from, at once."""
    from fw_magics.runtime.streaming.savepoints.files import list_savepoints

    from .stream_status import stream_status

    view = GraphView(job.graph, title=title or f"streaming job {job.job_name!r}")
    view.show_stream(stream_status(job.events()), graph=job.job_graph())
    restored = job.restored_from
    view.offer_savepoints(([restored] if restored else []) + list_savepoints(job.storage.base), job.parallelism)
    if restored and os.path.isdir(restored):
        view.rescale_savepoint(restored, job.parallelism, restored=True)
    return view


__all__ = ["GraphView", "RecoveryPanel", "show_graph"]
