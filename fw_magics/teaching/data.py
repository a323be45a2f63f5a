"""Data the tutorials make: sensor readings landing hour by hour (tutorial 6), order files with
consecutive ids (tutorial 7), and an orders table with its customers' tier changes (tutorial 8).

Each maker is seeded, so a tutorial shows the same numbers on every run, and keeps what it made,
so a tutorial can check a job's answer against pandas or SQL computed from the same rows.
"""

from __future__ import annotations

import datetime as dt

from .files import land_file

__all__ = ["OrderFiles", "OrdersTable", "SensorReadings", "orders_table"]

#: where the tutorials' event times start
START = dt.datetime(2024, 1, 1, tzinfo=dt.timezone.utc)


class SensorReadings:
    """Readings of ``sensors`` sensors, one Parquet file per hour in ``folder`` (tutorial 6).

    ``land(hour)`` lands hour ``hour``'s file (``hour-0007.parquet``: ``rows_per_hour`` readings,
    columns ``sensor long, reading long, ts timestamp``, in time order within the hour);
    ``frame()`` is every reading landed so far, ``frame(last=True)`` the last file's.
    """

    SCHEMA = "sensor long, reading long, ts timestamp"

    def __init__(self, folder: str, sensors: int = 40, rows_per_hour: int = 1_000, seed: int = 6):
        import numpy as np

        self.folder, self.sensors, self.rows_per_hour = folder, sensors, rows_per_hour
        self._rng = np.random.default_rng(seed)
        self._landed: list = []

    def land(self, hour: int) -> str:
        """Land hour ``hour``'s readings; the file's path."""
        import numpy as np
        import pandas as pd

        rng, n = self._rng, self.rows_per_hour
        seconds = np.sort(rng.integers(0, 3600, n))
        frame = pd.DataFrame({
            "sensor": rng.integers(0, self.sensors, n).astype("int64"),
            "reading": rng.integers(0, 100, n).astype("int64"),
            "ts": pd.to_datetime([START + dt.timedelta(hours=hour, seconds=int(s)) for s in seconds]),
        })
        path = land_file(self.folder, f"hour-{hour:04d}.parquet", frame)
        self._landed.append(frame)
        return path

    def frame(self, last: bool = False):
        """The readings landed so far (pandas), or only the last file's."""
        import pandas as pd

        if not self._landed:
            return pd.DataFrame({"sensor": [], "reading": [], "ts": []})
        return self._landed[-1] if last else pd.concat(self._landed, ignore_index=True)

    def __repr__(self) -> str:
        rows = sum(len(f) for f in self._landed)
        return f"SensorReadings: {len(self._landed)} hourly files, {rows:,} readings of {self.sensors} sensors"


class OrderFiles:
    """Orders with consecutive ids from 1, landed a file at a time in ``folder`` (tutorial 7).

    ``land(n)`` lands the next ``n`` orders as ``orders-<first id>.parquet`` (columns ``id long,
    amount double``; an order's amount is 1.5 times its id); ``ids`` is every id landed so far.
    """

    SCHEMA = "id long, amount double"

    def __init__(self, folder: str):
        self.folder = folder
        self.ids: list[int] = []

    def land(self, n: int) -> str:
        """Land the next ``n`` orders; the file's path."""
        first = len(self.ids) + 1
        ids = list(range(first, first + n))
        path = land_file(self.folder, f"orders-{first:03d}.parquet",
                         {"id": ids, "amount": [1.5 * i for i in ids]})
        self.ids.extend(ids)
        return path

    def __repr__(self) -> str:
        return f"OrderFiles: orders 1 to {len(self.ids)} landed" if self.ids else "OrderFiles: none landed yet"


