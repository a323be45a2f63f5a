import pickle

import pyarrow as pa
from hypothesis import given, settings
from hypothesis import strategies as st

from fw_magics.values.records import batch_records, make_record
from tests.examples import examples


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


@settings(max_examples=examples(100), deadline=None)
@given(rows=st.lists(st.tuples(st.one_of(st.none(), st.integers(-(2**63), 2**63 - 1)),
                                st.one_of(st.none(), st.floats(), st.sampled_from([-0.0, float("nan")])),
                                st.one_of(st.none(), st.text(max_size=3)),
                                st.one_of(st.none(), st.tuples(st.integers(-5, 5), st.floats(allow_nan=False)))),
                     max_size=30))
def test_records_hold_what_arrow_holds(rows):
    """Each record is its row's values as pyarrow gives them, NaN and the sign of -0.0 included, nested
    structs as records; built in C by calling the record class (issue 52), no value changed."""
    schema = pa.schema([("id", pa.int64()), ("price", pa.float64()), ("name", pa.string()),
                        ("info", pa.struct([("k", pa.int64()), ("x", pa.float64())]))])
    table = pa.Table.from_pylist([dict(zip(schema.names, r)) for r in rows], schema=schema)
    records = [r for batch in table.to_batches(max_chunksize=7) for r in batch_records(batch)]
    assert len(records) == len(rows)
    for record, row in zip(records, rows):
        assert type(record).__name__ == "Record" and record._fields == ("id", "price", "name", "info")
        assert (record.id, record.name) == row[0:1] + row[2:3]
        assert repr(record.price) == repr(row[1])  # nan stays nan, -0.0 keeps its sign
        assert (record.info is None) == (row[3] is None)
        if row[3] is not None:
            assert (record.info.k, record.info.x) == row[3] and tuple(record.info) == row[3]


ZONES = [None, "UTC", "Etc/UTC", "+00:00", "-03:30", "America/New_York", "Europe/Berlin", "Australia/Lord_Howe"]
#: Python's datetime range in microseconds from the epoch (years 1 to 9999).
LOWEST, HIGHEST = -62_135_596_800_000_000, 253_402_300_799_999_999


def _same_time(got, want) -> bool:
    """The same value as pyarrow's: type, wall time, zone and fold (``==`` alone compares instants)."""
    if want is None:
        return got is None
    return (type(got) is type(want) and got == want and got.replace(tzinfo=None) == want.replace(tzinfo=None)
            and got.tzinfo == want.tzinfo and getattr(got, "fold", 0) == getattr(want, "fold", 0))


@settings(max_examples=examples(100), deadline=None)
@given(micros=st.lists(st.one_of(st.none(), st.integers(LOWEST, HIGHEST),
                                 st.integers(1_699_160_000_000_000, 1_699_170_000_000_000)),  # a DST fall-back
                       max_size=20),
       unit=st.sampled_from(["s", "ms", "us"]), zone=st.sampled_from(ZONES))
def test_timestamps_hold_what_arrow_holds(micros, unit, zone):
    """Timestamps built through numpy (issue 52: pyarrow's own costs 2.4 µs a value with a zone) are pyarrow's:
    the same wall time, zone and fold in every zone, and pyarrow's own error where a wall time leaves Python's
    range."""
    scale = {"s": 1_000_000, "ms": 1_000, "us": 1}[unit]
    column = pa.array([None if m is None else m // scale for m in micros], pa.int64()).cast(pa.timestamp(unit, tz=zone))
    batch = pa.record_batch([column], names=["t"])
    try:
        want = column.to_pylist()
    except (OverflowError, ValueError) as error:
        try:
            list(batch_records(batch))
        except type(error):
            return
        raise AssertionError(f"pyarrow refused {micros}, the records did not") from None
    got = [r.t for r in batch_records(batch)]
    assert all(_same_time(g, w) for g, w in zip(got, want, strict=True)), (got, want)


@settings(max_examples=examples(50), deadline=None)
@given(days=st.lists(st.one_of(st.none(), st.integers(-719_162, 2_932_896)), max_size=20))
def test_dates_hold_what_arrow_holds(days):
    column = pa.array(days, pa.int32()).cast(pa.date32())
    got = [r.d for r in batch_records(pa.record_batch([column], names=["d"]))]
    want = column.to_pylist()
    assert got == want and [type(g) for g in got] == [type(w) for w in want]


def test_timestamps_far_beyond_pythons_range_fail_as_pyarrow_does():
    for unit in ("s", "ms", "us"):
        column = pa.array([0, 2**62], pa.int64()).cast(pa.timestamp(unit, tz="UTC"))
        try:
            column.to_pylist()
        except (OverflowError, ValueError) as error:
            try:
                list(batch_records(pa.record_batch([column], names=["t"])))
            except type(error):
                continue
        raise AssertionError(f"{unit}: pyarrow and the records differ")
