import pytest
from pyspark.sql import functions as F

import fw_magics as fw
from fw_magics.datastream.physical.layout import partition_keys

pytestmark = [pytest.mark.spark, pytest.mark.core]


@pytest.mark.parametrize("n", [1, 3, 8, 13])
def test_placement_keys_land_in_their_partition(spark, n):
    keys = partition_keys(n)
    frame = spark.range(0, n, 1, 1).withColumn("k", F.element_at(F.lit(list(keys)), F.col("id").cast("int") + 1))
    parts = fw.from_dataframe(frame.repartition(n, "k")).collect_partitions()
    assert [[r.id for r in p] for p in parts] == [[i] for i in range(n)]


def test_from_records_splits_contiguously(spark):
    parts = fw.from_records([(i,) for i in range(10)], "v int", partitions=4).collect_partitions()
    assert [[r.v for r in p] for p in parts] == [[0, 1], [2, 3, 4], [5, 6], [7, 8, 9]]


def test_from_pandas_keeps_types_and_order(spark):
    import pandas as pd

    pdf = pd.DataFrame({"id": [1, 2, 3], "name": ["a", None, "c"], "when": pd.to_datetime(["2024-01-01"] * 3)})
    ds = fw.from_pandas(pdf, partitions=2)
    assert [f.dataType.simpleString() for f in ds.schema.fields] == ["bigint", "string", "timestamp"]
    assert [[r.id for r in p] for p in ds.collect_partitions()] == [[1], [2, 3]]
    assert ds.to_pandas()["name"].tolist() == ["a", None, "c"]
