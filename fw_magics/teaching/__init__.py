"""Helpers for the tutorials and the tests, apart from the product (docs/architecture.md, layer 8).

What a tutorial cell calls so that it shows only the idea (tutorials/README.md lists the rules):

* data and files: ``land_file`` (files.py); ``scratch_folder``, ``scratch_folders`` (leftovers.py:
  removed when the kernel ends, however it ends); ``SensorReadings``, ``OrderFiles``,
  ``orders_table`` (data.py); a scratch PostgreSQL server: ``ScratchPostgres`` (scratch_postgres.py, stopped when the kernel ends);
  a second session writing to it: ``other_connection`` (tables.py);
* a driver that dies: ``run_and_kill_driver`` (drivers.py); fault injection for tests (testing.py);
* reading what a job left: ``event_table``, ``recorded_events`` (tables.py); ``operator_units``,
  ``units_table`` (savepoints.py);
* pictures: ``rescale_picture``, ``savepoint_rescale_picture``, ``switch_picture`` (pictures.py);
  mistakes side by side, each with the one line it was refused with: ``refusals`` (mistakes.py);
* the failover tutorial's graphs and clock: ``shape``, ``ManualClock`` (graphs.py);
* the exercises' checks: ``check``, ``check_same_rows`` (exercises.py);
* the demo job of ``make demo`` (demo.py).

Each name is imported from its module when first used (``from fw_magics.teaching import
land_file``), so importing one helper does not import the others' dependencies.
"""

from __future__ import annotations

import importlib

#: name -> the module (of this package) that defines it
_LAZY = {
    "land_file": "files", "scratch_folder": "leftovers", "scratch_folders": "leftovers",
    "SensorReadings": "data", "OrderFiles": "data", "OrdersTable": "data", "orders_table": "data",
    "ScratchPostgres": "scratch_postgres",
    "KilledDriver": "drivers", "run_and_kill_driver": "drivers",
    "event_table": "tables", "recorded_events": "tables", "OtherConnection": "tables", "other_connection": "tables",
    "operator_units": "savepoints", "units_table": "savepoints",
    "Picture": "pictures", "rescale_picture": "pictures", "savepoint_rescale_picture": "pictures",
    "switch_picture": "pictures", "refusals": "mistakes",
    "ManualClock": "graphs", "shape": "graphs",
    "NotQuite": "exercises", "check": "exercises", "check_same_rows": "exercises",
}

__all__ = sorted(_LAZY)


def __getattr__(name: str):
    if name not in _LAZY:
        raise AttributeError(f"module 'fw_magics.teaching' has no attribute {name!r}")
    value = getattr(importlib.import_module(f".{_LAZY[name]}", __name__), name)
    globals()[name] = value
    return value


def __dir__() -> list[str]:
    return sorted(set(globals()) | set(_LAZY))
