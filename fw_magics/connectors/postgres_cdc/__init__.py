"""A PostgreSQL table's snapshot, then its changes, as one source (``fw.from_table(..., changes=True)``): see ``source``."""
