"""The streaming side of fw-magics: keyed operators over a source with a backlog (FLIP-327).

``fw.from_files(...).key_by(...).reduce/aggregate/process(...).start(mode=...)`` runs here:
the backlog as one sorted batch job (``backlog``), the switch (``switch``), then a Structured
Streaming query with ``transformWithState`` (``query``), the changelog (``sink``), all driven by
a :class:`StreamingJob` (``job``) that records its phases in the job's event log and resumes
after a restart. The per-key core (``processors``) is the same Python code in every mode.
"""

__all__ = ["StreamingJob", "start"]


def start(stateful, **options):
    """Start (or continue) the job of a StatefulStream; see ``StatefulStream.start``."""
    from .job import start as start_job

    return start_job(stateful, **options)


def __getattr__(name):
    if name == "StreamingJob":
        from .job import StreamingJob

        return StreamingJob
    raise AttributeError(name)
