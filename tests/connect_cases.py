"""The cases `make test-extended` runs again under Spark Connect (``SPARK_REMOTE=local[2]``, marker ``connect``).

Under Connect most of fw-magics takes the very path it takes on classic Spark: the same DataFrame calls,
the same Arrow batches, the same Python workers. What differs is what the classic-vs-Connect seam
(``fw_magics/spark/flavour.py``) and Connect itself decide, so these are the cases that go through one of
those differences, each named beside its case. Every ``core`` case still runs on classic Spark in
``make test``, and the core cases of the paths a cluster changes run on the standalone cluster and the
separate Connect server (``tests/cluster``). An entry is a node id or its prefix; one that matches no
collected case fails the run (``conftest.py``), so the list cannot go stale.

A Connect difference that the separate Connect server of ``make test-cluster`` runs already (its
``CORE_UNDER_THE_CONNECT_SERVER``, tests/cluster/test_cluster.py: user modules as artifacts, job folders
and the probe, execute()'s progress and cancel by job tag, a stream's state partitions at a restore) is
not listed here again: that server is Connect too, with executors apart from it, and CI runs both.
"""

from __future__ import annotations

#: node id (or its prefix) -> the Connect difference it exercises
CONNECT_CASES = {
    # a DataFrame built from local data is a LocalRelation sent to the server, typed by Arrow there
    "tests/datastream/test_layout.py::test_from_records_splits_contiguously": "local data as a LocalRelation",
    "tests/datastream/test_layout.py::test_from_pandas_keeps_types_and_order": "pandas as a LocalRelation",
    "tests/datastream/test_layout.py::test_placement_keys_land_in_their_partition[3]": "partition ids on the server",
    "tests/datastream/test_values.py::test_from_records_refuses_before_any_job": "local data refused before a plan",
    "tests/datastream/test_values.py::test_what_spark_stores_is_what_the_model_says": "values back through Connect's Arrow",
    "tests/datastream/test_values.py::test_map_partition_refuses_a_fraction_in_an_integer_column":
        "a worker's error arrives as a gRPC exception",
    "tests/datastream/test_flink_cases.py::test_map_partition_sees_every_record_of_its_subtask": "TaskContext on the server",
    "tests/datastream/test_case_rule.py": "the session's case rule read through the server's conf",
    "tests/datastream/test_column_names.py::test_execute_commits_and_reads_back_awkward_names": "names in Connect's plan",
    # errors: Spark's analysis and worker errors are other classes under Connect, turned into the same line
    "tests/datastream/test_errors.py::test_unknown_column_lists_columns_and_suggests": "an analysis error under Connect",
    "tests/datastream/test_errors.py::test_unknown_column_in_spark_aggregate": "an analysis error under Connect",
    "tests/datastream/test_errors.py::test_bad_schema_ddl": "DDL parsed by the server",
    "tests/datastream/test_errors.py::test_user_errors_keep_their_traceback": "a worker's traceback as gRPC text",
    "tests/datastream/test_errors.py::test_streaming_dataframe_is_refused_when_the_window_is_defined":
        "a streaming DataFrame of Connect",
    "tests/magics/test_magic.py::test_an_error_in_a_worker_shows_only_the_users_frames": "a worker's traceback as gRPC text",
    "tests/magics/test_one_liners.py::test_a_job_failure_keeps_its_whole_traceback_with_the_cause_chained":
        "Connect's exception chain",
    "tests/magics/test_one_liners.py::test_a_literal_of_the_wrong_kind_in_a_spark_aggregate_is_one_line":
        "an analysis error under Connect",
    "tests/magics/test_value_errors.py::test_a_fraction_into_an_integer_column_is_one_line": "a worker's error via gRPC",
    # plans: fw-magics reads the optimized plan (partitions kept, no shuffle, sort in the JVM) as Connect explains it
    "tests/datastream/test_partitioning.py::test_no_shuffle_and_partition_i_from_partition_i[map_partition]":
        "the plan as Connect explains it",
    "tests/datastream/test_partitioning.py::test_sort_happens_in_the_jvm": "the plan as Connect explains it",
    "tests/datastream/test_partitioning.py::test_column_aggregate_placement_is_paid_only_where_partitions_are_read":
        "the plan as Connect explains it",
    "tests/magics/test_magic.py::test_explain_shows_python_pyspark_and_the_physical_plan": "the physical plan via Connect",
    "tests/magics/test_magic.py::test_spark_and_pandas_dataframes_are_inputs": "a Connect DataFrame as the input",
    "tests/magics/test_display.py::test_display_runs_one_spark_job": "a preview's one job, counted through Connect",
    "tests/magics/test_preview_cap.py": "a bounded collect through Connect",
    "tests/magics/test_help.py::test_every_example_in_the_help_runs": "every documented example, once, under Connect",
    # the flavour seam: job tags and cancel, task progress, the end of a session as an interruption
    # streaming: Python data sources registered per session, transformWithState and its state client, the
    # state partitions Connect's server keeps, the state data source (savepoints), foreachBatch, query progress
    "tests/streaming/test_follow.py": "query progress polled through Connect",
    "tests/widgets/test_job_view_spark.py": "job.show(): the backlog's rows read through the server, the buttons' calls",
    # one case per difference where a file's others take the same path again (each of those runs on classic
    # Spark, most on the standalone cluster too): the handover's incremental savepoint chain, the broadcast
    # input of a keyed function and a table's savepoint at 1 and 3 added 2:10 to CI and no Connect path
    "tests/streaming/test_handover.py::test_only_the_keys_the_stream_meets_enter_the_state_store_and_a_savepoint":
        "the handover as Flavour.CONNECT decides it, and its savepoint",
    "tests/streaming/test_keyed_operator_state.py::test_operator_state_of_a_keyed_function_is_kept_per_state_partition":
        "transformWithState's state client under Connect",
    "tests/streaming/test_modes.py": "every mode's query under Connect",
    "tests/streaming/test_operator_state.py": "the operator query and its savepoint under Connect",
    "tests/streaming/test_savepoint_reader.py::test_keyed_state_has": "a savepoint's base files read by server tasks",
    "tests/streaming/test_savepoint_reader.py::test_a_running_jobs_state": "job.state(batch=N): the store, progress via Connect",
    "tests/streaming/test_savepoint_reader.py::test_state_changes_between": "state_changes: the state store at two batches",
    "tests/streaming/test_savepoint_reader.py::test_a_modified_reader_written_back": "write_savepoint: server tasks",
    "tests/streaming/test_partitioned_state.py::test_each_stream_worker_opens_only_its_partition": "workers on the server",
    "tests/streaming/test_rescale.py": "the state data source read through Connect",
    "tests/streaming/test_restart.py::test_stop_then_start_again": "a query stopped and started through Connect",
    "tests/streaming/test_restart.py::test_a_failed_micro_batch_restarts": "a query's failure seen through Connect",
    "tests/streaming/test_restart.py::test_a_stalled_micro_batch": "a stalled query cancelled through Connect",
    "tests/streaming/test_table_source.py::test_a_table_backlog_then_rows_inserted_during_and_after_the_switch_and_while_stopped[aggregate]":
        "the fw_table Python data source registered with the server",
    "tests/streaming/test_two_inputs.py::test_a_folder_joined_with_a_table":
        "two Python data sources under Connect, and a table's position through a restart",
    "tests/streaming/test_warm_start.py::test_the_query_starts_during_the_backlog_and_reads_fresh_files_only_after_the_handover[aggregate]":
        "a query held while the backlog runs, under Connect",
}


def connect_case(nodeid: str) -> str | None:
    """The entry of ``CONNECT_CASES`` that names ``nodeid``, or None."""
    return next((entry for entry in CONNECT_CASES if nodeid == entry or nodeid.startswith(entry)), None)
