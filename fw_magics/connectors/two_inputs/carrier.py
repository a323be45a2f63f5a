"""``fw_carrier``: a stream of one row, in its first micro-batch: an input's backlog watermark, carried.

Spark keeps one watermark per ``withWatermark`` (per input of a two-input job) only while a query
runs: its checkpoint keeps the global one. A mixed job's fresh stream is a new query, so each
input's watermark would start from its fresh records alone, where the same job run as a plain
stream counts the backlog's records too, and the two modes would fire timers and drop late
records at different times. So each input's fresh stream is given, before its ``withWatermark``,
this source's one row: the input's greatest backlog event time (option ``time``, epoch ms). It
moves that input's watermark to where the plain stream has it, and is then dropped (its input tag
is 0: ``connected_source``, ``query``). Its offsets are ``{"sent": 0|1}``: a restart from a
checkpoint never sends it again.
"""

from __future__ import annotations

from pyspark.sql.datasource import DataSource, DataSourceStreamReader, InputPartition
from pyspark.sql.streaming.datasource import ReadAllAvailable, SupportsTriggerAvailableNow

NAME = "fw_carrier"
SCHEMA = "t timestamp"
#: Its offsets' one field.
SENT = "sent"


class CarrierStreamReader(DataSourceStreamReader, SupportsTriggerAvailableNow):
    def __init__(self, options):
        self.time = int(options["time"])

    def initialOffset(self) -> dict:
        return {SENT: 0}

    def getDefaultReadLimit(self):
        return ReadAllAvailable()

    def prepareForTriggerAvailableNow(self) -> None:
        pass

    def latestOffset(self, start: dict, limit) -> dict:
        return {SENT: 1}

    def partitions(self, start: dict, end: dict):
        return [InputPartition(self.time)] if start[SENT] == 0 and end[SENT] == 1 else []

    def read(self, partition):
        import pyarrow as pa

        yield pa.RecordBatch.from_arrays([pa.array([partition.value * 1000], pa.timestamp("us", tz="UTC"))],
                                         names=["t"])

    def commit(self, end: dict) -> None:
        pass


class CarrierDataSource(DataSource):
    @classmethod
    def name(cls) -> str:
        return NAME

    def schema(self):
        return SCHEMA

    def streamReader(self, schema):
        return CarrierStreamReader(self.options)


def carrier(spark, time_ms: int):
    """The one-row stream carrying ``time_ms`` (column ``t``)."""
    spark.dataSource.register(CarrierDataSource)
    return spark.readStream.format(NAME).option("time", str(time_ms)).load()


def is_carrier_offset(offset) -> bool:
    """Whether a query source's offset (as its progress reports it, parsed) is a carrier's."""
    return isinstance(offset, dict) and set(offset) == {SENT}
