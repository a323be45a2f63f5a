"""Where the time of one run goes: Spark stages, Python workers, driver.

Read from the embedded session's UI REST API (``/api/v1/applications/<id>/...``), which a
classic session serves without py4j calls per query; under Spark Connect (no UI URL on the
client) the breakdown is skipped. For one run of a thunk it reports:

* each Spark stage that ran: its tasks, wall time (submission to completion), the summed
  task time and the shuffle bytes it wrote;
* from the SQL metrics of the Python operators (``MapInArrow``, ``FlatMapGroupsInArrow``...):
  the time spent in Python workers, split into start, init and executing Python code, and
  the Arrow bytes sent and returned;
* driver overhead: the wall time outside every Spark job (planning, collection, our own
  bookkeeping).
"""

from __future__ import annotations

import json
import re
import time
import urllib.request
from collections.abc import Callable
from dataclasses import dataclass, field

_UNITS = {"ms": 1e-3, "s": 1.0, "m": 60.0, "h": 3600.0, "min": 60.0}
_BYTES = {"B": 1, "KiB": 2**10, "MiB": 2**20, "GiB": 2**30, "TiB": 2**40}
_PYTHON = {
    "time to run Python workers": "python_run_s",
    "time to execute Python code": "python_exec_s",
    "time to start Python workers": "python_start_s",
    "time to initialize Python workers": "python_init_s",
    "data sent to Python workers": "to_python_bytes",
    "data returned from Python workers": "from_python_bytes",
}


def metric_value(text: str) -> float | None:
    """A Spark SQL metric's total: "22.6 s", "354 ms", "30.6 MiB", or the first line of
    "total (min, med, max ...)\\n22.6 s (...)" -> seconds or bytes."""
    line = text.split("\n", 1)[1] if text.startswith("total") and "\n" in text else text
    match = re.match(r"\s*([\d,.]+)\s*([A-Za-z]+)?", line)
    if not match:
        return None
    number = float(match.group(1).replace(",", ""))
    unit = match.group(2) or ""
    if unit in _UNITS:
        return number * _UNITS[unit]
    if unit in _BYTES:
        return number * _BYTES[unit]
    return number


def _time(stamp: str | None) -> float | None:
    if not stamp:
        return None
    # "2026-11-23T17:51:00.807GMT"
    from datetime import datetime, timezone

    return datetime.strptime(stamp.replace("GMT", ""), "%Y-%m-%dT%H:%M:%S.%f").replace(tzinfo=timezone.utc).timestamp()


@dataclass
class Stage:
    stage_id: int
    name: str
    tasks: int
    wall_s: float
    task_s: float
    shuffle_write_bytes: int
    shuffle_read_bytes: int


@dataclass
class Breakdown:
    wall_s: float
    jobs_s: float  # the union of Spark job intervals
    stages: list[Stage] = field(default_factory=list)
    python: dict[str, float] = field(default_factory=dict)
    operators: list[str] = field(default_factory=list)  # physical plan node names (SQL UI)

    @property
    def driver_s(self) -> float:
        return max(self.wall_s - self.jobs_s, 0.0)

    def line(self) -> str:
        """One compact line: stages, Python, driver."""
        stages = " + ".join(f"s{s.stage_id}[{s.tasks}t {s.wall_s:.2f}s"
                            + (f" shuf {s.shuffle_write_bytes / 2**20:.1f}MiB" if s.shuffle_write_bytes else "")
                            + "]" for s in self.stages)
        py = ""
        if self.python.get("python_run_s"):
            py = (f"; python workers {self.python.get('python_run_s', 0):.2f}s task-time"
                  f" (exec {self.python.get('python_exec_s', 0):.2f}s, start {self.python.get('python_start_s', 0):.2f}s,"
                  f" init {self.python.get('python_init_s', 0):.2f}s),"
                  f" to python {self.python.get('to_python_bytes', 0) / 2**20:.0f}MiB,"
                  f" back {self.python.get('from_python_bytes', 0) / 2**20:.0f}MiB")
        return (f"wall {self.wall_s:.2f}s = spark jobs {self.jobs_s:.2f}s + driver {self.driver_s:.2f}s; "
                f"{len(self.stages)} stage(s): {stages or '-'}{py}")


class SparkUI:
    """The embedded session's UI REST API; ``None`` from ``attach`` when there is none."""

    def __init__(self, url: str, app: str):
        self.base = f"{url}/api/v1/applications/{app}"

    @classmethod
    def attach(cls, spark) -> SparkUI | None:
        try:
            context = spark.sparkContext  # classic only; Spark Connect has no UI URL here
            url, app = context.uiWebUrl, context.applicationId
        except Exception:  # noqa: BLE001 - Connect, or UI disabled
            return None
        if not url:
            return None
        ui = cls(url, app)
        for _ in range(3):  # a loaded machine's UI may need a while to answer its first request
            try:
                ui.get("jobs")
                return ui
            except OSError:
                time.sleep(1)
        print(f"no breakdown: the Spark UI at {url} does not answer", flush=True)
        return None

    def get(self, path: str):
        with urllib.request.urlopen(f"{self.base}/{path}", timeout=30) as response:
            return json.loads(response.read())

    def _marks(self) -> tuple[int, int, int]:
        jobs = self.get("jobs")
        stages = self.get("stages")
        sqls = self.get("sql?details=false&planDescription=false&offset=0&length=100000")
        return (max((j["jobId"] for j in jobs), default=-1), max((s["stageId"] for s in stages), default=-1),
                max((q["id"] for q in sqls), default=-1))

    def measure(self, thunk: Callable[[], object]) -> Breakdown:
        job0, stage0, sql0 = self._marks()
        started = time.perf_counter()
        thunk()
        wall = time.perf_counter() - started
        time.sleep(0.3)  # the listener bus delivers the last events asynchronously
        jobs = [j for j in self.get("jobs") if j["jobId"] > job0]
        intervals = sorted((_time(j.get("submissionTime")), _time(j.get("completionTime"))) for j in jobs)
        busy, end = 0.0, None
        for a, b in intervals:
            if a is None or b is None:
                continue
            if end is None or a > end:
                busy += b - a
                end = b
            elif b > end:
                busy += b - end
                end = b
        stages = []
        for s in sorted(self.get("stages"), key=lambda s: s["stageId"]):
            if s["stageId"] <= stage0 or s.get("status") == "SKIPPED":
                continue
            a, b = _time(s.get("submissionTime")), _time(s.get("completionTime"))
            stages.append(Stage(s["stageId"], s["name"], s["numTasks"], (b - a) if a and b else 0.0,
                                s.get("executorRunTime", 0) / 1000, s.get("shuffleWriteBytes", 0),
                                s.get("shuffleReadBytes", 0)))
        python: dict[str, float] = {}
        operators: list[str] = []
        for q in self.get("sql?details=true&planDescription=false&offset=0&length=100000"):
            if q["id"] <= sql0:
                continue
            for node in q.get("nodes", []):
                operators.append(node["nodeName"])
                for metric in node.get("metrics", []):
                    key = _PYTHON.get(metric["name"])
                    value = metric_value(metric["value"]) if key else None
                    if value is not None:
                        python[key] = python.get(key, 0.0) + value
        return Breakdown(wall, busy, stages, python, operators)
