"""Misuse: one line naming the culprit and what is accepted, and no Spark job started."""

import pytest
from pyspark.sql import functions as F

import fw_magics as fw
from tests.conftest import is_connect

pytestmark = [pytest.mark.spark, pytest.mark.core]

SCHEMA = "id long, price double, tags map<string,int>, info struct<city: string, zip: int>"
ROWS = [(1, 2.0, {"a": 1}, ("Oslo", 150)), (2, 3.0, None, None)]


@pytest.fixture
def ds(spark):
    return fw.from_records(ROWS, SCHEMA, partitions=2)


class NoJobs:
    """Counts Spark jobs on a classic session (Spark Connect has no status tracker)."""

    def __init__(self, spark):
        self.tracker = None if is_connect(spark) else spark.sparkContext.statusTracker()
        self.before = self._count()

    def _count(self):
        return None if self.tracker is None else len(self.tracker.getJobIdsForGroup(None))

    def check(self):
        assert self._count() == self.before, "a Spark job ran for a misuse"


def one_line_error(spark, action, *fragments):
    jobs = NoJobs(spark)
    with pytest.raises(fw.FullWindowError) as caught:
        action()
    message = str(caught.value)
    assert "\n" not in message
    for fragment in fragments:
        assert fragment in message, message
    jobs.check()
    return message


def test_unknown_column_lists_columns_and_suggests(spark, ds):
    one_line_error(spark, lambda: ds.full_window_partition().sort_partition("prize"),
                   "no column 'prize'", "did you mean 'price'?", "columns are: id, price, tags, info")


def test_unknown_nested_field(spark, ds):
    one_line_error(spark, lambda: ds.full_window_partition().sort_partition("info.cty"),
                   "no field 'cty' in 'info'", "city, zip")


def test_nested_field_sorts(spark, ds):
    out = ds.full_window_partition().sort_partition("info.zip").collect()
    assert [r.info.city if r.info else None for r in out] == ["Oslo", None]


def test_position_out_of_range(spark, ds):
    one_line_error(spark, lambda: ds.full_window_partition().sort_partition(7),
                   "position 7 is out of range", "positions 0..3")


def test_unsortable_type(spark, ds):
    one_line_error(spark, lambda: ds.full_window_partition().sort_partition("tags"),
                   "cannot sort by 'tags' of type map<string,int>")


def test_bad_order(spark, ds):
    one_line_error(spark, lambda: ds.full_window_partition().sort_partition("id", "up"),
                   "unknown order 'up'", "'asc', 'desc'")


@pytest.mark.parametrize("op", ["map_partition", "reduce"])
def test_non_callable_function(spark, ds, op):
    one_line_error(spark, lambda: getattr(ds.full_window_partition(), op)("top3"),
                   f"{op} takes a function; got str 'top3'")


def test_not_an_aggregate(spark, ds):
    one_line_error(spark, lambda: ds.full_window_partition().aggregate(42), "fw.AggregateFunction or Spark aggregate Columns")


def test_unknown_column_in_spark_aggregate(spark, ds):
    one_line_error(spark, lambda: ds.full_window_partition().aggregate(F.sum("prize")), "aggregate:", "prize")


def test_bad_key(spark, ds):
    one_line_error(spark, lambda: ds.key_by("idd"), "no column 'idd'", "did you mean 'id'?")
    one_line_error(spark, lambda: ds.key_by(3.5), "key_by takes column name(s) or a key-selector function")


def test_bad_schema_ddl(spark, ds):
    one_line_error(spark, lambda: ds.full_window_partition().map_partition(lambda rs: rs, "id lonng"),
                   "schema 'id lonng' is not valid DDL")


def test_records_that_do_not_fit_the_schema_name_column_and_types(spark, ds):
    bad = ds.full_window_partition().map_partition(lambda rs: [(1, "cheap")], "id long, price double")
    with pytest.raises(fw.FullWindowError) as caught:
        bad.collect()
    assert str(caught.value) == (
        "map_partition function '<lambda>' produced a value that does not fit column 'price': "
        "expected double, got str 'cheap'"
    )


def test_records_of_wrong_width(spark, ds):
    bad = ds.full_window_partition().map_partition(lambda rs: [(1, 2.0, 3)], "id long, price double")
    with pytest.raises(fw.FullWindowError, match="record of 3 values .* the schema has 2 columns: id, price"):
        bad.collect()


def test_from_records_checks_before_running(spark):
    one_line_error(spark, lambda: fw.from_records([(1, "x")], "id long, price double"),
                   "from_records produced a value that does not fit column 'price'", "expected double, got str 'x'")
    one_line_error(spark, lambda: fw.from_records([], "id long", partitions=0), "partitions must be a positive integer")


def test_streaming_dataframe_is_refused_when_the_window_is_defined(spark):
    stream = spark.readStream.format("rate").load()
    ds = fw.from_dataframe(stream)
    one_line_error(spark, ds.full_window_partition, "full-window processing needs bounded input")
    one_line_error(spark, lambda: ds.key_by("value").full_window_partition(), "needs bounded input")


def test_from_dataframe_needs_a_dataframe(spark):
    one_line_error(spark, lambda: fw.from_dataframe([1, 2]), "from_dataframe takes a PySpark DataFrame")


def test_user_errors_keep_their_traceback(spark, ds):
    def broken(records):
        raise KeyError("my own bug")

    with pytest.raises(Exception) as caught:
        ds.full_window_partition().map_partition(broken).collect()
    assert not isinstance(caught.value, fw.FullWindowError)
    assert "my own bug" in str(caught.value) and "broken" in str(caught.value)
