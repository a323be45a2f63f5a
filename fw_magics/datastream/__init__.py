"""The stream API: DataStream and its full-window operations (FLIP-380) on PySpark.

The names load their modules on first use: Spark's Python workers import
``fw_magics.datastream.physical.workers`` for every task that runs an operator, and need none of the
API (DataStream, the operations, the sources) to do so.
"""

import importlib

_WHERE = {
    "DataStream": "datastream", "KeyedPartitionWindowedStream": "keyed", "KeyedStream": "keyed",
    "OperatorStream": "operator_stream",
    "from_dataframe": "sources", "from_files": "sources", "from_pandas": "sources", "from_records": "sources",
    "from_table": "sources", "drop_slot": "sources",
    "StatefulStream": "stateful", "PartitionWindowedStream": "windowed",
}

__all__ = sorted(_WHERE)


def __getattr__(name):
    module = _WHERE.get(name)
    if module is None:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    return getattr(importlib.import_module(f".{module}", __name__), name)
