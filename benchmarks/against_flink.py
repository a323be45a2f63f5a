"""fw-magics against Apache Flink 2.3's own FLIP-380 operators, on the same CSV files.

The input (id, key = id % 1000, price = rand * 100, qty = id % 7, as in ``fullwindow``) is
written once as 4 CSV files; both engines read them for every run, 4 ways parallel (one file
per Spark partition, one file per Flink split), and discard the result (Spark's ``noop`` sink,
Flink's ``DiscardingSink``). Each case does the same work on both sides: fw-magics in the
embedded Spark of this process; Flink's Java operators (benchmarks/flink_side/, compiled here
with javac against the jars PyFlink ships in .venv-flink) in one long-lived Java process on a
MiniCluster started once, which runs one job per line on its stdin. The two engines run in
turns after two warm-up rounds and are reported by their medians (a Flink run that has not
finished after a minute is cancelled and run again, uncounted: Flink 2.3's mapPartition hung
now and then here, its task waiting for a buffer while its function waited for records);
"scan" (read and discard) shows how much of each total is reading the files, and the table
shows each operator's own time as its total less the scan's on the same engine; under each case,
one more fw-magics run is broken down (Spark stages, Python workers, driver). The cold start is timed
first, before either engine runs here: from the launch of a fresh process to its first result (a
sort of 1,000 rows), median of 3, again in turns.
"""

from __future__ import annotations

import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from benchmarks.breakdown import SparkUI

ROOT = Path(__file__).resolve().parent.parent
FLINK_VENV = ROOT / ".venv-flink"
SOURCES = Path(__file__).resolve().parent / "flink_side"
SCHEMA = "id long, key long, price double, qty int"
PARTITIONS = 4

#: case -> (fw-magics' variant, the Flink side's name for its job). The last two give fw-magics the
#: same work without a Python function per record (vectorized pyarrow; Spark's own columns), against
#: the same Java operators: what a user gets where the function can be written that way.
CASES = {"scan (read and discard)": ("scan", "scan"), "sort_partition(price)": ("sort_partition", "sort_partition"),
         "map_partition(per record)": ("map_partition", "map_partition"),
         "aggregate(sum, count)": ("aggregate", "aggregate"),
         "keyed reduce(max price)": ("keyed_reduce", "keyed_reduce"),
         "map_partition(batches=True, pyarrow.compute)": ("map_batches", "map_partition"),
         "aggregate(Spark columns sum, count)": ("aggregate_columns", "aggregate")}

SPARK_COLD = """
import fw_magics as fw
from pyspark.sql import functions as F
spark = fw.get_spark()
df = spark.range(0, 1000, 1, 1).select("id", (F.col("id") % 1000).alias("key"),
                                       (F.rand(seed=7) * 100).alias("price"), (F.col("id") % 7).cast("int").alias("qty"))
rows = fw.from_dataframe(df).full_window_partition().sort_partition("price").to_dataframe().collect()
print("rows", len(rows), flush=True)
"""


def pyflink_home(venv: Path) -> Path | None:
    """PyFlink's folder in ``venv`` (its lib/ holds Flink's jars), or None when it is not there."""
    python = venv / "bin" / "python"
    if not python.exists():
        return None
    found = subprocess.run([str(python), "-c", "import os, pyflink; print(os.path.dirname(pyflink.__file__))"],
                           capture_output=True, text=True)
    return Path(found.stdout.strip()) if found.returncode == 0 else None


def format_table(rows: list[tuple[str, float, float]]) -> str:
    """rows: (case, fw-magics seconds, Flink seconds). With a scan row first, each operator's own
    time is also shown: its case's time less the scan's on the same engine (reading the files)."""
    scan = rows[0][1:] if rows and rows[0][0].startswith("scan") else None
    lines = ["| case | fw-magics | Flink (Java operator) | fw-magics / Flink | less the scan: fw-magics, Flink, ratio |",
             "|---|---|---|---|---|"]
    for case, ours, flink in rows:
        own = ""
        if scan is not None and not case.startswith(("scan", "cold")):
            ours_own, flink_own = ours - scan[0], flink - scan[1]
            ratio = f"{ours_own / flink_own:.2f}x" if ours_own > 0 and flink_own > 0 else "-"
            own = f"{ours_own:.2f} s, {flink_own:.2f} s, {ratio}"
        lines.append(f"| {case} | {ours:.2f} s | {flink:.2f} s | {ours / flink:.2f}x | {own} |")
    return "\n".join(lines)


