"""Rescalable operator state (FLIP-8): the redistribution of operator state to another parallelism.

Pure Python (layer 2, "pure models"): imports only :mod:`fw_magics.errors` and the
standard library, never Spark or Arrow.

::

    from fw_magics.state import redistribute
    old = [{"partitions": ["kp1", "kp2"]}, {"partitions": ["kp3", "kp4"]}]
    redistribute(old, 1, {"partitions": "split"})  # [{'partitions': ['kp1', 'kp2', 'kp3', 'kp4']}]
    redistribute(old, 4, {"partitions": "split"})  # one partition per subtask
"""

from .errors import StateError
from .repartition import MODES, assignment, redistribute

__all__ = ["MODES", "StateError", "assignment", "redistribute"]
