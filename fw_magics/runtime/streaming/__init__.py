"""The streaming side of fw-magics: keyed operators over a source with a backlog (FLIP-327), and
operators with operator state (FLIP-8).

``fw.from_files(...).key_by(...).reduce/aggregate/process(...).start(mode=...)`` runs here
(``start.py``: the options, the job's log and its plan): the backlog as one sorted batch job
(``backlog``, ``backlog_run``), the switch with the backlog's state handed over one named way
(``handover``), then a Structured Streaming query with ``transformWithState`` (``query``) followed
by ``follower``, the changelog (``sink``), all driven by a :class:`~.job.StreamingJob` (``job``):
its phases (``phases``), its restarts, its savepoints (``savepoints``, ``savepoint_files``). The
per-key core (``processors``) is the same Python code in every mode.
"""
