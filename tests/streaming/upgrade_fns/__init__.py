"""Two versions of one keyed function (each module's ``Visits``), as a notebook changes it between a savepoint
and its restore: importable by Spark's workers (module level). The operator keeps its name, ``Visits``."""
