"""Full-window operations against hand-written PySpark and the naive Python way.

Every case runs in the same Spark session on the same cached input; fw-magics and the
hand-written PySpark are timed ``runs`` times in turns after two warm-up rounds and reported
by their median, the naive Python way (ten times slower) once. Results are forced with
Spark's ``noop`` sink (everything computed, nothing collected); the RDD variants with
``count()``.
"""

from __future__ import annotations

from collections.abc import Callable

from benchmarks.breakdown import SparkUI
from benchmarks.timing import interleaved_medians, median_time

#: An extra reference some cases time in the same turns: the same result with no Python at all.
JVM = "Spark's JVM aggregate (no Python)"
#: The keyed reduce as it ran before issue 52: every record over the shuffle, no combine before it.
PER_RECORD = "fw-magics, every record shuffled (no combine)"


def _noop(frame) -> Callable[[], None]:
    return lambda: frame.write.format("noop").mode("overwrite").save()


def _per_record_shuffle(keyed, fn):
    """``keyed.reduce(fn)`` planned without the combine before the shuffle (the driver decides it once)."""
    from fw_magics.datastream.physical import combine

    decide = combine.shuffle_for
    combine.shuffle_for = lambda key_types: combine.Shuffle.RECORDS
    try:
        return keyed.reduce(fn)
    finally:
        combine.shuffle_for = decide


def per_record_by_hand():
    """The per-record map's hand-written ``mapInArrow`` function: a loop over column lists (benchmarks/per_record.py
    times it in-process too). Made inside a function so that Spark's workers get it by value."""
    import pyarrow as pa

    def hand_arrow(batches):
        for batch in batches:
            ids = batch.column("id").to_pylist()
            prices = batch.column("price").to_pylist()
            qtys = batch.column("qty").to_pylist()
            out_ids, out_totals = [], []
            for i, p, q in zip(ids, prices, qtys):
                out_ids.append(i)
                out_totals.append(p * q)
            yield pa.RecordBatch.from_arrays([pa.array(out_ids, pa.int64()), pa.array(out_totals, pa.float64())],
                                             names=["id", "total"])

    return hand_arrow


