"""A client that outlives its Spark Connect server: python -m tests.cluster.connect_client JOB_DIR MARKERS CONTROL PID.

It runs the runtime tests' three-vertex job against ``SPARK_REMOTE``; a task of the last
vertex kills the server (PID) with SIGKILL (armed once: the job that resumes is the same job). The client catches the failure, writes
``CONTROL/failed``, waits for ``CONTROL/restarted`` (the test starts the server again on the
same port), stops the dead session, opens a new one and runs the same job again in this same
process: it must resume. Prints the result as JSON.
"""

from __future__ import annotations

import faulthandler
import json
import os
import signal
import sys
import time

import fw_magics as fw
from fw_magics.teaching import testing
from tests.runtime import jobs


def wait_for(path: str, timeout: float = 600) -> None:
    deadline = time.monotonic() + timeout
    while not os.path.exists(path):
        if time.monotonic() > deadline:
            raise SystemExit(f"timed out waiting for {path}")
        time.sleep(0.2)


def main() -> None:
    job_dir, markers, control, server_pid = sys.argv[1], sys.argv[2], sys.argv[3], int(sys.argv[4])
    faulthandler.register(signal.SIGUSR1, all_threads=True)  # a stuck client shows where it is
    first = fw.get_spark()
    testing.arm(jobs.kill_arm(markers), pid=server_pid)  # a task of the last vertex kills the server
    try:
        fw.execute(jobs.three_vertex_job(markers), job_dir=job_dir, job_name="sales")
        raise SystemExit("the job finished although its server was killed")
    except Exception as error:  # the server is gone: whatever the client raises
        first_line = (str(error).splitlines() or [""])[0]
        with open(os.path.join(control, "failed"), "w") as f:
            f.write(f"{type(error).__name__}: {first_line[:300]}")
    wait_for(os.path.join(control, "restarted"))
    # the old session died with its server: stop it (releases nothing, clears it as the active
    # session) and let fw-magics open a new one, in this same process
    first.stop()
    spark = fw.get_spark()
    stream = jobs.three_vertex_job(markers)  # the very job that was killed: its content is unchanged
    assert stream.spark is spark and spark is not first, "the new session is the one fw-magics uses"
    result = fw.execute(stream, job_dir=job_dir, job_name="sales")
    print(json.dumps({"rows": sorted(tuple(r) for r in result.collect()), "ran": sorted(result.ran),
                      "recovered": sorted(result.recovered), "pid": os.getpid()}))


if __name__ == "__main__":
    main()
