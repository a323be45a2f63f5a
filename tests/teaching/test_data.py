"""The tutorials' data makers: what they say they landed is what the files and the table hold."""

import pandas as pd
import pyarrow.parquet as pq
import pytest

from fw_magics.teaching import OrderFiles, SensorReadings, orders_table


def test_sensor_readings_land_hour_files_that_hold_the_frame(tmp_path):
    readings = SensorReadings(str(tmp_path), sensors=5, rows_per_hour=50, seed=1)
    for hour in range(3):
        readings.land(hour)
    assert sorted(p.name for p in tmp_path.iterdir()) == ["hour-0000.parquet", "hour-0001.parquet", "hour-0002.parquet"]
    on_disk = pd.concat([pq.read_table(tmp_path / f"hour-{h:04d}.parquet").to_pandas() for h in range(3)],
                        ignore_index=True)
    frame = readings.frame()
    assert len(frame) == 150 and frame["sensor"].between(0, 4).all()
    assert on_disk[["sensor", "reading"]].equals(frame[["sensor", "reading"]])
    assert (pd.to_datetime(on_disk["ts"], utc=True) == pd.to_datetime(frame["ts"], utc=True)).all()
    hours = pd.to_datetime(frame["ts"], utc=True).dt.hour
    assert list(hours.groupby(hours).size().index) == [0, 1, 2] and hours.is_monotonic_increasing
    assert readings.frame(last=True).equals(frame.iloc[100:].reset_index(drop=True))
    again = SensorReadings(str(tmp_path / "again"), sensors=5, rows_per_hour=50, seed=1)
    (tmp_path / "again").mkdir()
    again.land(0)
    assert again.frame()["reading"].tolist() == frame["reading"][:50].tolist()  # seeded: the same numbers
    assert repr(readings) == "SensorReadings: 3 hourly files, 150 readings of 5 sensors"


def test_order_files_number_orders_from_one(tmp_path):
    orders = OrderFiles(str(tmp_path))
    orders.land(4)
    orders.land(2)
    assert orders.ids == [1, 2, 3, 4, 5, 6]
    second = pq.read_table(tmp_path / "orders-005.parquet").to_pydict()
    assert second == {"id": [5, 6], "amount": [7.5, 9.0]}


def test_orders_table_places_orders_and_lands_tier_changes(postgres, tmp_path):
    table = orders_table(postgres, customers=3, seed=2, table="teaching_orders")
    table.place(20)
    table.place(5)
    orders = table.orders()
    assert orders["id"].tolist() == list(range(1, 26))
    assert orders["ts"].is_monotonic_increasing and table.clock == 25
    mine = orders.groupby("customer").agg(n=("amount", "size"), spent=("amount", "sum")).reset_index()
    said = table.per_customer()
    assert said["customer"].tolist() == mine["customer"].tolist() and said["n"].tolist() == mine["n"].tolist()
    assert said["spent"].round(6).tolist() == mine["spent"].round(6).tolist()
    assert table.largest_per_customer()["amount"].tolist() == orders.groupby("customer")["amount"].max().tolist()
    for over in (-1, 50, 150.5, 1e9):  # SQL's count per customer against pandas' (a customer with none: no row)
        big = orders[orders["amount"] > over].groupby("customer").size()
        said = table.big_per_customer(over)
        assert said["customer"].tolist() == big.index.tolist() and said["big"].tolist() == big.tolist()
    table.land_tier_changes(str(tmp_path), "tiers-1.parquet", 7)
    changes = table.tier_changes()
    assert len(changes) == 7 and set(changes["tier"]) <= {"bronze", "silver", "gold"}
    assert set(changes["customer"]) <= set(table.customers)
    assert changes["ts"].between(orders["ts"].min() - pd.Timedelta(seconds=1), orders["ts"].max()).all()
    # pandas' count against a plain double loop, in milliseconds as between(lower, upper) takes them
    for lower, upper in ((-600_000, 0), (-5_500, 0), (0, 3_500), (-1_000, 1_000), (-1e12, 1e12)):
        pairs = sum(1 for o in orders.itertuples() for c in changes.itertuples()
                    if o.customer == c.customer and lower <= (c.ts - o.ts).total_seconds() * 1000 <= upper)
        assert table.pairs_within(lower, upper) == pairs
    assert table.pairs_within(-600, 0) < table.pairs_within(-600_000, 0)  # 0.6 s is not ten minutes
    assert table.pairs_within(-1e12, 1e12) == sum((orders["customer"] == c).sum() for c in changes["customer"])
    with pytest.raises(ValueError, match=r"table name 'x; drop'; accepted: an identifier"):
        orders_table(postgres, table="x; drop")


def test_another_connection_commits_its_statements_as_one_transaction(postgres, capsys):
    from fw_magics.teaching import other_connection

    table = orders_table(postgres, customers=2, seed=3, table="teaching_other")
    table.place(10)
    other = other_connection(postgres)
    assert other.run("UPDATE teaching_other SET amount = 1 WHERE id <= 3", "DELETE FROM teaching_other WHERE id > 8",
                     "DELETE FROM teaching_other WHERE id = 99") == [3, 2, 0]
    assert capsys.readouterr().out == ("the other connection committed one transaction: UPDATE 3 rows, "
                                       "DELETE 2 rows, DELETE 0 rows\n")
    orders = table.orders()
    assert orders["id"].tolist() == list(range(1, 9)) and orders["amount"].head(3).tolist() == [1.0] * 3
    with pytest.raises(Exception, match="no_such_column"):  # one statement fails: none of them is committed
        other.run("DELETE FROM teaching_other WHERE id = 1", "UPDATE teaching_other SET no_such_column = 1")
    assert table.orders()["id"].tolist() == list(range(1, 9))
    with pytest.raises(ValueError, match="one or more SQL statements"):
        other.run()
