"""land_file and scratch_folders: a file appears whole under its name; the folders go with the process."""

import datetime as dt
import os
import subprocess
import sys

import pandas as pd
import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from fw_magics.teaching import land_file, scratch_folders  # scratch_folders: leftovers.py


@pytest.mark.parametrize("kind", ["pandas", "arrow", "dict"])
def test_land_file_writes_the_rows_whole_under_the_name(tmp_path, kind):
    when = [dt.datetime(2024, 1, 1, 0, 0, s, 123456, tzinfo=dt.timezone.utc) for s in range(3)]
    columns = {"id": [1, 2, 3], "amount": [1.5, 3.0, 4.5], "ts": when}
    data = {"pandas": pd.DataFrame(columns), "arrow": pa.table(columns), "dict": columns}[kind]
    path = land_file(str(tmp_path), "day-1.parquet", data)
    assert path == str(tmp_path / "day-1.parquet")
    assert os.listdir(tmp_path) == ["day-1.parquet"]  # the hidden name was renamed, nothing else left
    table = pq.read_table(path)
    assert table.column("id").to_pylist() == [1, 2, 3]
    assert table.column("amount").to_pylist() == [1.5, 3.0, 4.5]
    assert table.schema.field("ts").type.unit == "us"  # Spark's precision
    assert table.column("ts").to_pylist() == when


def test_land_file_refuses_a_hidden_name_and_an_unknown_kind_of_data(tmp_path):
    with pytest.raises(ValueError, match=r"file name '.x.parquet'; accepted: a plain name"):
        land_file(str(tmp_path), ".x.parquet", {"a": [1]})
    with pytest.raises(TypeError, match=r"land_file data of type list; accepted: a pandas DataFrame"):
        land_file(str(tmp_path), "x.parquet", [(1, 2)])
    assert os.listdir(tmp_path) == []


def test_scratch_folders_are_made_and_removed_when_the_process_ends():
    code = ("from fw_magics.teaching import scratch_folders\n"
            "work = scratch_folders('fw-test-scratch-', 'readings', 'jobs')\n"
            "open(work.readings + '/x', 'w').close()\n"
            "print(work.root, work.readings, work.jobs, sep='\\n')\n")
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    root, readings, jobs = done.stdout.split()
    assert (readings, jobs) == (os.path.join(root, "readings"), os.path.join(root, "jobs"))
    assert not os.path.exists(root)  # gone with the process


def test_scratch_folders_names_are_identifiers():
    with pytest.raises(ValueError, match=r"folder name 'my data'; accepted: a Python identifier"):
        scratch_folders("fw-test-", "my data")
