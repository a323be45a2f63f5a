import pickle

import pyarrow as pa

from fw_magics.values.records import batch_records, make_record


def test_fields_by_name_position_and_tuple():
    r = make_record(("id", "price", "count", "a b"), (1, 2.5, 7, "x"))
    assert (r.id, r.price, r[0], r[-1], r.get("a b"), r.get("count")) == (1, 2.5, 1, "x", "x", 7)
    assert tuple(r) == (1, 2.5, 7, "x") and r == (1, 2.5, 7, "x")
    assert r.as_dict() == {"id": 1, "price": 2.5, "count": 7, "a b": "x"}
    assert pickle.loads(pickle.dumps(r)) == r and pickle.loads(pickle.dumps(r)).price == 2.5


def test_unknown_field_names_the_fields():
    r = make_record(("id",), (1,))
    try:
        r.prize
    except AttributeError as error:
        assert "fields are: id" in str(error)
    else:
        raise AssertionError("no error")


def test_nested_structs_become_records_and_nulls_stay_none():
    struct = pa.struct([("city", pa.string()), ("zip", pa.int32())])
    batch = pa.record_batch(
        [pa.array([1, 2, 3]), pa.array([{"city": "Oslo", "zip": 1}, None, {"city": None, "zip": 2}], type=struct),
         pa.array([[{"city": "A", "zip": 1}], None, []], type=pa.list_(struct))],
        names=["id", "info", "hist"],
    )
    rows = list(batch_records(batch))
    assert rows[0].info.city == "Oslo" and rows[1].info is None and rows[2].info.zip == 2
    assert rows[0].hist[0].city == "A" and rows[1].hist is None and rows[2].hist == []


def test_sliced_batches_keep_their_offsets():
    batch = pa.record_batch([pa.array(range(10))], names=["v"]).slice(3, 4)
    assert [r.v for r in batch_records(batch)] == [3, 4, 5, 6]
