"""fw-magics: Apache Flink's full-window, job-graph and recovery ideas for PySpark notebooks.

    import fw_magics as fw
    ds = fw.from_records([(1, "a"), (2, "b")], "id long, name string", partitions=2)
    ds.full_window_partition().sort_partition("id", fw.Order.DESCENDING).collect_partitions()
"""

from .errors import FullWindowError
from .functions import AggregateFunction, Order
from .records import Record
from .session import SparkUnavailableError, get_spark
from .streams import (
    DataStream, KeyedPartitionWindowedStream, KeyedStream, PartitionWindowedStream,
    from_dataframe, from_pandas, from_records,
)

__version__ = "0.1.0"

__all__ = [
    "AggregateFunction", "DataStream", "FullWindowError", "KeyedPartitionWindowedStream",
    "KeyedStream", "Order", "PartitionWindowedStream", "Record", "SparkUnavailableError",
    "from_dataframe", "from_pandas", "from_records", "get_spark",
]
