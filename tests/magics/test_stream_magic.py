"""%%fwstream: its grammar (pure), its one-line errors before anything runs, and its help, every
example of which runs on real files against the shared Spark session."""

from __future__ import annotations

import inspect
import os

import pytest
from IPython.core.error import UsageError

from fw_magics.magics import stream_grammar
from fw_magics.magics.stream_grammar import parse
from tests.magics.conftest import ok, run

HELP = inspect.cleandoc(__import__("fw_magics.magics.stream_magic", fromlist=["x"]).StreamMagics.fwstream.__doc__)


def examples() -> list[str]:
    section = HELP.split("\nExamples", 1)[1].split("\n", 1)[1]
    return [inspect.cleandoc(block) for block in section.split("\n\n") if block.strip()]


# -- the grammar (no Spark) ---------------------------------------------------------------------

@pytest.mark.parametrize("line", [
    "reduce fn=add key=sensor",
    "aggregate fn=Spread key=a,b --mode batch --job spread-1 -o s --show 0",
    'reduce fn="lambda a, b: a" key=k --mode stream --trigger available_now --max-files 1 --graph --no-wait',
    'reduce fn=add key=k --live --reset',
    'process fn=mod.Sessions key=k --trigger "5 seconds" --job-dir "my jobs" --in src;',
    'reduce fn=add key="home city",k --job totals --reset --trigger "1 minute 30 seconds"',
    'aggregate fn=Spread key=k --job at3 --parallelism 3 --from-savepoint saved',
    'process fn=Visits key=k --job v2 --from-savepoint saved --allow-non-restored-state',
    'co_process fn=Ledger key=k --key2 key,day --in orders,tiers',
    'interval_join fn=Pair key="home city" --between -600000,0 --job near',
])
def test_the_canonical_line_parses_to_the_same_command(line):
    command = parse(line)
    assert parse(str(command)) == command


def test_what_a_line_says():
    c = parse('aggregate fn=Spread key=a,b --mode batch --job j -o out --show 2 --trigger "1 second" --max-files 3')
    assert (c.operation, c.fn.text, c.key, c.mode, c.job, c.output, c.show) == (
        "aggregate", "Spread", ("a", "b"), "batch", "j", "out", 2)
    assert (c.trigger, c.max_files, c.wait, c.graph, c.silent) == ("1 second", 3, True, False, False)
    d = parse("reduce fn=add key=k")
    assert (d.mode, d.job, d.show, d.trigger, d.max_files) == ("mixed", None, stream_grammar.DEFAULT_SHOW, None, None)
    assert (d.parallelism, d.savepoint) == (None, None)
    e = parse("reduce fn=add key=k --from-savepoint saved --parallelism 1024")
    assert (e.savepoint, e.parallelism) == ("saved", 1024)
    f = parse("interval_join fn=Pair key=k --key2 customer --between=-600000,0 --in orders,tiers")
    assert (f.two_inputs, f.key2, f.between, f.input) == (True, ("customer",), (-600_000, 0), ("orders", "tiers"))
    assert parse("co_process fn=Ledger key=k").key2 is None and not d.two_inputs


