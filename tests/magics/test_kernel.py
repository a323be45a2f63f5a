"""The magic in a real Jupyter kernel (ipykernel via nbclient): what a notebook user sees."""

import re

import pytest
from nbclient import NotebookClient
from nbformat.v4 import new_code_cell, new_notebook

pytestmark = pytest.mark.slow

CELLS = [
    "%load_ext fw_magics\nimport fw_magics as fw\n"
    "orders = fw.from_records([(1, 2.0), (2, 3.0), (3, 1.0)], 'id long, price double', partitions=2)",
    "%%fullwindow sort field=price desc\norders",
    "%%fullwindow sort field=price desc\norders;",
    "%%fullwindow sort field=prize\norders",
    "%%fullwindow map fn=shaky schema='x double'\ndef shaky(records):\n    for r in records:\n        yield (1 / (r.id - 2),)\norders",
    "%%fullwindow map fn=\"lambda rs: [(1 / (r.id - 2),) for r in rs]\" schema='x double'\norders",
]


def test_a_notebook_shows_previews_one_line_mistakes_and_user_tracebacks(tmp_path):
    nb = new_notebook(cells=[new_code_cell(source) for source in CELLS])
    client = NotebookClient(
        nb, timeout=600, kernel_name="python3", allow_errors=True, resources={"metadata": {"path": str(tmp_path)}}
    )
    client.execute()
    setup, shown, silenced, mistake, failing, failing_lambda = (cell.outputs for cell in nb.cells)
    assert [cell.execution_count for cell in nb.cells] == [1, 2, 3, 4, 5, 6]
    assert not any(o.output_type == "error" for o in setup)

    (result,) = shown
    assert result.output_type == "execute_result"
    assert "partition 1<br><small>2 records</small>" in result.data["text/html"]
    assert "partition 0 (1 record)" in result.data["text/plain"]

    assert silenced == []

    (usage,) = mistake
    assert usage.output_type == "stream" and usage.name == "stderr"
    assert usage.text.strip() == (
        "UsageError: no column 'prize' (did you mean 'price'?); columns are: id, price"
    )

    (error,) = failing
    assert error.output_type == "error" and error.ename == "PythonException"
    text = re.sub(r"\x1b\[[0-9;]*m", "", "\n".join(error.traceback))
    assert "in shaky" in text and "yield (1 / (r.id - 2),)" in text and "ZeroDivisionError" in text
    assert "fw_magics" not in text and "pyspark" not in text
    # the worker's frame is named the IPython way (the fifth cell), not by the file the kernel compiled it to
    assert "Cell In[5], line 3, in shaky" in text and "ipykernel_" not in text

    (error,) = failing_lambda  # a lambda in the magic's line is named after its cell too
    text = re.sub(r"\x1b\[[0-9;]*m", "", "\n".join(error.traceback))
    assert "Cell In[6], line 1, in <lambda>" in text and "ZeroDivisionError" in text, text
    assert "ipykernel_" not in text and "fw_magics" not in text
