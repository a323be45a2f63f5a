'''The tutorials' exercise solutions, which the tutorials ship without (issue 17, item 8).

``SOLUTIONS[notebook stem][cell tag]`` is the whole source of the tagged cell. A tutorial ships
each "your answer" cell blank: tagged ``exercise`` (``exercise-2``, ... for more), its names bound
to ``...``; the ``check`` cell after it prints a hint while they are ``...`` and asserts once they
are filled in. tests/test_tutorials.py puts these sources into the cells before running a
tutorial and checks that every check cell says "Correct!". See tutorials/README.md.
'''

SOLUTIONS = {
    "00_quickstart": {
        "exercise": (
            '%%fullwindow reduce fn="lambda a, b: a if a.price >= b.price else b" key=customer -o most_expensive\n'
            "orders"
        ),
    },
    "01_full_window_partition": {
        "exercise": (
            "def colder(a, b):\n"
            "    if a.temp is None:\n"
            "        return b\n"
            "    if b.temp is None:\n"
            "        return a\n"
            "    return a if a.temp <= b.temp else b\n"
            "\n"
            "coldest_ids = [p[0].id for p in window.reduce(colder).collect_partitions()]\n"
            "coldest_ids"
        ),
    },
    "02_operator_attributes": {
        "exercise": 'blocking_edges = {("enrich", "join")}\nregion_count = 4',
    },
    "03_failover_regions": {
        "exercise": "answer = 10",
    },
    "04_job_recovery": {
        "exercise": (
            'reduce_op = [op for op, _ in result.recovered | result.ran if op.startswith("reduce")][0]\n'
            "answer = {(reduce_op, 1)}"
        ),
    },
    "05_reading_the_graph": {
        "exercise": "answer = 4",
    },
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
    "07_rescaling_state": {
        "exercise": (
            'partitions = [{"partitions": ["KP1", "KP2"]}, {"partitions": ["KP3"]}, '
            '{"partitions": ["KP4", "KP5", "KP6", "KP7"]}]\n'
            'answer = ["KP5", "KP6", "KP7"]'
        ),
    },
    "08_database_backlog": {
        "exercise": "def biggest(a, b):\n    return a if a.amount >= b.amount else b",
        "exercise-2": "lower = -600_000\nupper = 0",
    },
    "09_table_changes": {
        "exercise": (
            "def big(change, count):\n"
            "    if change.amount <= 100:\n"
            "        return count\n"
            "    return count + SIGN[change.op]"
        ),
    },
}

#: Wrong answers a learner might try first: the test runs each (with its check, which must say
#: "not quite") before the right one, in the same kernel, and the right one must then pass. For
#: tutorial 6 this is the case the job log's content fingerprint is about: the same job name
#: started again with changed code (the check cell starts it with reset=True).
WRONG = {
    "06_backlog_then_stream": {
        "exercise": '''\
class Spread(fw.AggregateFunction):  # swapped: the highest reading as low, the lowest as high
    schema = "low long, high long"

    def create_accumulator(self):
        return [None, None]

    def add(self, value, accumulator):
        low, high = accumulator
        return [value.reading if low is None else max(low, value.reading),
                value.reading if high is None else min(high, value.reading)]

    def get_result(self, accumulator):
        return tuple(accumulator)
''',
    },
    "07_rescaling_state": {  # a learner's first guess: the partitions old subtask 2 read first
        "exercise": (
            'partitions = [{"partitions": ["KP1", "KP2"]}, {"partitions": ["KP3"]}, '
            '{"partitions": ["KP4", "KP5", "KP6", "KP7"]}]\n'
            'answer = ["KP4"]'
        ),
    },
    "08_database_backlog": {
        "exercise": "def biggest(a, b):  # the smaller one\n    return a if a.amount <= b.amount else b",
        "exercise-2": "lower = -600  # ten minutes in seconds: the bounds are milliseconds\nupper = 0",
    },
    "09_table_changes": {  # every change over 100 counted as one more: an update's old row and a delete too
        "exercise": "def big(change, count):\n    return count + 1 if change.amount > 100 else count",
    },
}

#: What a wrong answer's verdict must name (it says what differs, not only "not quite": issue 47, item 11).
WRONG_SAYS = {
    "06_backlog_then_stream": {"exercise": r"not quite: sensor \d+: got low=\d+, high=\d+; want low=\d+, high=\d+"},
    "08_database_backlog": {"exercise": r"not quite: customer 'c\d\d': got amount=[\d.]+; want amount=[\d.]+",
                            "exercise-2": r"not quite: between\(-600, 0\) found [\d,]+ \(order, change\) pairs; want "
                                          r"[\d,]+; off by 1,000x: the bounds are in milliseconds, so \(-600, 0\) is "
                                          r"-600 ms to 0 ms, not seconds"},
    "07_rescaling_state": {"exercise": r"not quite: got \['KP4'\] \(1 partition\), want 3 partitions; the first "
                                      r"difference is at position 0: got 'KP4', want 'KP5' \(count the units: .*\)"},
    "09_table_changes": {"exercise": r"not quite: customer 'c\d\d': got big=\d+; want big=\d+"},
}