@pytest.mark.parametrize("line, says", [
    ("", "needs an operation"),
    ("reduse fn=add key=k", "unknown operation 'reduse'; did you mean 'reduce'?"),
    ("reduce key=k", "reduce needs fn=FN"),
    ("reduce fn=add", "needs key=COL"),
    ("reduce fn=add key=k --mode mixd", "--mode 'mixd'; did you mean 'mixed'?"),
    ("reduce fn=add key=k --max-files 0", "--max-files takes a whole number of files per micro-batch, 1 or more"),
    ("reduce fn=add key=k --parallelism 0", "--parallelism takes a whole number of state partitions, 1 to 1024"),
    ("reduce fn=add key=k --parallelism 1025", "--parallelism takes a whole number of state partitions, 1 to 1024"),
    ("reduce fn=add key=k --parallelism 3 --parallelism 4", "--parallelism given twice"),
    ("reduce fn=add key=k --from-savepoint", "--from-savepoint needs a value: the name of a variable holding a"),
    ("reduce fn=add key=k --from-savepoint jobs/x", "--from-savepoint takes the name of a variable holding a "
                                                    "savepoint's path"),
    ("reduce fn=add key=k --from-savepont p", "unknown option '--from-savepont'; did you mean '--from-savepoint'?"),
    ("reduce fn=add key=k --trigger soon", "--trigger takes a processing-time interval"),
    ("reduce fn=add key=k --shwo 3", "unknown option '--shwo'; did you mean '--show'?"),
    ("reduce fn=add key=k -o 1x", "-o takes a Python variable name; got '1x'"),
    ("reduce fn=add key=k | aggregate fn=A", "'|' pipes are for %%fullwindow"),
    ('aggregate fn="lambda a: a" key=k', "a lambda cannot be an fw.AggregateFunction"),
    ("reduce fn=add fn=other key=k", "fn= given twice"),
    ("reduce fn=add key=k --job 'a b'", "--job takes a job name"),
    ("reduce fn=add key=k --graph --graph", "--graph given twice"),
    ("reduce fn=add key=k --reset=yes", "--reset takes no value; got '--reset=yes'"),
    ("reduce fn=add key=k --reset --reset", "--reset given twice"),
    ("reduce fn=add key=k --rest", "unknown option '--rest'; did you mean '--reset'?"),
    ("reduce fn=add key=k --job", "--job needs a value: a job name"),
    ("reduce fn=add key=k --job a.", "--job takes a job name"),
    ("reduce fn=add key=k --job ..", "--job takes a job name"),
    (f"reduce fn=add key=k --job {'j' * 201}", "--job takes a job name"),
    ("reduce fn=add key=k --show 1234567890123456789", "--show '1234567890123456789' has 19 digits"),
    ("interval_join fn=Pair key=k", "interval_join needs --between LOWER,UPPER"),
    ("interval_join fn=Pair key=k --between 5,1", "--between 5,1: the lower bound is above the upper"),
    ("interval_join fn=Pair key=k --between 5", "--between takes an interval join's bounds LOWER,UPPER"),
    ("interval_join fn=Pair key=k --between 1.5,2", "--between takes an interval join's bounds LOWER,UPPER"),
    ("co_process fn=Ledger key=k --between 0,5", "--between is for interval_join"),
    ("process fn=P key=k --key2 c", "--key2 is for an operation of two inputs (co_process, interval_join)"),
    ("co_process fn=Ledger key=k --in orders", "co_process takes two inputs, --in FIRST,SECOND"),
    ("reduce fn=add key=k --in a,b", "reduce takes one input, --in NAME"),
    ("reduce fn=add key=k --in a,b,c", "--in takes the name of a variable holding the input"),
    ("co_process fn=Ledger key=k --in a,1b", "--in takes the name of a variable holding the input"),
    ("co_prcess fn=Ledger key=k", "unknown operation 'co_prcess'; did you mean 'co_process'?"),
])
def test_a_bad_line_is_one_line_naming_the_culprit(line, says):
    with pytest.raises(UsageError) as caught:
        parse(line)
    message = str(caught.value)
    assert says in message and "\n" not in message


def test_reset_is_a_flag_and_reads_back():
    assert parse("reduce fn=add key=k").reset is False
    command = parse("reduce fn=add key=k --reset --job totals")
    assert command.reset is True and str(command) == "reduce fn=add key=k --job totals --reset"
    assert parse(str(command)) == command
    assert "--reset " in HELP  # the help says it


def test_allow_non_restored_state_is_a_flag_of_a_restore_only():
    command = parse("process fn=Visits key=k --from-savepoint saved --allow-non-restored-state")
    assert command.allow_non_restored_state is True and parse("reduce fn=add key=k").allow_non_restored_state is False
    assert "--allow-non-restored-state" in HELP
    with pytest.raises(UsageError) as caught:
        parse("process fn=Visits key=k --allow-non-restored-state")
    assert str(caught.value) == ("--allow-non-restored-state drops states a savepoint holds that FN no longer "
                                 "declares; accepted only with --from-savepoint NAME")


