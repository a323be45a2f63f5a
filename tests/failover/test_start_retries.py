"""StartRetries: starts that missed Spark's window for its Python worker, started again outside the restart
strategy up to LIMIT times in a row (the streaming job's use: tests/streaming/test_restart.py)."""

from __future__ import annotations

from hypothesis import given
from hypothesis import strategies as st

from fw_magics.failover import StartRetries
from fw_magics.failover.start_retries import LIMIT

#: Spark's own line when a query's driver-side Python worker missed its 10 s (a CI run's).
MISSED = RuntimeError("[STREAM_FAILED] Query [id = 7bc4] terminated with exception: Python worker failed to connect "
                      "back. SQLSTATE: XXKST\n=== Streaming Query ===\nCurrent State: INITIALIZING")
#: A user function's error that quotes that line (Spark's own first line is another).
QUOTING = RuntimeError("Job aborted due to stage failure\nPythonException: ValueError: " + str(MISSED))
OTHER = RuntimeError("Job aborted due to stage failure: injected failure on key 3")


def test_a_miss_is_absorbed_limit_times_in_a_row_and_a_start_counts_again():
    retries = StartRetries()
    assert [retries.absorbs(MISSED) for _ in range(LIMIT + 1)] == [True] * LIMIT + [False]
    retries.started()
    assert retries.in_row == 0 and retries.absorbs(MISSED) and retries.in_row == 1


def test_other_failures_and_a_user_error_quoting_the_line_are_not_absorbed_nor_counted():
    retries = StartRetries()
    assert not retries.absorbs(OTHER) and not retries.absorbs(QUOTING) and retries.in_row == 0


@given(st.lists(st.sampled_from(["missed", "other", "quoting", "started"]), max_size=30))
def test_absorbed_as_the_model_says(steps):
    retries, in_row = StartRetries(), 0
    for step in steps:
        if step == "started":
            retries.started()
            in_row = 0
            continue
        error = {"missed": MISSED, "other": OTHER, "quoting": QUOTING}[step]
        expected = step == "missed" and in_row < LIMIT
        in_row += expected
        assert retries.absorbs(error) == expected and retries.in_row == in_row
