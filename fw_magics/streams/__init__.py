"""The stream API: DataStream and its full-window operations (FLIP-380) on PySpark."""

from .datastream import DataStream
from .keyed import KeyedPartitionWindowedStream, KeyedStream
from .operator_stream import OperatorStream
from .sources import from_dataframe, from_files, from_pandas, from_records
from .stateful import StatefulStream
from .windowed import PartitionWindowedStream

__all__ = [
    "DataStream", "KeyedPartitionWindowedStream", "KeyedStream", "OperatorStream", "PartitionWindowedStream", "StatefulStream",
    "from_dataframe", "from_files", "from_pandas", "from_records",
]