def build_jar(pyflink: Path, build: Path) -> str:
    """Compile the Flink side into build/fw-bench-flink.jar; return the Java class path."""
    classpath = f"{pyflink / 'lib'}/*"
    classes = build / "classes"
    shutil.rmtree(classes, ignore_errors=True)
    classes.mkdir(parents=True)
    subprocess.run(["javac", "-nowarn", "-d", str(classes), "-cp", classpath, *map(str, SOURCES.glob("*.java"))],
                   check=True, stderr=subprocess.DEVNULL)
    jar = build / "fw-bench-flink.jar"
    subprocess.run(["jar", "cf", str(jar), "-C", str(classes), "."], check=True)
    return f"{classpath}{os.pathsep}{jar}"


class FlinkSide:
    """The long-lived Java process: ``run(case)`` runs one job on its warm MiniCluster."""

    def __init__(self, classpath: str, data: str, log: Path):
        self.log = open(log, "w")
        self.proc = subprocess.Popen(["java", "-cp", classpath, "FullWindowBench", "serve", data, str(PARTITIONS)],
                                     stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=self.log, text=True)
        self._answer("ready")
        self.stuck = 0

    def _answer(self, prefix: str | tuple[str, ...]) -> str:
        for line in self.proc.stdout:  # Flink's own console logging may come in between
            if line.startswith(prefix):
                return line
        raise RuntimeError(f"the Flink side stopped; its log: {self.log.name}")

    def run(self, case: str) -> float:
        self.proc.stdin.write(f"run {case}\n")
        self.proc.stdin.flush()
        answer = self._answer(("seconds ", "error ", "stuck"))
        if answer.startswith("error "):
            raise RuntimeError(f"Flink's {case} job failed: {answer[6:].strip()} (log: {self.log.name})")
        if answer.startswith("stuck"):  # Flink 2.3's mapPartition deadlock (FullWindowBench.java): again
            self.stuck += 1
            return self.run(case)
        return float(answer.split()[1])

    def close(self) -> None:
        try:
            self.proc.stdin.write("quit\n")
            self.proc.stdin.close()
            self.proc.wait(timeout=60)
        except (OSError, subprocess.TimeoutExpired):
            self.proc.kill()
        self.log.close()


def in_turns(spark_run, flink_run, runs: int, warmups: int = 2) -> tuple[float, float]:
    """Median seconds of fw-magics and of Flink, run in turns (as ``timing.interleaved_medians``); a
    Flink run's time is the one its process measured, so that a stuck run it repeated does not count."""
    ours, theirs = [], []
    for round_ in range(warmups + runs):
        started = time.perf_counter()
        spark_run()
        took = time.perf_counter() - started
        flink_took = flink_run()
        if round_ >= warmups:
            ours.append(took)
            theirs.append(flink_took)
    return statistics.median(ours), statistics.median(theirs)


def first_result_s(command: list[str], env: dict | None = None) -> float:
    """Seconds from the launch of ``command`` to its line "rows N" (its first result)."""
    started = time.perf_counter()
    proc = subprocess.Popen(command, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True, env=env)
    for line in proc.stdout:
        if line.startswith("rows "):
            took = time.perf_counter() - started
            proc.wait()
            return took
    raise RuntimeError(f"no result from {command[:3]}, exit status {proc.wait()}")


def write_input(spark, rows: int, folder: str) -> None:
    from pyspark.sql import functions as F

    spark.range(0, rows, 1, PARTITIONS).select(
        "id", (F.col("id") % 1000).alias("key"), (F.rand(seed=7) * 100).alias("price"),
        (F.col("id") % 7).cast("int").alias("qty"),
    ).write.csv(folder)


def read_input(spark, folder: str):
    """The CSV files, one Spark partition each (as one split each on Flink)."""
    biggest = max(p.stat().st_size for p in Path(folder).glob("part-*"))
    spark.conf.set("spark.sql.files.maxPartitionBytes", str(biggest))  # no file split,
    spark.conf.set("spark.sql.files.openCostInBytes", str(biggest))  # none two to a partition
    df = spark.read.schema(SCHEMA).csv(folder)
    assert df.rdd.getNumPartitions() == PARTITIONS, df.rdd.getNumPartitions()
    return df


