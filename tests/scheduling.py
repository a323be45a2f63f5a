"""How `make test` spreads its classic run over two pytest-xdist workers (``-n 2``;
tests/conftest.py installs this scheduler through xdist's ``pytest_xdist_make_scheduler``).

A work unit is a test file: the tests of a file share its module- and class-scoped fixtures
(a kernel, a job directory), which a worker would otherwise set up again. Two exceptions:

* ``TOGETHER``: folders whose tests share one expensive session fixture run as one unit on one
  worker (each worker would start its own JupyterLab server and Chromium);
* ``SPLIT``: files of independent, long tests (each tutorial starts its own kernel and Spark)
  are split into one unit per test, so both workers share them.

Units start longest first (``SLOW_FIRST``, from ``--durations``), so the run does not end with one
worker still in a two-minute tutorial while the other idles. The order only changes which worker
runs a test and when, never what a test does.

(xdist's own ``--dist loadgroup`` would express ``TOGETHER`` with ``xdist_group`` marks, but it
does not group under pytest 9: it renames ``item._nodeid``, which pytest 9 no longer reads.)
"""

from __future__ import annotations

from xdist.scheduler import LoadScopeScheduling

#: folder -> the one unit all its tests form
TOGETHER = {
    "tests/browser/": "tests/browser/",  # one JupyterLab per Spark mode and one Chromium for all of them
}

#: files whose tests are each a unit of their own
SPLIT = {
    "tests/test_tutorials.py",
}

#: units that take longest (30 s or more on the 2-core VM, summed over their tests), longest first;
#: every other unit follows in collection order
TUTORIAL = "tests/test_tutorials.py::test_tutorial_runs_with_its_exercises_solved[{}]"
SLOW_FIRST = [
    "tests/browser/",
    TUTORIAL.format("06_backlog_then_stream"),
    "tests/streaming/test_seed_rescale.py",
    "tests/cluster/test_on_any_backend.py",
    "tests/magics/test_interrupt.py",
    "tests/runtime/test_stale_results.py",
    TUTORIAL.format("04_job_recovery"),
    "tests/streaming/test_follow.py",
    "tests/magics/test_kernel.py",
    "tests/runtime/test_execute.py",
    TUTORIAL.format("07_rescaling_state"),
    "tests/magics/test_widget_magics.py",
    "tests/magics/test_equivalence.py",
    "tests/magics/test_stream_magic.py",
    "tests/streaming/test_operator_state.py",
    TUTORIAL.format("01_full_window_partition"),
    "tests/streaming/test_modes.py",
    "tests/runtime/test_kill.py",
    "tests/datastream/test_column_names.py",
    TUTORIAL.format("00_quickstart"),
    "tests/magics/test_magic.py",
    "tests/datastream/test_properties.py",
    "tests/widgets/test_with_spark.py",
    "tests/streaming/test_seam.py",
    "tests/magics/test_grammar.py",
    "tests/widgets/test_stop.py",
    "tests/recovery/test_hostile_properties.py",
    "tests/recovery/test_hostile_dir.py",
    "tests/runtime/test_storage_errors.py",
    "tests/state/test_repartition_properties.py",
]


def unit_of(nodeid: str) -> str:
    path = nodeid.split("::", 1)[0]
    for folder, unit in TOGETHER.items():
        if path.startswith(folder):
            return unit
    return nodeid if path in SPLIT else path


class SuiteScheduling(LoadScopeScheduling):
    """Load-scope scheduling with the units and the order above."""

    _ordered = False

    def _split_scope(self, nodeid: str) -> str:
        return unit_of(nodeid)

    def _assign_work_unit(self, node) -> None:
        if not self._ordered:  # the queue is complete before the first unit is handed out
            self._ordered = True
            rank = {unit: i for i, unit in enumerate(SLOW_FIRST)}
            units = sorted(self.workqueue.items(), key=lambda item: rank.get(item[0], len(rank)))
            self.workqueue.clear()
            self.workqueue.update(units)
        super()._assign_work_unit(node)
