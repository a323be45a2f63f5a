"""The first two full-window cases on whatever session fw.get_spark() gives (docs/cluster.md).

    python -m benchmarks.on_cluster [--rows N] [--runs R]
    FW_SPARK_MASTER=spark://127.0.0.1:PORT python -m benchmarks.on_cluster

Prints the master and, per case, the medians of fw-magics and the hand-written PySpark
equivalent, taken in turns after one warm-up round.
"""

from __future__ import annotations

import argparse
import itertools


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--rows", type=int, default=1_000_000)
    parser.add_argument("--partitions", type=int, default=4)
    parser.add_argument("--runs", type=int, default=3)
    args = parser.parse_args()
    import fw_magics as fw
    from benchmarks.fullwindow import cases
    from benchmarks.timing import interleaved_medians

    spark = fw.get_spark()
    print(f"master: {spark.sparkContext.master}, {args.rows:,} rows in {args.partitions} partitions")
    for case, variants in itertools.islice(cases(spark, args.rows, args.partitions), 2):
        variants.pop("naive Python")
        medians = interleaved_medians(variants, args.runs, warmups=1)
        print(f"| {case} | " + " | ".join(f"{v:.2f} s" for v in medians.values()) + " |", flush=True)


if __name__ == "__main__":
    main()
