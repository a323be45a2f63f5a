"""Running a stream as a recoverable batch job: regions, failover, events, resume."""

__all__ = ["JobResult", "default_job_dir", "execute"]


def __getattr__(name):  # hooks are importable without loading the job machinery
    if name in ("execute", "default_job_dir"):
        from .batch import job

        return getattr(job, name)
    if name == "JobResult":
        from .batch.job_result import JobResult

        return JobResult
    raise AttributeError(name)
