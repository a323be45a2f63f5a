"""Job recovery (FLIP-383): the event log, its replay, resume decisions, locks. No Spark."""

from . import events
from .event_store import JobEventStore
from .job_log import JobLog
from .lock import JobLock, JobLockedError, JobLockLostError
from .paths import safe_job_path
from .replay import JobState, ResumeDecision, decide_resume, replay, subtask_attempts

__all__ = [
    "JobEventStore", "JobLock", "JobLog", "JobLockedError", "JobLockLostError", "JobState", "ResumeDecision", "events",
    "decide_resume", "replay", "safe_job_path", "subtask_attempts",
]