def test_option_values_follow_the_streaming_api():
    # the modes are phases.Mode's, the trigger what plan.Trigger takes, the job name what a job's folder takes
    from fw_magics.runtime.streaming.driver.phases import MODES
    from fw_magics.runtime.streaming.driver.plan import Trigger

    assert stream_grammar.MODES == MODES
    assert [parse(f"reduce fn=add key=k --mode {mode}").mode for mode in MODES] == list(MODES)
    for interval in ("200 milliseconds", "1 minute 30 seconds", "2 hours"):
        assert parse(f'reduce fn=add key=k --trigger "{interval}"').trigger == Trigger.of(interval).interval
    assert parse("reduce fn=add key=k --trigger available_now").trigger == "available_now"
    assert parse(f"reduce fn=add key=k --job {'j' * 200}").job == "j" * 200
    assert parse("reduce fn=add key=k --job totals-2.v_1").job == "totals-2.v_1"


@pytest.mark.parametrize("line", [
    "reduce fn=add key=k --" + "x" * 300,
    "y" * 300 + " fn=add key=k",
    "reduce fn=add key=k --mode " + "z" * 300,
    "reduce fn=add key=k -o 1" + "x" * 300,
    "reduce fn=add key=k --trigger " + "s" * 300,
    "reduce fn=add key=k --job " + "j" * 300,
    "reduce fn=add " + "u" * 300 + " key=k",
    'aggregate fn="lambda a: ' + "a + " * 100 + 'a" key=k',
    "reduce fn=add key=k --show " + "9" * 300,
    'reduce fn=add key="' + "q" * 300,
])
def test_a_long_token_is_cut_in_the_message(line):
    with pytest.raises(UsageError) as caught:
        parse(line)
    message = str(caught.value)
    listed = ", ".join(("key=COL", *stream_grammar.OPTIONS))  # the options a message may list: as long as they are
    assert "..." in message and len(message.replace(listed, "")) < 250 and "\n" not in message, message


# -- in a shell, on Spark ------------------------------------------------------------------------



@pytest.fixture
def readings(shell, tmp_path, monkeypatch, stop_queries):
    import datetime as dt

    import pyarrow as pa
    import pyarrow.parquet as pq

    source = tmp_path / "readings"
    source.mkdir()
    start = dt.datetime(2024, 1, 1, tzinfo=dt.timezone.utc)
    for f in range(2):
        rows = [(k, f * 10 + k, start + dt.timedelta(seconds=f * 60 + k)) for k in range(4)]
        table = pa.table({"sensor": pa.array([r[0] for r in rows], pa.int64()),
                          "reading": pa.array([r[1] for r in rows], pa.int64()),
                          "ts": pa.array([r[2] for r in rows], pa.timestamp("us", tz="UTC"))})
        pq.write_table(table, str(source / f".{f}.tmp"))
        os.replace(source / f".{f}.tmp", source / f"part-{f}.parquet")
    calibrations = tmp_path / "calibrations"  # one offset per sensor, 30 s after the first readings
    calibrations.mkdir()
    pq.write_table(pa.table({"sensor": pa.array(range(4), pa.int64()),
                             "offset": pa.array([100 * (k + 1) for k in range(4)], pa.int64()),
                             "ts": pa.array([start + dt.timedelta(seconds=30)] * 4, pa.timestamp("us", tz="UTC"))}),
                   str(calibrations / "part-0.parquet"))
    monkeypatch.setenv("FW_JOB_DIR", str(tmp_path / "jobs"))
    shell.user_ns["READINGS_DIR"], shell.user_ns["CALIBRATIONS_DIR"] = str(source), str(calibrations)
    spark = stop_queries
    before = spark.conf.get("spark.sql.shuffle.partitions")
    spark.conf.set("spark.sql.shuffle.partitions", "2")
    yield shell
    spark.conf.set("spark.sql.shuffle.partitions", before)
    for name in ("totals", "_fwstream"):
        job = shell.user_ns.pop(name, None)
        if job is not None:
            job.stop()


@pytest.fixture
def stop_queries(spark):
    yield spark
    for query in spark.streams.active:
        query.stop()


