"""fw-magics: Apache Flink's full-window, job-graph and recovery ideas for PySpark notebooks.

    import fw_magics as fw
    ds = fw.from_records([(1, "a"), (2, "b")], "id long, name string", partitions=2)
    ds.full_window_partition().sort_partition("id", fw.Order.DESCENDING).collect_partitions()
"""

from .errors import (
    FullWindowError,
    FwMagicsError,
    GraphvizNotFound,
    JobDirNotSharedError,
    JobLockedError,
    JobLockLostError,
    JobStorageError,
    ResumeError,
    SparkUnavailableError,
)
from .functions import AggregateFunction, Order
from .records import Record
from .session import get_spark
from .streams import (
    DataStream,
    KeyedPartitionWindowedStream,
    KeyedStream,
    PartitionWindowedStream,
    from_dataframe,
    from_pandas,
    from_records,
)

__version__ = "0.1.0"


def execute(stream, job_dir=None, job_name=None, failover="region", restart=None, resume="auto"):
    """Run a DataStream as a recoverable batch job; same as ``stream.execute(...)``.

    Regions run one after another on Spark, blocking results are committed per subtask in
    ``job_dir/<job_name>/results``, job events go to ``job_dir/<job_name>/events``; after a
    kernel or driver restart the same call resumes without recomputing finished work.
    """
    return stream.execute(job_dir=job_dir, job_name=job_name, failover=failover, restart=restart, resume=resume)

__all__ = [
    "AggregateFunction", "DataStream", "FullWindowError", "FwMagicsError", "GraphvizNotFound",
    "JobDirNotSharedError", "JobLockedError", "JobLockLostError", "JobStorageError", "KeyedPartitionWindowedStream",
    "KeyedStream", "Order", "PartitionWindowedStream",
    "Record", "ResumeError", "SparkUnavailableError", "execute", "from_dataframe", "from_pandas",
    "from_records", "get_spark",
]


def load_ipython_extension(shell):
    """``%load_ext fw_magics``: register the %fullwindow / %%fullwindow magics."""
    from .magics.magic import load_ipython_extension as load

    load(shell)


def unload_ipython_extension(shell):
    """``%unload_ext fw_magics``: remove the magics again."""
    from .magics.magic import unload_ipython_extension as unload

    unload(shell)
