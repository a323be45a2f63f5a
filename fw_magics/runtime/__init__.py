"""Running a stream as a recoverable batch job: regions, failover, events, resume."""

__all__ = ["JobResult", "default_job_dir", "execute"]


def __getattr__(name):  # hooks are importable without loading the job machinery
    if name == "execute":
        from .batch.job import execute

        return execute
    if name == "default_job_dir":
        from ..recovery.paths import default_job_dir

        return default_job_dir
    if name == "JobResult":
        from .batch.job_result import JobResult

        return JobResult
    raise AttributeError(name)