@pytest.mark.spark
def test_reset_reaches_start(shell, monkeypatch):
    # --reset is start(reset=True); without it, start(reset=False)
    from fw_magics.datastream.stateful import StatefulStream

    calls = []

    class Job:
        def stop(self):
            pass

    monkeypatch.setattr(StatefulStream, "start", lambda self, **options: calls.append(options) or Job())
    ok(shell, "records = fw.from_records([(1, 2)], 'a long, b long')\ndef add(a, b):\n    return a")
    try:
        ok(shell, "%fwstream reduce fn=add key=a --in records --job j --no-wait --reset;")
        ok(shell, "%%fwstream reduce fn=add key=a --job j --no-wait;\nrecords")
        ok(shell, "saved = 'jobs/j/savepoints/savepoint-000001'")
        ok(shell, "%fwstream reduce fn=add key=a --in records --job k --no-wait --from-savepoint saved --parallelism 3;")
        ok(shell, "%fwstream reduce fn=add key=a --in records --job m --no-wait --from-savepoint saved "
                  "--allow-non-restored-state;")
        for line, says in (("--from-savepoint nothere", "--from-savepoint nothere: no such variable"),
                           ("--from-savepoint records", "--from-savepoint records: a DataStream, not a savepoint's path")):
            result = run(shell, f"%fwstream reduce fn=add key=a --in records --job k --no-wait {line}")
            assert says in str(result.error_in_exec)
    finally:
        shell.user_ns.pop("_fwstream", None)
    assert [(c["job_name"], c["reset"]) for c in calls] == [("j", True), ("j", False), ("k", False), ("m", False)]
    assert [(c["from_savepoint"], c["parallelism"]) for c in calls] == [
        (None, None), (None, None), ("jobs/j/savepoints/savepoint-000001", 3), ("jobs/j/savepoints/savepoint-000001",
                                                                              None)]
    assert [c["allow_non_restored_state"] for c in calls] == [False, False, False, True]


@pytest.mark.spark
def test_the_help_shows_the_grammar(shell, capsys):
    ok(shell, "%fwstream?")
    shown = capsys.readouterr().out
    for word in (*stream_grammar.OPERATIONS, "key=COL", "--mode M", "-o NAME", "--job NAME", "--in NAME"):
        assert word in shown


@pytest.mark.extended  # make test-extended (CI): every example is a streaming job
@pytest.mark.spark
def test_every_example_in_the_help_runs(readings, capsys):
    shell = readings
    cells = examples()
    assert len(cells) >= 5 and all(c.startswith(("%", "import", "totals", "saved =")) for c in cells)
    ours = shell.user_ns.get("readings")
    try:
        for cell in cells:
            ok(shell, cell)
        shown = capsys.readouterr().out
        totals = shell.user_ns["totals"]
        assert totals.phase == "stopped" and totals is not shell.user_ns["_fwstream"]  # the last example stops it
        latest = totals.latest()
        assert list(latest["reading"]) == [10, 12, 14, 16]  # k + (10 + k) per sensor
        assert "streaming job 'totals': mode mixed, phase stream, switched at W = 2024-01-01 00:00:53.000 UTC" in shown
        assert "streaming job 'spread': mode batch, phase finished" in shown
        assert "streaming job 'top'" not in shown and "JobView of job 'top': phase " in shown  # --live: the view
        assert "1 more keys: job.latest()" in shown  # --show 3 of 4 sensors
        at3 = shell.user_ns["at3"]  # restored from the savepoint at 3: every sensor, nothing read again
        assert at3.phase == "stopped" and at3.parallelism == 3 and at3.restored_from == shell.user_ns["saved"]
        assert at3.latest().equals(latest)
        assert "streaming job 'totals-at-3': mode mixed, phase stream" in shown
        # two inputs: each reading with its sensor's offset as of its time; the pairs a minute apart
        calibrated = shell.user_ns["calibrated"].latest()
        assert list(calibrated["reading"]) == [10 + k + 100 * (k + 1) for k in range(4)]
        near = shell.user_ns["near"].latest()
        assert list(zip(near["reading"], near["offset"])) == [(10 + k, 100 * (k + 1)) for k in range(4)]
        assert "streaming job 'calibrated-batch': mode batch, phase finished" in shown
        assert shell.user_ns["_fwstream"].latest()["reading"].tolist() == [10, 11, 12, 13]  # the max per sensor
    finally:
        if ours is not None:
            shell.user_ns["readings"] = ours


