"""Running a stream as a recoverable batch job: regions, failover, events, resume."""

__all__ = ["JobResult", "default_job_dir", "execute"]


def __getattr__(name):  # the planner is usable without loading the recovery machinery
    if name in ("execute", "default_job_dir"):
        from . import job

        return getattr(job, name)
    if name == "JobResult":
        from .result import JobResult

        return JobResult
    raise AttributeError(name)
