"""A job's event log as a table a tutorial shows (tutorials 4 and 6); a second connection that changes
a database table while a job reads it (tutorial 9).

    event_table(job)                                   # a job's events: type and the usual fields
    event_table(job, "vertex", "subtask", "records_out")
    event_table(recorded_events(job_dir, "restarted")) # the log a dead driver left
    other = other_connection(server)                   # a second session of a ScratchPostgres
    other.run("UPDATE orders SET ...", "DELETE FROM orders WHERE ...")   # one transaction

Watermarks (epoch milliseconds) show as UTC times, an event's ``time`` as a clock time,
counts as integers; a field an event does not have is blank.
"""

from __future__ import annotations

import os

__all__ = ["STREAM_COLUMNS", "OtherConnection", "event_table", "other_connection", "recorded_events"]

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


class OtherConnection:
    """A second session of a database server (a ``ScratchPostgres``), as another program writing to a
    table a job reads: ``run(*statements)`` commits them as one transaction and says what each did."""

    def __init__(self, server):
        self.server = server

    def run(self, *statements: str) -> list[int]:
        """Run ``statements`` in one transaction on a connection of their own, commit, print one line (each
        statement's verb and how many rows it changed) and return those row counts."""
        from ..connectors.postgres.client import connect

        if not statements:
            raise ValueError("run() takes one or more SQL statements, such as \"DELETE FROM orders WHERE id = 1\"")
        counts = []
        with connect(self.server.url) as conn, conn.transaction():
            for statement in statements:
                counts.append(conn.execute(statement).rowcount)
        said = ", ".join(f"{s.split()[0].upper()} {n:,} row{'s' * (n != 1)}" for s, n in zip(statements, counts))
        print(f"the other connection committed one transaction: {said}")
        return counts

    def __repr__(self) -> str:
        return f"OtherConnection(to {self.server.url})"


def other_connection(server) -> OtherConnection:
    """A second session of ``server`` (a :class:`~fw_magics.teaching.scratch_postgres.ScratchPostgres`):
    its ``run(*statements)`` commits them as one transaction, as another program would."""
    return OtherConnection(server)