@pytest.mark.extended  # 14 s: make test keeps the magic over files; test_table_source runs tables in make test
@pytest.mark.spark
def test_a_table_is_an_input_too(readings, postgres, capsys):
    """%%fwstream over fw.from_table: the table's rows are the backlog, then the job runs as over files."""
    import datetime as dt

    shell = readings
    name = "magic_readings"
    postgres.sql(f"DROP TABLE IF EXISTS {name}")
    postgres.sql(f"CREATE TABLE {name} (id bigserial PRIMARY KEY, sensor bigint, reading bigint, ts timestamptz)")
    start = dt.datetime(2024, 1, 1, tzinfo=dt.timezone.utc)
    postgres.sql(f"INSERT INTO {name} (sensor, reading, ts) VALUES (%s, %s, %s)",
                 [(k % 3, k, start + dt.timedelta(seconds=k)) for k in range(9)])
    shell.user_ns.update(URL=postgres.url, TABLE=name)
    try:
        ok(shell, "import fw_magics as fw\ndef add(a, b):\n    return (a.sensor, a.reading + b.reading, max(a.ts, b.ts))")
        ok(shell, "%%fwstream reduce fn=add key=sensor --job from-table --trigger available_now -o totals\n"
                  "fw.from_table(URL, TABLE, 'sensor long, reading long, ts timestamp', event_time='ts')")
        shown = capsys.readouterr().out
        assert "streaming job 'from-table': mode mixed, phase stopped" in shown
        assert shell.user_ns["totals"].latest()["reading"].tolist() == [0 + 3 + 6, 1 + 4 + 7, 2 + 5 + 8]
    finally:
        postgres.sql(f"DROP TABLE {name}")


@pytest.mark.extended
@pytest.mark.spark
def test_a_key_of_two_columns_keys_the_job_by_both(readings):
    """key=a,b reaches key_by as one list of columns (it was passed as two arguments once: a TypeError)."""
    shell = readings
    ok(shell, "import fw_magics as fw\nreadings = fw.from_files(READINGS_DIR, 'parquet', "
              "'sensor long, reading long, ts timestamp', event_time='ts')\ndef add(a, b):\n    return a")
    ok(shell, "%fwstream reduce fn=add key=sensor,reading --in readings --mode batch --job two-columns -o both --show 0")
    latest = shell.user_ns["both"].latest()
    assert list(latest.columns[:2]) == ["sensor", "reading"] and len(latest) == 8  # every (sensor, reading) once


@pytest.mark.spark
def test_a_bad_input_or_name_is_one_line_and_starts_nothing(readings, spark):
    shell = readings
    ok(shell, "import fw_magics as fw\nnot_files = fw.from_records([(1, 2)], 'a long, b long')\n"
              "other = fw.from_records([(1, 2)], 'c long, b long')")
    result = run(shell, "%fwstream reduce fn=nope key=a --in not_files")
    assert isinstance(result.error_in_exec, UsageError) and "fn=nope: no 'nope' in the notebook" in str(result.error_in_exec)
    ok(shell, "def add(a, b):\n    return a")
    result = run(shell, "%fwstream reduce fn=add key=a --in not_files")
    assert isinstance(result.error_in_exec, UsageError) and "\n" not in str(result.error_in_exec)
    result = run(shell, "%fwstream reduce fn=add key=a --in nothere")
    assert "--in nothere: no such variable" in str(result.error_in_exec)
    result = run(shell, "%%fwstream reduce fn=add key=a\nx = not_files")
    assert "the %%fwstream cell must end with an expression giving the input" in str(result.error_in_exec)
    for cell, says in (("%%fwstream co_process fn=add key=a\nnot_files", "co_process needs the two inputs, FIRST, "
                        "SECOND: DataStreams over files (fw.from_files(...)) or tables (fw.from_table(...)); got "
                        "DataStream"),
                       ("%%fwstream interval_join fn=add key=a --between 0,1\nnot_files, 3", "got DataStream, int"),
                       ("%fwstream co_process fn=add key=a --in not_files,nothere", "--in nothere: no such variable"),
                       ("%fwstream co_process fn=add key=a --in not_files,other", "the second input: no column 'a'"),
                       ("%fwstream co_process fn=add key=a --in not_files,other", "name its key columns with --key2 COL[,COL...]")):
        result = run(shell, cell)
        assert isinstance(result.error_in_exec, UsageError) and says in str(result.error_in_exec), result.error_in_exec
        assert "\n" not in str(result.error_in_exec)
    assert not spark.streams.active and "_fwstream" not in shell.user_ns
