"""Running a stream as a recoverable batch job: regions, failover, events, resume."""

from .job import default_job_dir, execute
from .result import JobResult

__all__ = ["JobResult", "default_job_dir", "execute"]
