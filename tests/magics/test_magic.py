"""%%fullwindow and %fullwindow through a real IPython InteractiveShell (run_cell)."""

import re

import pandas as pd
import pytest
from IPython.core.error import UsageError

import fw_magics as fw
from tests.magics.conftest import Jobs, ok, run

pytestmark = [pytest.mark.spark, pytest.mark.core]


def partitions(stream):
    return [[tuple(r) for r in p] for p in stream.collect_partitions()]


def test_the_cell_value_is_the_resulting_stream(shell, capsys):
    value = ok(shell, "%%fullwindow sort field=price desc\norders")
    assert isinstance(value, fw.DataStream)
    assert shell.user_ns["_"] is value
    assert partitions(value) == [
        [(1, "ada", 4.5, 2)], [(3, "ada", 5.25, 4), (2, "grace", 3.0, 1)], [(5, "grace", 9.0, 1), (4, "linus", 2.75, 3)],
    ]
    shown = capsys.readouterr().out
    assert "3 partitions, 5 records" in shown and "partition 0 (1 record)" in shown


def test_output_name_and_semicolon(shell, spark):
    jobs = Jobs(spark)
    before = shell.user_ns.get("_")
    assert ok(shell, "%%fullwindow reduce fn=\"lambda a, b: a if a.qty >= b.qty else b\" -o best\norders;") is None
    assert jobs.ran in (0, None), "a silenced cell previews nothing"
    assert shell.user_ns.get("_") is before
    assert partitions(shell.user_ns["best"]) == [[(1, "ada", 4.5, 2)], [(3, "ada", 5.25, 4)], [(4, "linus", 2.75, 3)]]
    # the line form is silenced by a trailing ';' too, and -o binds the same stream it returns
    assert ok(shell, "%fullwindow sort field=0 --in orders -o again;") is None
    assert ok(shell, "%fullwindow sort field=0 --in orders -o again") is shell.user_ns["again"]


def test_line_form_takes_its_input_from_a_variable(shell):
    value = ok(shell, "%fullwindow aggregate sum(qty) count() --in orders key=customer")
    rows = sorted(tuple(r) for r in value.collect())
    assert rows == [("ada", 6, 2), ("grace", 2, 2), ("linus", 3, 1)]


@pytest.mark.parametrize("make, expected", [
    ("spark.createDataFrame(ORDERS, ORDERS_SCHEMA).coalesce(1)", [[(2, "grace", 3.0, 1), (5, "grace", 9.0, 1)]]),
    ("pd.DataFrame(ORDERS, columns=['id', 'customer', 'price', 'qty'])", None),
])
def test_spark_and_pandas_dataframes_are_inputs(shell, spark, make, expected):
    shell.user_ns.update(spark=spark, pd=pd)
    value = ok(shell, f"%%fullwindow sort field=price | map fn=graces\ndef graces(rs):\n    return (r for r in rs if r.customer == 'grace')\n{make}")
    if expected is None:  # pandas: fw.from_pandas' 4 contiguous chunks
        expected = [[], [(2, "grace", 3, 1)], [], [(5, "grace", 9.0, 1)]]
    assert partitions(value) == expected


def usage_error(shell, spark, source, *fragments):
    """Run a cell that must fail with one UsageError line, starting no Spark job."""
    jobs = Jobs(spark)
    result = run(shell, source)
    error = result.error_in_exec
    assert isinstance(error, UsageError), repr(error)
    message = str(error)
    assert "\n" not in message
    for fragment in fragments:
        assert fragment in message, message
    assert jobs.ran in (0, None), "a Spark job ran for a usage error"
    return message


@pytest.mark.parametrize("source, fragments", [
    ("%%fullwindow sortt field=price\norders", ["unknown operation 'sortt'; did you mean 'sort'?"]),
    ("%%fullwindow sort field=prize\norders", ["no column 'prize'", "did you mean 'price'?", "columns are: id, customer, price, qty"]),
    ("%%fullwindow sort field=7\norders", ["position 7 is out of range"]),
    ("%%fullwindow map fn=tpo3\ndef top3(rs):\n    return rs\norders", ["fn=tpo3: no 'tpo3' in the notebook; did you mean 'top3'?"]),
    ("%%fullwindow map fn=fw.Orderr\norders", ["'fw' has no attribute 'Orderr'; did you mean 'Order'?"]),
    ("%%fullwindow map fn=ORDERS_SCHEMA\norders", ["map_partition takes a function; got str"]),
    ("%%fullwindow map fn=len schema='id lung'\norders", ["schema 'id lung' is not valid DDL"]),
    ("%%fullwindow aggregate fn=len\norders", ["aggregate takes an fw.AggregateFunction"]),
    ("%%fullwindow aggregate sum(prize)\norders", ["no column 'prize'"]),
    ("%%fullwindow aggregate sum(qty, price)\norders", ["sum(qty, price): sum takes (col); got 2 argument(s)"]),
    ("%%fullwindow aggregate sum(*)\norders", ["argument 'col' takes a column name; got '*'"]),
    ("%%fullwindow aggregate percentile_approx(price, half)\norders", ["argument 'percentage' takes a number or true/false"]),
    ("%%fullwindow sort field=price key=custmer\norders", ["no column 'custmer'"]),
    ("%%fullwindow sort field=price\n[1, 2]", ["the cell's last expression ([1, 2]) is a list, not a Spark DataFrame"]),
    ("%%fullwindow sort field=price\nx = orders", ["must end with an expression giving the input"]),
    ("%%fullwindow sort field=price --in orders\norders", ["--in orders is for the line form"]),
    ("%fullwindow sort field=price", ["%fullwindow needs --in NAME"]),
    ("%fullwindow sort field=price --in ordrs", ["--in ordrs: no such variable; did you mean 'orders'?"]),
])
def test_mistakes_are_one_line_and_run_nothing(shell, spark, source, fragments):
    usage_error(shell, spark, source, *fragments)


