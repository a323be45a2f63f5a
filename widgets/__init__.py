"""fw_magics.widgets: the job-graph widget and the recovery panel (ipywidgets + anywidget).

Installed as ``fw_magics.widgets`` from the top-level folder ``widgets/``. Graphviz lays the
graph out in Python; the front-end code (``static/``) ships in the package: no CDN.
"""

import os

from fw_magics.errors import FullWindowError

from .graph_view import GraphView
from .job_view import JobView
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
    _offer_state_inspector(view, job)
    return view


def _offer_state_inspector(view: GraphView, job) -> None:
    """A keyed job's operator shows the state inspector when selected; every other operator says why not."""
    import functools

    from .state_inspector import for_job, no_state

    inspector = for_job(job)
    view.inspect_state({} if inspector is None else {inspector.operator: inspector}, functools.partial(no_state, job))


def show_job(value, job_dir: str | None = None, key=None, mode=None, sort: str | None = None, n: int = 20) -> JobView:
    """A JobView of a streaming job: a running or ended ``StreamingJob`` (``job.show()``), or a job's name, found
    as ``%fw_recover`` finds it (``job_dir``, else ``$FW_JOB_DIR`` or ``.fw-jobs``, the jobs this kernel ran and
    the per-user index) and shown read-only from its folder; ``key``: its key column(s), for the update mode."""
    if _is_streaming_job(value):
        return JobView(value, key_names=key, mode=mode, sort=sort, n=n)
    if not isinstance(value, str):
        raise FullWindowError(f"cannot show a {type(value).__name__}; accepted: a streaming job (start()) or a job's name")
    from fw_magics.recovery.jobs import find_jobs
    from fw_magics.recovery.paths import default_job_dir

    found = [job for job in find_jobs(job_dir or default_job_dir(), elsewhere=job_dir is None).jobs if job.name == value]
    streaming = [job for job in found if job.streaming]
    if not streaming:
        names = sorted({job.name for job in find_jobs(job_dir or default_job_dir(), job_dir is None).jobs
                        if job.streaming})
        raise FullWindowError(f"no streaming job named {value!r:.80} in {job_dir or default_job_dir()!r}"
                              f"{'' if job_dir else ' nor in the job index'}; streaming jobs found: "
                              f"{', '.join(names[:10]) or 'none'}")
    keys = [key] if isinstance(key, str) else key
    return JobView(recorded=streaming[0], key_names=keys, mode=mode, sort=sort, n=n)


__all__ = ["GraphView", "JobView", "RecoveryPanel", "show_graph", "show_job"]
