"""Solutions of the tutorials' exercises, kept out of the notebooks.

The notebooks ship each exercise's answer cell blank (tagged ``exercise``, holding a ``...``
placeholder; the ``exercise-check`` cell after it prints a hint while it is blank).
tests/test_tutorials.py puts these solutions into the answer cells before executing a
notebook, and checks that its check cell then says "Correct!".

notebook stem -> cell tag -> the code that replaces the cell.
"""

SOLUTIONS = {
    "06_backlog_then_stream": {
        "exercise": '''\
class Spread(fw.AggregateFunction):
    schema = "low long, high long"

    def create_accumulator(self):
        return [None, None]

    def add(self, value, accumulator):
        low, high = accumulator
        return [value.reading if low is None else min(low, value.reading),
                value.reading if high is None else max(high, value.reading)]

    def get_result(self, accumulator):
        return tuple(accumulator)

    def merge(self, a, b):
        return [min(x for x in (a[0], b[0]) if x is not None), max(x for x in (a[1], b[1]) if x is not None)]
''',
    },
}
