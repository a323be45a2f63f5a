"""A user's own module written beside a "notebook" (a temp folder only the driver's sys.path has)."""

from __future__ import annotations

import importlib
import sys
import uuid

SOURCE = '''
import fw_magics as fw

FACTOR = 10


def scaled(records):
    for r in records:
        yield (r.k, r.v * FACTOR)


class Total(fw.AggregateFunction):
    schema = "n long, total double"

    def create_accumulator(self):
        return [0, 0.0]

    def add(self, record, acc):
        acc[0] += 1
        acc[1] += record.v * FACTOR
        return acc

    def merge(self, a, b):
        return [a[0] + b[0], a[1] + b[1]]

    def get_result(self, acc):
        return (acc[0], acc[1])
'''


def write_and_import(folder):
    """Write the module into ``folder``, import it with only the driver's sys.path knowing it."""
    name = f"notebook_udfs_{uuid.uuid4().hex[:8]}"
    (folder / f"{name}.py").write_text(SOURCE)
    sys.path.insert(0, str(folder))
    try:
        return importlib.import_module(name)
    finally:
        sys.path.remove(str(folder))
