"""fw-magics: Apache Flink's full-window, job-graph and recovery ideas for PySpark notebooks.

    import fw_magics as fw
    ds = fw.from_records([(1, "a"), (2, "b")], "id long, name string", partitions=2)
    ds.full_window_partition().sort_partition("id", fw.Order.DESCENDING).collect_partitions()
"""

from typing import TYPE_CHECKING

from .api.checkpointed import CheckpointedFunction
from .api.co_process import KeyedBroadcastProcessFunction, KeyedCoProcessFunction, ProcessJoinFunction
from .api.keyed_process import KeyedProcessFunction
from .api.process_function import ProcessFunction
from .api.state import ListStateDescriptor, ValueStateDescriptor
from .errors import (
    FullWindowError,
    FwMagicsError,
    GraphvizNotFound,
    Interrupted,
    JobDirNotSharedError,
    JobFailedError,
    JobLockedError,
    JobLockLostError,
    JobStorageError,
    ResumeError,
    SparkUnavailableError,
)
from .options import options

#: The public names that need pyarrow or pyspark, and the module each comes from: imported on
#: first use (``fw.from_records``...), so ``import fw_magics`` and its pure subpackages
#: (graph, state, failover, recovery) start without loading Spark.
_LAZY = {
    "AggregateFunction": "api.functions", "Order": "api.functions", "Record": "values.records",
    "get_spark": "spark.session", "DataStream": "datastream", "KeyedPartitionWindowedStream": "datastream",
    "KeyedStream": "datastream", "PartitionWindowedStream": "datastream", "StatefulStream": "datastream",
    "OperatorStream": "datastream", "from_dataframe": "datastream", "from_files": "datastream",
    "from_pandas": "datastream", "from_records": "datastream", "from_table": "datastream",
    "drop_slot": "datastream", "load_savepoint": "runtime.streaming.savepoints.files",
    "read_savepoint": "runtime.streaming.savepoints.reader", "write_savepoint": "runtime.streaming.savepoints.writer",
    "check_savepoint": "runtime.streaming.savepoints.verdicts",
}

if TYPE_CHECKING:  # what the lazy names are, for editors and type checkers
    from .api.functions import AggregateFunction, Order
    from .datastream import (
        DataStream,
        KeyedPartitionWindowedStream,
        KeyedStream,
        OperatorStream,
        PartitionWindowedStream,
        StatefulStream,
        drop_slot,
        from_dataframe,
        from_files,
        from_pandas,
        from_records,
        from_table,
    )
    from .runtime.streaming.savepoints.files import load_savepoint
    from .runtime.streaming.savepoints.reader import read_savepoint
    from .runtime.streaming.savepoints.verdicts import check_savepoint
    from .runtime.streaming.savepoints.writer import write_savepoint
    from .spark.session import get_spark
    from .values.records import Record


def __getattr__(name: str):
    module = _LAZY.get(name)
    if module is None:
        raise AttributeError(f"module 'fw_magics' has no attribute {name!r}")
    import importlib

    value = getattr(importlib.import_module(f".{module}", __name__), name)
    globals()[name] = value  # the next lookup is an ordinary attribute
    return value


def __dir__():
    """The public names (``__all__``) and the module's dunders: not the submodules importing them set as
    attributes (``api``, ``errors``...), nor the helpers the facade keeps for itself."""
    return sorted(set(__all__) | {name for name in globals() if name.startswith("__") and name.endswith("__")})


__version__ = "0.1.0"


def execute(stream, job_dir=None, job_name=None, failover="region", restart=None, resume="auto"):
    """Run a DataStream as a recoverable batch job; same as ``stream.execute(...)``.

    Regions run one after another on Spark, blocking results are committed per subtask in
    ``job_dir/<job_name>/results``, job events go to ``job_dir/<job_name>/events``; after a
    kernel or driver restart the same call resumes without recomputing finished work.
    """
    from .runtime.batch.job import execute as run

    return run(stream, job_dir=job_dir, job_name=job_name, failover=failover, restart=restart, resume=resume)


__all__ = [
    "AggregateFunction", "CheckpointedFunction", "DataStream", "FullWindowError", "FwMagicsError", "GraphvizNotFound",
    "Interrupted", "JobDirNotSharedError", "JobFailedError", "JobLockedError", "JobLockLostError", "JobStorageError",
    "KeyedBroadcastProcessFunction", "KeyedCoProcessFunction", "KeyedPartitionWindowedStream", "KeyedProcessFunction", "KeyedStream", "ListStateDescriptor",
    "OperatorStream", "Order", "PartitionWindowedStream", "ProcessFunction", "ProcessJoinFunction", "Record",
    "ResumeError", "SparkUnavailableError", "StatefulStream", "ValueStateDescriptor", "check_savepoint", "drop_slot",
    "execute",
    "from_dataframe",
    "from_files", "from_pandas", "from_records", "from_table", "get_spark", "load_savepoint", "options", "read_savepoint",
    "write_savepoint",
]


def load_ipython_extension(shell):
    """``%load_ext fw_magics``: register the %fullwindow / %%fullwindow magics."""
    from .magics.magic import load_ipython_extension as load

    load(shell)


def unload_ipython_extension(shell):
    """``%unload_ext fw_magics``: remove the magics again."""
    from .magics.magic import unload_ipython_extension as unload

    unload(shell)
