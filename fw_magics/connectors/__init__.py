"""Sources with a backlog: the declared base (``base``), the registry of kinds (``registry``), and one
folder per kind: ``files/`` (a folder of files), ``postgres/`` (a PostgreSQL table), ``two_inputs/``
(two sources read as one, and the carrier of their watermarks). docs/architecture.md, "Add a source"."""