def cases(spark, rows: int, partitions: int, cache: bool = True, extra_columns: int = 0, keys: int = 1000):
    """Yield (case, {variant: thunk}) for every benchmarked operation.

    ``keys``: the distinct keys of the keyed cases (``id % keys``).
    ``cache=False`` generates the input afresh for every run (the same rows each time: the
    random column is seeded) instead of caching it, for sizes a small driver cannot hold;
    ``extra_columns`` adds that many double columns (a wide input) the operations carry along.
    """
    import pandas as pd
    import pyarrow as pa
    import pyarrow.compute as pc
    from pyspark.sql import functions as F

    import fw_magics as fw

    df = spark.range(0, rows, 1, partitions).select(
        "id",
        (F.col("id") % keys).alias("key"),
        (F.rand(seed=7) * 100).alias("price"),
        (F.col("id") % 7).cast("int").alias("qty"),
        *[(F.col("id") * (i + 1) / 7).alias(f"x{i}") for i in range(extra_columns)],
    )
    if cache:
        df = df.cache()
        df.count()
    ds = fw.from_dataframe(df, name="bench")
    window = ds.full_window_partition()

    # -- sort ---------------------------------------------------------------------
    def python_sort(rows_):
        return iter(sorted(rows_, key=lambda r: r.price))

    yield "sort_partition(price)", {
        "fw-magics": _noop(window.sort_partition("price").to_dataframe()),
        "hand-written PySpark": _noop(df.sortWithinPartitions("price")),
        "naive Python": lambda: df.rdd.mapPartitions(python_sort).count(),
    }

    # -- map over records ---------------------------------------------------------
    def per_record(records):
        for r in records:
            yield (r.id, r.price * r.qty)

    hand_arrow = per_record_by_hand()

    yield "map_partition(per-record Python)", {
        "fw-magics": _noop(window.map_partition(per_record, "id long, total double").to_dataframe()),
        "hand-written PySpark": _noop(df.mapInArrow(hand_arrow, "id long, total double")),
        "naive Python": lambda: df.rdd.mapPartitions(per_record).count(),
    }

    # -- map over Arrow batches (the vectorized form) --------------------------------
    def batch_totals(batches):
        for batch in batches:
            total = pc.multiply(batch.column("price"), batch.column("qty").cast(pa.float64()))
            yield pa.RecordBatch.from_arrays([batch.column("id"), total], names=["id", "total"])

    yield "map_partition(batches=True, pyarrow.compute)", {
        "fw-magics": _noop(window.map_partition(batch_totals, "id long, total double", batches=True).to_dataframe()),
        "hand-written PySpark": _noop(df.mapInArrow(batch_totals, "id long, total double")),
        "naive Python": lambda: df.rdd.mapPartitions(per_record).count(),
    }

    # -- aggregate with Spark columns ----------------------------------------------
    columns = [F.sum("price").alias("revenue"), F.count("*").alias("n"), F.max("qty").alias("most")]
    yield "aggregate(Spark columns)", {
        "fw-magics": _noop(window.aggregate(columns).to_dataframe()),
        "hand-written PySpark": _noop(df.groupBy(F.spark_partition_id()).agg(*columns)),
        "naive Python": lambda: df.rdd.mapPartitions(
            lambda it: [(lambda rs: (sum(r.price for r in rs), len(rs), max((r.qty for r in rs), default=None)))(list(it))]
        ).count(),
    }

    # -- aggregate with an AggregateFunction (vectorized add_batch) ------------------
    class Revenue(fw.AggregateFunction):
        schema = "revenue double, n long"
        columns = ("price",)  # only this column is shipped to Python

        def create_accumulator(self):
            return (0.0, 0)

        def add_batch(self, batch, acc):
            return (acc[0] + pc.sum(batch.column("price")).as_py(), acc[1] + batch.num_rows)

        def get_result(self, acc):
            return acc

    def hand_revenue(batches):  # the same Python work by hand: mapInArrow + pyarrow.compute
        total, n = 0.0, 0
        for batch in batches:
            if batch.num_rows:
                total += pc.sum(batch.column("price")).as_py()
                n += batch.num_rows
        yield pa.RecordBatch.from_arrays([pa.array([total]), pa.array([n])], names=["revenue", "n"])

    yield "aggregate(AggregateFunction.add_batch)", {
        "fw-magics": _noop(window.aggregate(Revenue()).to_dataframe()),
        "hand-written PySpark": _noop(df.select("price").mapInArrow(hand_revenue, "revenue double, n long")),
        JVM: _noop(df.groupBy(F.spark_partition_id()).agg(F.sum("price").alias("revenue"), F.count("*").alias("n"))),
        "naive Python": lambda: df.rdd.mapPartitions(
            lambda it: [(lambda rs: (sum(r.price for r in rs), len(rs)))(list(it))]
        ).count(),
    }

    # -- keyed reduce and aggregate -------------------------------------------------
    keyed = ds.key_by("key").full_window_partition()

    def bigger(a, b):
        return a if a.price >= b.price else b

    def pandas_max(pdf: pd.DataFrame) -> pd.DataFrame:
        return pdf.loc[[pdf["price"].idxmax()]]

    yield "keyed reduce(max price)", {
        "fw-magics": _noop(keyed.reduce(bigger).to_dataframe()),
        PER_RECORD: _noop(_per_record_shuffle(keyed, bigger).to_dataframe()),
        "hand-written PySpark": _noop(df.groupBy("key").applyInPandas(pandas_max, df.schema)),
        "naive Python": lambda: df.rdd.map(lambda r: (r.key, r)).reduceByKey(bigger).count(),
    }

    def pandas_revenue(pdf: pd.DataFrame) -> pd.DataFrame:
        return pd.DataFrame({"key": [pdf["key"].iloc[0]], "revenue": [pdf["price"].sum()], "n": [len(pdf)]})

    yield "keyed aggregate(AggregateFunction.add_batch)", {
        "fw-magics": _noop(keyed.aggregate(Revenue()).to_dataframe()),
        "hand-written PySpark": _noop(df.groupBy("key").applyInPandas(pandas_revenue, "key long, revenue double, n long")),
        "naive Python": lambda: df.rdd.map(lambda r: (r.key, (r.price, 1)))
        .reduceByKey(lambda a, b: (a[0] + b[0], a[1] + b[1])).count(),
    }
    if cache:
        df.unpersist()


def run(rows: int = 5_000_000, partitions: int = 4, runs: int = 5, spark=None, only: str = "",
        naive: bool = True, keys: int = 1000, warmups: int = 2, hand_written: bool = True,
        breakdown: bool = True) -> list[dict]:
    """``only``: run just the cases whose name contains it; ``naive=False`` skips the naive way,
    ``hand_written=False`` the hand-written one (minutes with many keys), ``breakdown=False`` the one
    more run of each variant that reads where the time went from Spark's UI."""
    import fw_magics as fw

    spark = spark or fw.get_spark()
    ui = SparkUI.attach(spark) if breakdown else None
    results = []
    for case, variants in cases(spark, rows, partitions, keys=keys):
        if only and only not in case:
            continue
        # fw-magics and the hand-written way run in turns after two warm-up rounds (Python
        # workers started, JVM code paths compiled); the naive way, ten times slower, is
        # timed once: its noise does not change the ratio that matters
        slow = variants.pop("naive Python")
        hand = variants.pop("hand-written PySpark") if not hand_written else None
        medians = interleaved_medians(variants, runs, warmups=warmups)
        medians["naive Python"] = median_time(slow, 1) if naive else float("nan")
        if hand is not None:
            medians["hand-written PySpark"] = float("nan")
        breakdowns = {name: ui.measure(fn) for name, fn in variants.items()} if ui is not None else {}
        results.append({"case": case, "medians": medians, "runs": runs, "rows": rows, "partitions": partitions,
                        "breakdown": breakdowns})
        print(f"  {case}: " + ", ".join(f"{k} {v:.2f}s" for k, v in medians.items()), flush=True)
        for name, b in breakdowns.items():
            print(f"    {name}: {b.line()}", flush=True)
    return results
