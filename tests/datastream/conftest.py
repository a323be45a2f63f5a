import pytest

import fw_magics as fw
from tests.datastream.helpers import SCHEMA


@pytest.fixture
def make(spark):
    """Build a stream whose partition i holds exactly ``partitions[i]``."""

    def build(partitions, schema=SCHEMA):
        records = [r for p in partitions for r in p]
        if not records:
            return fw.from_records([], schema, partitions=len(partitions))
        # from_records splits contiguously and evenly; to get arbitrary partition sizes,
        # tag each record with its partition and repartition by it with placement keys.
        from pyspark.sql import functions as F

        from fw_magics.datastream.physical.layout import partition_keys

        n = len(partitions)
        tagged = [(i, j, *r) for i, p in enumerate(partitions) for j, r in enumerate(p)]
        ds = fw.from_records(tagged, "__p int, __j int, " + schema, partitions=1)
        keys = F.element_at(F.lit(list(partition_keys(n))), F.col("__p") + 1)
        frame = ds.to_dataframe().repartition(n, keys).sortWithinPartitions("__j").drop("__p", "__j")
        return fw.from_dataframe(frame, name="test-input")

    return build
