"""A PostgreSQL table as ``fw.from_table`` reads it, through psycopg (no Spark here): a connection, the
table's columns and types, and the bounds of its ordering column. psycopg is imported on first use; a
missing one is one line that says how to install it."""

from __future__ import annotations

import os
import re
from urllib.parse import parse_qsl, urlsplit

from ...errors import FullWindowError

#: libpq parameters that hold a credential, or name where one is kept: a url is recorded in the job's log,
#: its savepoints, its graph and its error lines, so a url with one of them is refused, and never repeated.
SECRETS = ("password", "sslpassword", "passfile")
#: The variables through which libpq finds a credential by itself (``~/.pgpass`` is read at every connection).
CREDENTIAL_VARIABLES = ("PGPASSWORD", "PGPASSFILE")
_KEY_VALUE_SECRET = re.compile(r"(?i)\b(" + "|".join(SECRETS) + r")\s*=\s*('(?:\\.|[^'])*'|\S*)")
_USER_INFO_SECRET = re.compile(r"(//[^/@:]*):[^/@]*@")
HOW = ("put the password in ~/.pgpass (or the file PGPASSFILE names), or set PGPASSWORD before Spark starts, "
       "and leave it out of the url")

#: PostgreSQL types each Spark type is read from (``format_type`` names; arrays and others are refused).
ACCEPTED_TYPES = {
    "long": ("bigint", "integer", "smallint"), "integer": ("integer", "smallint"), "short": ("smallint",),
    "double": ("double precision", "real", "bigint", "integer", "smallint", "numeric"), "float": ("real",),
    "string": ("text", "character varying", "character", "name", "uuid"), "boolean": ("boolean",),
    "timestamp": ("timestamp without time zone", "timestamp with time zone"),
    "timestamp_ntz": ("timestamp without time zone",), "date": ("date",),
    "decimal": ("numeric",),
}


#: How long a connection may take to be made (libpq's ``connect_timeout``; its default waits for ever). 10 s was
#: missed on loopback by a 2-core machine at load 38 (a tutorial's worker failed, and its restart strategy ran it
#: again): a slow connection is not a failure; a server that is down refuses at once.
CONNECT_TIMEOUT_S = 30


def psycopg():
    try:
        import psycopg
    except ImportError:
        raise FullWindowError("fw.from_table needs psycopg: pip install 'psycopg[binary]' "
                              "(or pip install 'fw-magics[postgres]')") from None
    return psycopg


def redacted(text: str) -> str:
    """``text`` (a url or a libpq key=value string) with every credential in it replaced by ``***``."""
    text = _USER_INFO_SECRET.sub(r"\1:***@", text)
    text = _KEY_VALUE_SECRET.sub(lambda m: f"{m.group(1)}=***", text)
    return text


def secret_in(url: str) -> str | None:
    """The credential parameter ``url`` holds ("password", "sslpassword", "passfile"), or None."""
    try:
        parts = urlsplit(url)
        if parts.password is not None:
            return "password"
        query = parse_qsl(parts.query, keep_blank_values=True)
    except ValueError:
        return "password" if _USER_INFO_SECRET.search(url) else None
    return next((key.lower() for key, _ in query if key.lower() in SECRETS), None)


def check_url(url, what: str = "from_table") -> str:
    """``url`` if it is a PostgreSQL URL without a credential in it; one line otherwise, which never repeats a
    credential (a key=value connection string is refused too, its secrets left out of the line)."""
    if not isinstance(url, str) or not url.startswith(("postgresql://", "postgres://")):
        shown = redacted(url) if isinstance(url, str) else url
        secret = isinstance(url, str) and _KEY_VALUE_SECRET.search(url) is not None
        raise FullWindowError(f"{what} url {shown!r:.80}; accepted: a PostgreSQL URL such as "
                              "'postgresql://user@localhost:5432/db'" + (f" ({HOW})" if secret else ""))
    secret = secret_in(url)
    if secret is not None:
        raise FullWindowError(f"{what}: the url holds a {secret}, which would be recorded in the job's log "
                              f"(not repeated here); {HOW}")
    return url


def check_workers_can_connect(url: str, what: str = "from_table") -> None:
    """One line when the credential variables changed since this process's JVM started and Spark's workers,
    which still see the old ones, could not log in with them (``fe_sendauth: no password supplied``)."""
    from ...spark.session import environment_at_jvm_start

    then = environment_at_jvm_start()
    changed = [] if then is None else [n for n in CREDENTIAL_VARIABLES if os.environ.get(n) != then.get(n)]
    if not changed:
        return
    settings = {"password": then.get("PGPASSWORD") or "",
                "passfile": then.get("PGPASSFILE") or os.path.expanduser("~/.pgpass")}
    try:
        psycopg().connect(url, connect_timeout=CONNECT_TIMEOUT_S, **settings).close()
    except Exception as error:  # as a worker would connect: the credential it cannot see is missing
        raise FullWindowError(
            f"{what}: {' and '.join(changed)} changed after Spark started in this process, and Spark's Python "
            f"workers, started with it, cannot log in without it ({failure(error)}); put the password in "
            "~/.pgpass, which every process reads when it connects, or set the variable before fw.get_spark() "
            "(restart the kernel)") from None


def connect(url: str):
    return psycopg().connect(url, connect_timeout=CONNECT_TIMEOUT_S)


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
