"""A PostgreSQL table as a source (``fw.from_table``): see ``source``."""
