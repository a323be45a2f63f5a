"""A PostgreSQL table as ``fw.from_table`` reads it, through psycopg (no Spark here): a connection, the
table's columns and types, and the bounds of its ordering column. psycopg is imported on first use; a
missing one is one line that says how to install it."""

from __future__ import annotations

from .errors import FullWindowError

#: PostgreSQL types each Spark type is read from (``format_type`` names; arrays and others are refused).
ACCEPTED_TYPES = {
    "long": ("bigint", "integer", "smallint"), "integer": ("integer", "smallint"), "short": ("smallint",),
    "double": ("double precision", "real", "bigint", "integer", "smallint", "numeric"), "float": ("real",),
    "string": ("text", "character varying", "character", "name", "uuid"), "boolean": ("boolean",),
    "timestamp": ("timestamp without time zone", "timestamp with time zone"),
    "timestamp_ntz": ("timestamp without time zone",), "date": ("date",),
    "decimal": ("numeric",),
}


def psycopg():
    try:
        import psycopg
    except ImportError:
        raise FullWindowError("fw.from_table needs psycopg: pip install 'psycopg[binary]' "
                              "(or pip install 'fw-magics[postgres]')") from None
    return psycopg


def connect(url: str):
    return psycopg().connect(url, connect_timeout=10)


def failure(error: Exception) -> str:
    """The line of a psycopg error that says why: the server's own message ('relation "t" does not
    exist'), else the error's first line ('connection failed: ... Connection refused')."""
    diag = getattr(error, "diag", None)
    primary = getattr(diag, "message_primary", None) if diag is not None else None
    if primary:
        return primary
    return next((line.strip() for line in str(error).splitlines() if line.strip()), type(error).__name__)


def table_identifier(table: str):
    from psycopg import sql

    return sql.Identifier(*table.split("."))


def bounds(url: str, table: str, order_by: str, count: bool = False) -> tuple[int | None, int | None, int | None]:
    """The table's least and greatest ``order_by`` (an index makes both cheap) and, with ``count``, its
    number of rows (a scan: only at a job's first start), in one snapshot."""
    from psycopg import sql

    query = sql.SQL("SELECT min({o}), max({o}), " + ("count(*)" if count else "NULL") + " FROM {t}").format(
        o=sql.Identifier(order_by), t=table_identifier(table))
    with connect(url) as conn:
        low, high, count = conn.execute(query).fetchone()
    return low, high, count


def columns(url: str, table: str) -> dict[str, str]:
    """The table's columns and their PostgreSQL types (empty: no such table)."""
    schema, _, name = table.rpartition(".")
    query = ("SELECT a.attname, format_type(a.atttypid, a.atttypmod) FROM pg_attribute a "
             "JOIN pg_class c ON c.oid = a.attrelid JOIN pg_namespace n ON n.oid = c.relnamespace "
             "WHERE c.relname = %s AND a.attnum > 0 AND NOT a.attisdropped AND "
             + ("n.nspname = %s" if schema else "pg_table_is_visible(c.oid)") + " ORDER BY a.attnum")
    with connect(url) as conn:
        rows = conn.execute(query, (name, schema) if schema else (name,)).fetchall()
    return dict(rows)
