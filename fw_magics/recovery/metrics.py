"""A streaming job's metrics, one row per run of its work, as its event log holds them. No Spark.

``rows(state)`` turns a ``replay.JobState`` (the one fold of a job's events) into plain dicts, one for
the backlog's run (``batch`` -1, from the switch) and one per committed micro-batch, in batch order:
so the figures are the same while the job runs, after it stopped, and in a fresh kernel.
``metrics_frame(state)`` makes them the pandas DataFrame ``job.metrics()`` returns.

Each micro-batch's figures are Spark's own progress report for it (``follower.batch_info``): its
start (``started``, Spark's ``timestamp``), ``duration_ms`` (``triggerExecution``), ``input_rows``,
both rates, ``late`` (Spark's ``numRowsDroppedByWatermark`` and the rows at or before W the job drops
itself) and ``undated``; ``watermark`` is the job's (the greater of W and Spark's), and
``watermark_gap_ms`` the batch's start less it. ``state_rows`` are the keys holding state after the
batch, ``state_rows_per_partition`` the same per state partition (``runtime/streaming/keyed/state_counts.py``); the
source's lag (``files_behind``, ``rows_behind``) is what it could tell without reading (null where
it cannot). A log written before these figures existed reads as nulls.
"""

from __future__ import annotations

from .replay import JobState

#: The columns of ``job.metrics()``, in order.
COLUMNS = ("batch", "started", "duration_ms", "input_rows", "input_rows_per_second", "processed_rows_per_second",
           "watermark", "watermark_gap_ms", "late", "undated", "state_rows", "state_rows_per_partition",
           "files_behind", "rows_behind")
#: The batch number of the backlog's row.
BACKLOG = -1


def rows(state: JobState) -> list[dict]:
    """The backlog's row (when the log holds a switch after a backlog), then each micro-batch's."""
    found = []
    backlog = backlog_row(state)
    if backlog is not None:
        found.append(backlog)
    found.extend(batch_row(event) for _, event in sorted(state.batches.items()))
    return found


def batch_row(event: dict) -> dict:
    """One micro-batch's row from its ``micro_batch`` event (``started`` and ``watermark`` in epoch ms)."""
    started, watermark = event.get("started"), event.get("watermark")
    return {
        "batch": event["batch"], "started": started, "duration_ms": event.get("duration_ms"),
        "input_rows": event["input_rows"], "input_rows_per_second": event.get("input_rows_per_second"),
        "processed_rows_per_second": event.get("processed_rows_per_second"), "watermark": watermark,
        "watermark_gap_ms": None if started is None or watermark is None else started - watermark,
        "late": event.get("late"), "undated": event.get("undated"), "state_rows": event.get("state_rows"),
        "state_rows_per_partition": _listed(event.get("state_rows_per_partition")),
        "files_behind": event.get("files_behind"), "rows_behind": event.get("rows_behind"),
    }


def backlog_row(state: JobState) -> dict | None:
    """The backlog's run as one row (batch -1): from its (last) start to the switch, its records, W, the
    keys it left with state; None for a job without a backlog (a stream, a restored job)."""
    switch = state.switch_event
    if switch is None or switch.get("restored_from") is not None or switch.get("records") is None:
        return None
    ended = switch.get("time")
    begun = state.backlog_started if state.backlog_started is not None and ended is not None \
        and state.backlog_started <= ended else None
    duration = None if begun is None else round((ended - begun) * 1000)
    records = switch["records"]
    rate = None if not duration else records / (duration / 1000)
    watermark = switch.get("watermark")
    started = None if begun is None else round(begun * 1000)
    return {
        "batch": BACKLOG, "started": started, "duration_ms": duration, "input_rows": records,
        "input_rows_per_second": rate, "processed_rows_per_second": rate, "watermark": watermark,
        "watermark_gap_ms": None if ended is None or watermark is None else round(ended * 1000) - watermark,
        "late": 0, "undated": switch.get("undated"), "state_rows": switch.get("state_writes"),
        "state_rows_per_partition": _listed(switch.get("state_rows_per_partition")),
        "files_behind": None, "rows_behind": None,
    }


def _listed(value):
    return None if value is None else list(value)


#: The columns that are whole numbers or null (pandas' nullable Int64).
_COUNTS = ("duration_ms", "input_rows", "watermark_gap_ms", "late", "undated", "state_rows", "files_behind",
           "rows_behind")


def metrics_frame(state: JobState):
    """``rows(state)`` as the DataFrame ``job.metrics()`` returns: times as UTC (NaT when unknown), counts as
    nullable Int64, rates as float (NaN when unknown), ``state_rows_per_partition`` a list or None."""
    import pandas as pd

    frame = pd.DataFrame(rows(state), columns=list(COLUMNS))
    frame["batch"] = frame["batch"].astype("int64")
    for name in ("started", "watermark"):
        frame[name] = pd.to_datetime(frame[name].astype("Float64"), unit="ms", utc=True, errors="coerce")
    for name in _COUNTS:
        frame[name] = frame[name].astype("Int64")
    for name in ("input_rows_per_second", "processed_rows_per_second"):
        frame[name] = frame[name].astype("float64")
    frame["state_rows_per_partition"] = frame["state_rows_per_partition"].astype(object)
    return frame