class OrdersTable:
    """The ``orders`` table of a PostgreSQL server, filled by ``place(n)``, and its customers' tier
    changes landed as files (tutorial 8). Made by :func:`orders_table`.

    Orders arrive in time order, one a second after the last (``ts``), from ``customers`` customers
    (``c00``, ``c01``, ...); a tier change (bronze, silver, gold) falls half a second off an order.
    """

    TIERS = ("bronze", "silver", "gold")

    def __init__(self, server, customers: int = 12, seed: int = 8, table: str = "orders"):
        import numpy as np

        if not table.isidentifier():
            raise ValueError(f"table name {table!r}; accepted: an identifier, such as 'orders'")
        self.server, self.table = server, table
        self.customers = [f"c{i:02d}" for i in range(customers)]
        self.clock = 0  # seconds after START of the last order
        self._rng = np.random.default_rng(seed)
        self._tier_files: list[str] = []

    def place(self, n: int) -> None:
        """Insert ``n`` orders in one transaction, each a second after the last."""
        rows = []
        for _ in range(n):
            self.clock += 1
            rows.append((str(self._rng.choice(self.customers)), round(float(self._rng.uniform(5, 200)), 2),
                         START + dt.timedelta(seconds=self.clock)))
        self.server.sql(f"INSERT INTO {self.table} (customer, amount, ts) VALUES (%s, %s, %s)", rows)

    def land_tier_changes(self, folder: str, name: str, n: int) -> str:
        """Land ``n`` tier changes (``customer_id string, tier string, ts timestamp``), at times
        among the orders placed so far, as the file ``folder/name``; its path."""
        import pandas as pd

        at = self._rng.uniform(0, self.clock, n).round() + 0.5
        frame = pd.DataFrame({"customer_id": self._rng.choice(self.customers, n),
                              "tier": self._rng.choice(self.TIERS, n),
                              "ts": pd.to_datetime([START + dt.timedelta(seconds=float(s)) for s in at])})
        path = land_file(folder, name, frame)
        self._tier_files.append(path)
        return path

    def per_customer(self):
        """Each customer's number of orders and what they spent, asked of PostgreSQL itself."""
        import pandas as pd

        rows = self.server.sql(f"SELECT customer, count(*), sum(amount) FROM {self.table} GROUP BY customer ORDER BY customer")
        return pd.DataFrame(rows, columns=["customer", "n", "spent"])

    def largest_per_customer(self):
        """Each customer's largest order amount, asked of PostgreSQL."""
        import pandas as pd

        rows = self.server.sql(f"SELECT customer, max(amount) FROM {self.table} GROUP BY customer ORDER BY customer")
        return pd.DataFrame(rows, columns=["customer", "amount"])

    def big_per_customer(self, over: float):
        """How many orders over ``over`` each customer has (``big``), asked of PostgreSQL (a customer with none
        has no row)."""
        import pandas as pd

        rows = self.server.sql(f"SELECT customer, count(*) FROM {self.table} WHERE amount > {float(over)!r} "
                               "GROUP BY customer ORDER BY customer")
        return pd.DataFrame(rows, columns=["customer", "big"])

    def orders(self):
        """Every order (``id, customer, amount, ts``), from PostgreSQL, in id order."""
        import pandas as pd

        rows = self.server.sql(f"SELECT id, customer, amount, ts FROM {self.table} ORDER BY id")
        frame = pd.DataFrame(rows, columns=["id", "customer", "amount", "ts"])
        frame["ts"] = pd.to_datetime(frame["ts"], utc=True)
        return frame

    def tier_changes(self):
        """Every tier change landed so far (``customer, tier, ts``), read back from the files."""
        import pandas as pd

        if not self._tier_files:
            return pd.DataFrame({"customer": [], "tier": [], "ts": []})
        frame = pd.concat([pd.read_parquet(p) for p in self._tier_files], ignore_index=True)
        frame = frame.rename(columns={"customer_id": "customer"})
        frame["ts"] = pd.to_datetime(frame["ts"], utc=True)
        return frame

    def pairs_within(self, lower: float, upper: float) -> int:
        """How many (order, tier change) pairs of one customer have the change from ``lower`` to
        ``upper`` milliseconds after the order (both included; before it is negative: the unit and
        the sign of ``between(lower, upper)``), counted by pandas from the table and the files
        landed: what an interval join of the two should find."""
        import pandas as pd

        both = self.orders().merge(self.tier_changes().rename(columns={"ts": "changed"}), on="customer")
        gap = (both["changed"] - both["ts"]) / pd.Timedelta(milliseconds=1)
        return int(((gap >= lower) & (gap <= upper)).sum())

    def __repr__(self) -> str:
        return f"OrdersTable: {self.clock:,} orders of {len(self.customers)} customers placed"


def orders_table(server, customers: int = 12, seed: int = 8, table: str = "orders") -> OrdersTable:
    """Create the table ``orders (id bigserial, customer, amount, ts)`` (or ``table``) on ``server``
    (a :class:`~fw_magics.teaching.scratch_postgres.ScratchPostgres`) and return its
    :class:`OrdersTable`, which places orders into it."""
    made = OrdersTable(server, customers, seed, table)
    server.sql(f"CREATE TABLE {table} (id bigserial PRIMARY KEY, customer text, amount double precision, "
               "ts timestamptz)")
    return made
