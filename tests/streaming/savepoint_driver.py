"""A driver process for the savepoint kill test: python -m tests.streaming.savepoint_driver SOURCE JOBS STEP.

It runs the keyed count-and-sum over SOURCE (mixed mode, parallelism 2), takes a first savepoint
(printing its path on stdout), writes one more file into SOURCE and processes it, then takes a
second savepoint and kills itself with SIGKILL inside the writer, right after the file STEP of
the second savepoint was written (the ``savepoint_writing`` hook): the first savepoint must
still restore, and the file written between the two must count as unread.
"""

from __future__ import annotations

import os
import pathlib
import signal
import sys
import time

import fw_magics as fw
from fw_magics import hooks
from tests.streaming import functions
from tests.streaming.files import Area

BETWEEN = [(1, 100, 100), (2, 200, 101)]  # the file written after the first savepoint


def main() -> None:
    source, jobs, step = sys.argv[1:4]
    fw.get_spark({"spark.ui.enabled": "false", "spark.sql.shuffle.partitions": "2"})
    stream = fw.from_files(source, "parquet", functions.SCHEMA, event_time="ts", watermark_delay="0 milliseconds")
    job = stream.key_by("k").aggregate(functions.CountSum()).start(job_dir=jobs, job_name="counts",
                                                                   trigger="100 milliseconds")
    job.process_all_available()
    print(job.savepoint(), flush=True)
    area = Area(pathlib.Path(os.path.dirname(source)))
    area.count = len(os.listdir(source))
    area.write(BETWEEN, os.path.basename(source))
    job.process_all_available()

    def kill(directory, written):
        if written == step:
            os.kill(os.getpid(), signal.SIGKILL)

    hooks.register("savepoint_writing", kill)
    job.savepoint()
    time.sleep(120)  # the kill comes first
    raise SystemExit("no kill happened")


if __name__ == "__main__":
    main()
