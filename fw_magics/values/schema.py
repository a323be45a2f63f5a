"""Schemas: parsing DDL, resolving a field reference, and the Arrow types Spark expects."""

from __future__ import annotations

from pyspark.sql import types as T

from ..errors import FullWindowError, did_you_mean

_HINT = " (did you mean {!r}?)"  # inside a sentence that goes on to list the columns


def parse_schema(schema, spark, what: str = "schema") -> T.StructType:
    """A StructType from a StructType or a DDL string ("id long, name string")."""
    if isinstance(schema, T.StructType):
        return schema
    if isinstance(schema, T.DataType):
        return T.StructType([T.StructField("value", schema)])
    if not isinstance(schema, str) or not schema.strip():
        raise FullWindowError(
            f"{what} must be a DDL string such as 'id long, name string' or a StructType; "
            f"got {type(schema).__name__} {schema!r}"
        )
    try:
        parsed = spark.createDataFrame([], schema).schema
    except Exception as error:  # Spark's ParseException / AnalysisException
        first = str(error).strip().splitlines()[0] if str(error).strip() else type(error).__name__
        raise FullWindowError(f"{what} {schema!r:.80} is not valid DDL: {first}") from None
    _refuse_duplicates(parsed.names, spark, f"{what} {schema!r:.80}")
    return parsed


def _refuse_duplicates(names: list[str], spark, where: str) -> None:
    """One line when two columns share a name (or differ only in case, unless Spark is case-sensitive)."""
    seen: dict[str, str] = {}
    for name in names:
        key = name.lower()
        if key in seen and (seen[key] == name or not _case_sensitive(spark)):
            also = "" if seen[key] == name else f" (also as {name!r})"
            raise FullWindowError(f"{where} names the column {seen[key]!r} twice{also}; accepted: distinct column names")
        seen.setdefault(key, name)


def _case_sensitive(spark) -> bool:
    try:
        return str(spark.conf.get("spark.sql.caseSensitive", "false")).lower() == "true"
    except Exception:  # a session that cannot say: Spark's default
        return False


def nullable(schema: T.StructType) -> T.StructType:
    """The same schema with every top-level field nullable (Python code may emit None)."""
    return T.StructType([T.StructField(f.name, f.dataType, True, f.metadata) for f in schema.fields])


def arrow_schema(schema: T.StructType):
    """The Arrow schema Spark reads back from ``mapInArrow`` / ``applyInArrow`` output."""
    from pyspark.sql.pandas.types import to_arrow_schema

    return to_arrow_schema(schema, timezone="UTC")


CASE_SENSITIVE = "spark.sql.caseSensitive"


def case_sensitive(spark) -> bool:
    """Whether ``spark`` matches column names case-sensitively (``spark.sql.caseSensitive``,
    false by default). One request under Spark Connect: read it once per stream, not per column."""
    try:
        return str(spark.conf.get(CASE_SENSITIVE, "false")).strip().lower() == "true"
    except Exception:  # a session that cannot say: Spark's default
        return False


def _matches(names, name: str, case_sensitive: bool) -> list[str]:
    """The names ``name`` refers to under Spark's rule (``equalsIgnoreCase`` unless case-sensitive)."""
    if case_sensitive:
        return [n for n in names if n == name]
    folded = name.lower()
    return list(dict.fromkeys(n for n in names if n.lower() == folded))


def _ambiguous(name: str, found: list[str], where: str) -> FullWindowError:
    return FullWindowError(
        f"{where} {name!r} is ambiguous: it matches {' and '.join(map(repr, found))}, and Spark compares "
        f"column names ignoring case (spark.sql.caseSensitive is false); rename one, or set it to true"
    )


def resolve_path(schema: T.StructType, field: str, what: str = "field",
                 case_sensitive: bool = False) -> tuple[list[str], T.DataType]:
    """The real names a column reference (``"price"``, nested ``"a.b"``) walks through, and its type.

    Names are matched as Spark matches them: ignoring case unless ``case_sensitive`` (the
    session's ``spark.sql.caseSensitive``); a name that matches two columns (``a`` and ``A``)
    is an error naming both, as Spark's AMBIGUOUS_REFERENCE. A top-level column whose name
    contains dots is found before nested fields are tried.
    """
    names = schema.names
    whole = _matches(names, field, case_sensitive)
    if len(whole) == 1:
        return [whole[0]], schema[whole[0]].dataType
    if len(whole) > 1:
        raise _ambiguous(field, whole, "column")
    parts = field.split(".")
    current: T.DataType = schema
    path: list[str] = []
    for part in parts:
        available = current.names if isinstance(current, T.StructType) else []
        found = _matches(available, part, case_sensitive)
        if len(found) > 1:
            raise _ambiguous(part, found, "column" if not path else f"field of {'.'.join(path)!r}")
        if not found:
            where = ".".join(path)
            if not path:
                raise FullWindowError(
                    f"no column {field!r}{did_you_mean(field, names, form=_HINT)}; columns are: {', '.join(names)}"
                )
            if not available:
                raise FullWindowError(
                    f"no field {field!r}: {where!r} is {current.simpleString()}, not a struct"
                )
            raise FullWindowError(
                f"no field {part!r} in {where!r}{did_you_mean(part, available, form=_HINT)}; "
                f"its fields are: {', '.join(available)}"
            )
        path.append(found[0])
        current = current[found[0]].dataType
    return path, current


def resolve_field(schema: T.StructType, field, what: str = "field", case_sensitive: bool = False) -> tuple[str, T.DataType]:
    """Resolve a 0-based position or a (possibly nested, "a.b") column name.

    Returns the column reference Spark understands (the real names, with backticks where a
    name needs them) and the field's data type. Names follow Spark's rule (``resolve_path``).
    """
    names = schema.names
    if isinstance(field, bool) or not isinstance(field, (int, str)):
        raise FullWindowError(
            f"{what} must be a 0-based position, a column name or a key-selector function; "
            f"got {type(field).__name__} {field!r}"
        )
    if isinstance(field, int):
        if not 0 <= field < len(names):
            raise FullWindowError(
                f"{what} position {field} is out of range; the schema has {len(names)} "
                f"columns (positions 0..{len(names) - 1}: {', '.join(names)})"
            )
        return _quote(names[field]), schema.fields[field].dataType
    path, dtype = resolve_path(schema, field, what, case_sensitive)
    if len(path) == 1:
        return _quote(path[0]), dtype
    return ".".join(_quote(p) for p in path), dtype


def _quote(name: str) -> str:
    return name if name.replace("_", "a").isalnum() else "`" + name.replace("`", "``") + "`"


def orderable(dtype: T.DataType) -> bool:
    """Whether Spark can sort by a column of this type."""
    if isinstance(dtype, (T.MapType, T.VariantType)):
        return False
    if isinstance(dtype, T.StructType):
        return all(orderable(f.dataType) for f in dtype.fields)
    if isinstance(dtype, T.ArrayType):
        return orderable(dtype.elementType)
    return True


def require_orderable(column: str, dtype: T.DataType) -> None:
    if not orderable(dtype):
        raise FullWindowError(
            f"cannot sort by {column!r} of type {dtype.simpleString()}: maps and variants have "
            "no order; sort by an atomic, struct or array column, or pass a key-selector function"
        )
