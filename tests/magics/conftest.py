"""A real IPython InteractiveShell with the extension loaded, on the shared Spark session."""

import re

import pytest

from tests.conftest import is_connect

ORDERS = [(1, "ada", 4.5, 2), (2, "grace", 3.0, 1), (3, "ada", 5.25, 4), (4, "linus", 2.75, 3), (5, "grace", 9.0, 1)]
ORDERS_SCHEMA = "id long, customer string, price double, qty int"


@pytest.fixture(scope="session")
def shell(spark):
    from IPython.core.interactiveshell import InteractiveShell

    shell = InteractiveShell.instance()
    shell.run_line_magic("load_ext", "fw_magics")
    ok(shell, "import fw_magics as fw\nfrom pyspark.sql import functions as F")
    shell.user_ns["ORDERS"], shell.user_ns["ORDERS_SCHEMA"] = ORDERS, ORDERS_SCHEMA
    ok(shell, "orders = fw.from_records(ORDERS, ORDERS_SCHEMA, partitions=3)")  # partitions of 1, 2 and 2 records
    return shell


def run(shell, source: str):
    """Run one cell as a notebook would; return IPython's ExecutionResult."""
    return shell.run_cell(source, store_history=True)


def ok(shell, source: str):
    """Run a cell that must succeed; return its value (None when silenced)."""
    result = run(shell, source)
    assert result.success, repr(result.error_before_exec or result.error_in_exec)
    return result.result


class Jobs:
    """Counts Spark jobs on a classic session (Spark Connect has no status tracker: None)."""

    def __init__(self, spark):
        self.tracker = None if is_connect(spark) else spark.sparkContext.statusTracker()
        self.before = self._count()

    def _count(self):
        return None if self.tracker is None else len(self.tracker.getJobIdsForGroup(None))

    @property
    def ran(self):
        return None if self.tracker is None else self._count() - self.before


def normalized_plan(frame) -> str:
    """Spark's physical plan without the ids that differ between two builds of the same plan."""
    from tests.datastream.helpers import plan_text

    return re.sub(r"#\d+L?|plan_id=\d+", "#", plan_text(frame))
