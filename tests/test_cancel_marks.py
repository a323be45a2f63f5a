"""The cancel marks without Spark: which job tags a task's workers look for, and the marks' folder."""

from __future__ import annotations

import os
import time

from fw_magics.spark import cancel_marks
from fw_magics.spark.actions import _Action


def test_an_actions_tag_is_found_in_classic_and_in_spark_connects_job_tags():
    tag = _Action(spark=None).tag
    assert cancel_marks.TAG.fullmatch(tag)
    classic = f"other-tag,{tag}"
    connect = (
        "SparkConnect_OperationTag_User__Session_32ef_Operation_5600,"
        f"SparkConnect_SessionTag_User__Session_32ef_Tag_{tag},spark-session-8b18-execution-root-id-0"
    )
    assert cancel_marks.TAG.findall(classic) == cancel_marks.TAG.findall(connect) == [tag]
    assert cancel_marks.TAG.findall("SparkConnect_OperationTag_User__Session_32ef_Operation_5600") == []


def test_a_mark_is_a_file_named_for_the_tag_and_old_marks_are_dropped(tmp_path, monkeypatch):
    monkeypatch.setattr(cancel_marks.tempfile, "gettempdir", lambda: str(tmp_path))
    folder = cancel_marks.marks_dir()
    cancel_marks.mark("fw-magics-000000000001")
    old = time.time() - cancel_marks.KEEP - 60
    os.utime(os.path.join(folder, "fw-magics-000000000001"), (old, old))
    cancel_marks.mark("fw-magics-000000000002")
    assert sorted(os.listdir(folder)) == ["fw-magics-000000000002"]


def test_a_call_outside_a_spark_task_runs_unwatched():
    assert list(cancel_marks.watched_call(lambda n: iter(range(n)), 3)) == [0, 1, 2]
    assert cancel_marks._watched == {}
