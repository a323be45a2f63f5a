"""A job's event log as a table a tutorial shows (tutorials 4 and 6).

    event_table(job)                                   # a job's events: type and the usual fields
    event_table(job, "vertex", "subtask", "records_out")
    event_table(recorded_events(job_dir, "restarted")) # the log a dead driver left

Watermarks (epoch milliseconds) show as UTC times, an event's ``time`` as a clock time,
counts as integers; a field an event does not have is blank.
"""

from __future__ import annotations

import os

__all__ = ["STREAM_COLUMNS", "event_table", "recorded_events"]

#: the fields a streaming job's table shows by default
STREAM_COLUMNS = ("phase", "mode", "run", "subtask", "watermark", "state_writes", "batch", "input_rows",
                  "state_rows_updated")


def recorded_events(job_dir: str, job_name: str) -> list[dict]:
    """The events recorded in the log of the job ``job_name`` under ``job_dir`` (read back as the
    recovery panel reads them: a torn record skipped), whichever process wrote them."""
    from ..recovery.jobs import read_job

    return list(read_job(os.path.join(job_dir, job_name), job_name).events)


def event_table(job_or_events, *columns: str):
    """The events of a job (anything with ``events()``) or a list of events as a pandas table:
    ``type``, then ``columns`` (default: :data:`STREAM_COLUMNS`, those any event has)."""
    import pandas as pd

    events = job_or_events.events() if hasattr(job_or_events, "events") else list(job_or_events)
    log = pd.DataFrame(events)
    wanted = [c for c in (columns or STREAM_COLUMNS) if c in log]
    log = log[["type", *wanted]].copy()
    for column in wanted:
        if column == "watermark":
            log[column] = pd.to_datetime(log[column], unit="ms", utc=True)
        elif column == "time":
            log[column] = pd.to_datetime(log[column], unit="s").dt.strftime("%H:%M:%S.%f").str[:-3]
        elif pd.api.types.is_numeric_dtype(log[column]):
            log[column] = log[column].astype("Int64")
    return log.astype(object).where(log.notna(), "")
