"""The kinds of streaming operator, one class each behind a declared base (``base.OperatorKind``), and the
registry that finds them by name.

=============  =========================================  ======================================
kind           built by                                   module
=============  =========================================  ======================================
reduce         ``key_by(...).reduce(fn)``                 :mod:`.reduce`
aggregate      ``key_by(...).aggregate(agg)``             :mod:`.aggregate`
process        ``key_by(...).process(fn)``                :mod:`.process`
co_process     ``connect``, ``interval_join``, broadcast  :mod:`.co_process`
operator       ``DataStream.process(fn)`` (non-keyed)     :mod:`.operator`
mirror         ``key_by(...).mirror()`` (a table's rows)  :mod:`.mirror`
=============  =========================================  ======================================

What the runtime is given to run one (its spec, the declared types) is :mod:`.spec`. The streaming
runtime, the savepoint format and the ``%%fwstream`` magic read a kind's attributes; none of them
compares its name. Importing this package registers one instance of each kind, in the order above.
"""

from .aggregate import Aggregate
from .base import KeyedKind, Operation, OperatorKind, kind_named, kinds, names, operations, register
from .co_process import CoProcess
from .mirror import Mirror
from .operator import Operator
from .process import Process
from .reduce import Reduce

#: One instance of each kind, registered in this order (the order the magic and messages list them): a new
#: kind is its class (one module) and a line here.
REDUCE = register(Reduce())
AGGREGATE = register(Aggregate())
PROCESS = register(Process())
CO_PROCESS = register(CoProcess())
OPERATOR = register(Operator())
MIRROR = register(Mirror())

__all__ = ["AGGREGATE", "CO_PROCESS", "MIRROR", "OPERATOR", "PROCESS", "REDUCE", "KeyedKind", "Operation", "OperatorKind",
           "kind_named", "kinds", "names", "operations", "register"]
