"""JSON and CSV directories as sources with a backlog: mixed mode gives the reference model's results
(the backlog read as a batch and the fresh files as a stream, both parsed by the same pyarrow reader)."""

from __future__ import annotations

import pytest

import fw_magics as fw
from tests.streaming import functions
from tests.streaming.files import TRIGGER, expected_latest, latest_rows, model, operator

pytestmark = [pytest.mark.spark, pytest.mark.extended]  # make test-extended (CI)

BACKLOG = [[(1, 1, 10), (2, 5, 11), (1, 2, 12)], [(3, 7, 30), (2, 1, 3)]]
FRESH = [[(1, 4, 40), (3, 1, 41), (4, 9, 42)]]


@pytest.mark.parametrize("fmt", ["json", "csv"])
def test_json_and_csv_sources_give_the_reference_results(area, fmt):
    for f in BACKLOG:
        area.write(f, fmt, fmt=fmt)
    stream = fw.from_files(area.source(fmt), fmt, functions.SCHEMA, event_time="ts")
    job = operator("aggregate", stream).start(job_dir=area.jobs, job_name=fmt, trigger=TRIGGER)
    try:
        job.process_all_available()
        switch = next(e for e in job.events() if e["type"] == "switch")
        assert switch["records"] == sum(map(len, BACKLOG))  # the backlog read as a batch
        for f in FRESH:
            area.write(f, fmt, fmt=fmt)
            job.process_all_available()
        assert latest_rows(job) == expected_latest(model("aggregate", 0, BACKLOG, FRESH), "aggregate")
    finally:
        job.stop()