def spark_cases(df) -> dict:
    import pyarrow as pa
    import pyarrow.compute as pc
    from pyspark.sql import functions as F

    import fw_magics as fw

    def noop(frame):
        return lambda: frame.write.format("noop").mode("overwrite").save()

    def per_record(records):
        for r in records:
            yield (r.id, r.price * r.qty)

    class Revenue(fw.AggregateFunction):  # as in fullwindow.py
        schema = "revenue double, n long"
        columns = ("price",)

        def create_accumulator(self):
            return (0.0, 0)

        def add_batch(self, batch, acc):
            return (acc[0] + pc.sum(batch.column("price")).as_py(), acc[1] + batch.num_rows)

        def get_result(self, acc):
            return acc

    def bigger(a, b):
        return a if a.price >= b.price else b

    def totals(batches):  # map_partition's vectorized form: the same output, a column at a time
        for batch in batches:
            total = pc.multiply(batch.column("price"), batch.column("qty").cast("double"))
            yield pa.RecordBatch.from_arrays([batch.column("id"), total], names=["id", "total"])

    ds = fw.from_dataframe(df, name="bench")
    window = ds.full_window_partition()
    return {
        "scan": noop(df),
        "sort_partition": noop(window.sort_partition("price").to_dataframe()),
        "map_partition": noop(window.map_partition(per_record, "id long, total double").to_dataframe()),
        "aggregate": noop(window.aggregate(Revenue()).to_dataframe()),
        "keyed_reduce": noop(ds.key_by("key").full_window_partition().reduce(bigger).to_dataframe()),
        "map_batches": noop(window.map_partition(totals, "id long, total double", batches=True).to_dataframe()),
        "aggregate_columns": noop(window.aggregate([F.sum("price").alias("revenue"), F.count("*").alias("n")])
                                  .to_dataframe()),
    }


def cold_starts(classpath: str, runs: int = 3) -> tuple[float, float]:
    """Median seconds of fresh processes to their first result: fw-magics', Flink's, in turns."""
    ours, theirs = [], []
    for _ in range(runs):
        ours.append(first_result_s([sys.executable, "-c", SPARK_COLD]))
        theirs.append(first_result_s(["java", "-cp", classpath, "FullWindowBench", "cold"]))
    return statistics.median(ours), statistics.median(theirs)


def main(rows: int = 1_000_000, runs: int = 5, venv: Path | None = None, only: str = "", header: str = "") -> int:
    venv = Path(venv or os.environ.get("FW_FLINK_VENV") or FLINK_VENV)
    pyflink = pyflink_home(venv)
    if pyflink is None:
        print(f"--against-flink needs PyFlink (apache-flink==2.3.0) in its own venv, {venv}: not found; "
              "create it with `make bench-flink`")
        return 2
    if shutil.which("javac") is None or shutil.which("jar") is None:
        print("--against-flink needs a JDK (javac, jar): apt-get install openjdk-17-jdk-headless")
        return 2
    if header:
        print(header)
    import fw_magics as fw

    classpath = build_jar(pyflink, venv / "fw-bench-build")
    cold = cold_starts(classpath)  # first, with neither engine running in this process
    spark = fw.get_spark()
    ui = SparkUI.attach(spark)
    folder = tempfile.mkdtemp(prefix="fw-vs-flink-")
    flink = None
    try:
        data = os.path.join(folder, "input")
        write_input(spark, rows, data)
        df = read_input(spark, data)
        ours = spark_cases(df)
        flink = FlinkSide(classpath, data, venv / "fw-bench-build" / "flink.log")
        print(f"\nfw-magics against Flink 2.3 (Java FLIP-380 operators): {rows:,} rows "
              f"in {PARTITIONS} CSV files, median of {runs} runs taken in turns after two warm-up rounds; "
              "embedded Spark local[*] / a Flink MiniCluster, both in BATCH, parallelism 4", flush=True)
        table = []
        for case, (variant, name) in CASES.items():
            if only and only not in case:
                continue
            stuck = flink.stuck
            m = in_turns(ours[variant], lambda name=name: flink.run(name), runs)
            table.append((case, *m))
            again = f" ({flink.stuck - stuck} Flink runs stuck and run again)" if flink.stuck > stuck else ""
            print(f"  {case}: fw-magics {m[0]:.2f}s, Flink {m[1]:.2f}s{again}", flush=True)
            if ui is not None:  # one more run of fw-magics' side, broken down (benchmarks/breakdown.py)
                print(f"    fw-magics: {ui.measure(ours[variant]).line()}", flush=True)
        table.append(("cold start to a first result (fresh process, sort of 1,000 rows)", *cold))
        print()
        print(format_table(table))
    finally:
        if flink is not None:
            flink.close()
        shutil.rmtree(folder, ignore_errors=True)
    return 0
