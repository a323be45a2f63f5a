"""What a user subclasses and touches: the functions, their contexts, the state they declare. No Spark.

PyFlink's ``datastream/functions.py`` and ``state.py`` are the model:

* :mod:`.function`: ``Function``, the base of every user function (``open``/``close``), and
  ``check_function``, the one check of a function handed to the API (it reads the methods each
  base marks ``@abc.abstractmethod``);
* :mod:`.functions` (``AggregateFunction``, ``Order``), :mod:`.process_function`
  (``ProcessFunction``), :mod:`.keyed_process` (``KeyedProcessFunction``), :mod:`.co_process`
  (``KeyedCoProcessFunction``, ``ProcessJoinFunction``, ``KeyedBroadcastProcessFunction``):
  what a user subclasses, each with the context its methods see;
* :mod:`.context`: the types of a keyed function's ``ctx`` and ``ctx.timer_service``;
* :mod:`.state`: one descriptor base (``ValueStateDescriptor``, ``ListStateDescriptor``) and
  one ``ValueState``/``ListState`` vocabulary, for keyed state and operator state alike;
* :mod:`.checkpointed`: ``CheckpointedFunction`` (operator state, FLIP-8) and its two contexts.

The runtime implements the contexts and states (``fw_magics.runtime.streaming.keyed.core``,
``fw_magics.state``); the operator kinds that run these functions are ``fw_magics.operators``.
Nothing is imported here: each module is imported where it is used (the facade, ``fw_magics``, takes
the public names from them).
"""
