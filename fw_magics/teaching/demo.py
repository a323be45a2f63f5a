"""The demo job (`make demo`): the four full-window operations on the embedded Spark.

Run with ``python -m fw_magics.teaching.demo``.
"""

from __future__ import annotations

import random
import time


def orders(n: int = 24, seed: int = 7) -> list[tuple]:
    """A small, realistic data set: order id, customer, product, unit price, quantity."""
    rng = random.Random(seed)
    customers = ["ada", "grace", "linus", "margaret"]
    products = {"coffee": 4.5, "tea": 3.0, "cake": 5.25, "bagel": 2.75}
    rows = []
    for order_id in range(1, n + 1):
        product = rng.choice(sorted(products))
        rows.append((order_id, rng.choice(customers), product, products[product], rng.randint(1, 4)))
    return rows


def _show(title: str, partitions) -> None:
    print(f"\n{title}")
    for index, records in enumerate(partitions):
        shown = ", ".join(str(tuple(r)) for r in records[:4])
        more = f", ... ({len(records)} records)" if len(records) > 4 else ""
        print(f"  partition {index}: {shown}{more}")


def main() -> None:
    from pyspark.sql import functions as F

    import fw_magics as fw
    from fw_magics.spark.flavour import flavour_of

    started = time.time()
    print("Starting Spark (the first start on a machine also writes Java's class archive: a minute or two more)",
          flush=True)
    spark = fw.get_spark()
    print(f"Spark {spark.version} ({flavour_of(spark).name}) ready in {time.time() - started:.1f}s")

    ds = fw.from_records(orders(), "order_id long, customer string, product string, price double, qty int",
                         partitions=3, name="orders")
    _show("input: 3 partitions (subtasks) of orders", ds.collect_partitions())

    window = ds.full_window_partition()
    _show("sort_partition('price', desc): each partition sorted on its own, in the JVM",
          window.sort_partition("price", fw.Order.DESCENDING).collect_partitions())

    def biggest_two(records):
        ranked = sorted(records, key=lambda r: r.price * r.qty, reverse=True)
        for r in ranked[:2]:
            yield (r.order_id, r.customer, round(r.price * r.qty, 2))

    _show("map_partition(biggest_two): the function sees a whole partition once",
          window.map_partition(biggest_two, "order_id long, customer string, total double").collect_partitions())

    _show("aggregate(F.sum(price * qty), F.count('*')): one record per partition",
          window.aggregate([F.round(F.sum(F.col("price") * F.col("qty")), 2).alias("revenue"),
                            F.count("*").alias("orders")]).collect_partitions())

    class AverageBasket(fw.AggregateFunction):
        schema = "avg_items double"

        def create_accumulator(self):
            return (0, 0)

        def add(self, value, acc):
            return (acc[0] + 1, acc[1] + value.qty)

        def get_result(self, acc):
            return acc[1] / acc[0] if acc[0] else 0.0

    keyed = ds.key_by("customer").full_window_partition()
    print("\nkey_by('customer').aggregate(AverageBasket()): one window per key")
    for r in sorted(keyed.aggregate(AverageBasket()).collect()):
        print(f"  {r.customer:<9} {r.avg_items:.2f} items per order")

    print("\nkey_by('customer').reduce(bigger order): the largest order of each customer")
    biggest = keyed.reduce(lambda a, b: a if a.price * a.qty >= b.price * b.qty else b).collect()
    for r in sorted(biggest, key=lambda r: r.customer):
        print(f"  {r.customer:<9} order {r.order_id}: {r.qty} x {r.product} at {r.price}")
    print(f"\ndemo finished in {time.time() - started:.1f}s")


if __name__ == "__main__":
    main()
