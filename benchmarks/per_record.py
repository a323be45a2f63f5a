"""Where a per-record ``map_partition``'s Python time goes (issue 52), in-process, no Spark.

One partition of the full-window benchmark's per-record case (``--rows`` in 4 partitions: ``id, key,
price, qty`` in Spark's 10,000-row Arrow batches, the function ``yield (r.id, r.price * r.qty)``) run
through the worker's own pieces, timed cumulatively: the Arrow columns made Python lists, a record per
row (``batch_records``), the user's function, the rows written back to Arrow and checked
(``RowWriter.batches``, as ``workers.map_partition`` chains them); against the hand-written loop over
column lists the full-window benchmark times (``mapInArrow``'s body). CPU time, the least of ``runs``,
in ns a record, under the per-record operators' raised GC threshold.
"""

from __future__ import annotations

import itertools
import time
from collections import deque


def run(rows: int, runs: int) -> list[tuple[str, float]]:
    import numpy as np
    import pyarrow as pa
    from pyspark.sql import types as T

    from benchmarks.fullwindow import per_record_by_hand
    from fw_magics.datastream.arguments import writer_for
    from fw_magics.datastream.physical import workers
    from fw_magics.values.records import _column_values, batch_records

    n = rows // 4
    ids = np.arange(n, dtype=np.int64)
    table = pa.table({"id": ids, "key": ids % 1000, "price": np.random.default_rng(7).random(n) * 100,
                      "qty": (ids % 7).astype(np.int32)})
    batches = table.to_batches(max_chunksize=10_000)
    out = T.StructType([T.StructField("id", T.LongType()), T.StructField("total", T.DoubleType())])
    writer = writer_for(out, "map_partition function 'per_record'", out)

    def per_record(records):
        for r in records:
            yield (r.id, r.price * r.qty)

    hand_written = per_record_by_hand()

    def records():
        return itertools.chain.from_iterable(map(batch_records, batches))

    pieces = [
        ("hand-written loop over column lists", lambda: deque(hand_written(batches), 0)),
        ("Arrow columns to Python lists", lambda: deque(([_column_values(c) for c in b.columns] for b in batches), 0)),
        ("+ a record per row", lambda: deque(records(), 0)),
        ("+ the user's function", lambda: deque(per_record(records()), 0)),
        ("+ rows back to Arrow, checked (the whole worker)", lambda: deque(writer.batches(per_record(records())), 0)),
    ]
    results = []
    with workers.relaxed_gc():
        for name, piece in pieces:
            best = float("inf")
            for _ in range(runs):
                started = time.process_time()
                piece()
                best = min(best, time.process_time() - started)
            results.append((name, best * 1e9 / n))
    return results


def print_table(results: list[tuple[str, float]]) -> None:
    hand = results[0][1]
    print("\n| piece (cumulative) | ns a record | / hand-written |")
    print("|---|---|---|")
    for name, ns in results:
        print(f"| {name} | {ns:.0f} | {ns / hand:.2f}x |")
