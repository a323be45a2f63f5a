"""map_partition(fn, schema, batches=True): the function sees Arrow batches and yields batches or tables.

Against the pure-Python reference model on random partitions (empty ones included: the
function is still called once), keyed and not; the output is checked by value, as on the
per-record path (tests/test_convert_batches.py has the value rules without Spark).
"""

import pyarrow as pa
import pyarrow.compute as pc
import pytest
from hypothesis import given, settings

import fw_magics as fw
from tests import reference as ref
from tests.datastream.helpers import SPARK_SETTINGS, flatten, partitioned, small, spark_examples, tuples

pytestmark = [pytest.mark.spark, pytest.mark.core]


def negated_then_count(batches):
    """Each batch's ids negated (names kept), then one row with the partition's record count."""
    count = 0
    for batch in batches:
        assert isinstance(batch, pa.RecordBatch)
        count += batch.num_rows
        yield pa.RecordBatch.from_arrays([pc.negate(batch.column("id")), batch.column("name")], names=["id", "name"])
    yield pa.table({"name": ["total"], "id": [count]})  # a table, columns in another order


@settings(SPARK_SETTINGS, max_examples=spark_examples(6))  # the value rules: tests/test_convert_batches.py
@given(parts=partitioned(ids=small))
def test_batches_match_model(make, parts):
    ds = make(parts)
    out = ds.full_window_partition().map_partition(negated_then_count, "id long, name string", batches=True)
    model = ref.map_partition(parts, lambda rs: (lambda rows: [(-r[0], r[1]) for r in rows] + [(len(rows), "total")])(
        list(rs)))
    assert tuples(out.collect_partitions()) == model

    def per_key(batches):
        table = pa.Table.from_batches(list(batches))
        return pa.table({"qty": table.column("qty").slice(0, 1), "n": [table.num_rows],
                         "ids": [pc.sum(table.column("id")).as_py()]})

    keyed = ds.key_by("qty").full_window_partition().map_partition(per_key, "qty int, n long, ids long", batches=True)
    groups = ref.by_key(flatten(parts), lambda r: r[3])
    assert sorted((tuple(r) for r in keyed.collect()), key=repr) == sorted(
        ((k, len(v), sum(r[0] for r in v)) for k, v in groups.items()), key=repr)


def test_batches_output_is_checked_by_value_in_one_line(make):
    ds = make([[(1, "a", 2.5, 1)], [(2, "b", 3.0, 2)]])
    window = ds.full_window_partition()

    def prices(batches):
        for batch in batches:
            yield pa.RecordBatch.from_arrays([batch.column("price")], names=["p"])

    with pytest.raises(fw.FullWindowError) as caught:
        window.map_partition(prices, "p long", batches=True).collect()
    message = str(caught.value)
    assert "\n" not in message
    assert "map_partition function 'prices' yielded values that do not fit column 'p' (bigint)" in message
    assert "2.5" in message
    with pytest.raises(fw.FullWindowError, match="batches takes True or False; got str 'yes'"):
        window.map_partition(prices, "p long", batches="yes")