def test_a_bad_line_does_not_run_the_cell_body(shell, spark):
    shell.user_ns["touched"] = False
    usage_error(shell, spark, "%%fullwindow sort field=price dsc\ntouched = True\norders", "did you mean 'desc'?")
    assert shell.user_ns["touched"] is False


def test_records_that_do_not_fit_the_schema_are_one_line(shell):
    result = run(shell, "%%fullwindow map fn=\"lambda rs: [('many',)]\" schema='n long'\norders")
    assert isinstance(result.error_in_exec, UsageError)
    assert "does not fit column 'n': expected bigint, got str 'many'" in str(result.error_in_exec)


def rendered(result) -> str:
    """The traceback IPython shows for a failed cell, without colours."""
    error = result.error_in_exec
    assert error is not None and not isinstance(error, UsageError)
    return re.sub(r"\x1b\[[0-9;]*m", "", "\n".join(error._render_traceback_()))


def test_an_error_in_a_worker_shows_only_the_users_frames(shell):
    result = run(shell, "%%fullwindow map fn=shaky schema='x double'\ndef shaky(records):\n    for r in records:\n        yield (1 / (r.id - 3),)\norders")
    text = rendered(result)
    assert "in shaky" in text and "yield (1 / (r.id - 3),)" in text and "ZeroDivisionError: division by zero" in text
    assert "fw_magics" not in text and "pyspark" not in text and "SQLSTATE" not in text


def test_an_error_on_the_driver_shows_only_the_users_frames(shell):
    source = (
        "%%fullwindow aggregate fn=Broken\n"
        "class Broken(fw.AggregateFunction):\n"
        "    def create_accumulator(self):\n        return 0\n"
        "    def add(self, r, acc):\n        return acc\n"
        "    def get_result(self, acc):\n        return 1 / acc\n"
        "orders"
    )
    result = run(shell, source)
    assert isinstance(result.error_in_exec, ZeroDivisionError)
    text = rendered(result)
    assert "return 1 / acc" in text and "fw_magics" not in text and "IPython" not in text


def test_an_error_in_the_cell_body_keeps_its_traceback(shell):
    result = run(shell, "%%fullwindow sort field=price\nundefined_name + 1\norders")
    assert isinstance(result.error_in_exec, NameError)
    text = rendered(result)
    assert "undefined_name + 1" in text and "fw_magics" not in text


def test_explain_shows_python_pyspark_and_the_physical_plan(shell, capsys):
    ok(shell, "%%fullwindow sort field=2 desc | aggregate max(qty) key=customer --explain\norders;")
    shown = capsys.readouterr().out
    assert "%%fullwindow sort field=2 desc | aggregate max(qty) key=customer --explain\n" in shown
    assert "ds = ds.key_by('customer').full_window_partition().sort_partition(2, 'desc')" in shown
    assert "df = df.repartition(3, 'customer').sortWithinPartitions(F.col('customer').asc(), F.col('price').desc())" in shown
    assert "df = df.groupBy('customer').agg(F.max('qty')).repartition(3, F.struct('customer'))" in shown  # what runs (item 9)
    assert "== Physical Plan ==" in shown and "Exchange hashpartitioning(customer" in shown
    assert "hashpartitioning(struct(customer" in shown  # the struct the printed code hashes


def test_unload_and_load_again(shell):
    ok(shell, "%unload_ext fw_magics")
    assert "fullwindow" not in shell.magics_manager.magics["line"]
    assert "fullwindow" not in shell.magics_manager.magics["cell"]
    assert isinstance(run(shell, "%fullwindow sort field=0 --in orders -o again;").error_in_exec, UsageError)
    ok(shell, "%load_ext fw_magics")
    ok(shell, "%fullwindow sort field=0 --in orders -o again;")
    assert isinstance(shell.user_ns["again"], fw.DataStream)


def test_the_input_is_read_once_from_the_expression(shell):
    """The cell body runs once: its statements, then its last expression."""
    shell.user_ns["calls"] = 0
    ok(shell, "%%fullwindow sort field=0\ncalls += 1\ncalls += 10\norders;")
    assert shell.user_ns["calls"] == 11
