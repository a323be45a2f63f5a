"""Streaming tests: every query they start is stopped, jobs run in tmp dirs with a fast trigger."""

from __future__ import annotations

import pytest


@pytest.fixture
def stop_queries(spark):
    """Stop any query a test left running (a failed assertion must not leave a stream behind)."""
    yield spark
    for query in spark.streams.active:
        query.stop()


@pytest.fixture
def area(tmp_path, stop_queries):
    """A source directory and a job directory for one test; keyed operators get 2 state partitions."""
    from tests.streaming.files import Area

    spark = stop_queries
    before = spark.conf.get("spark.sql.shuffle.partitions")
    spark.conf.set("spark.sql.shuffle.partitions", "2")  # fewer tasks per micro-batch: faster tests
    yield Area(tmp_path)
    spark.conf.set("spark.sql.shuffle.partitions", before)
