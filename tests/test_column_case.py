"""Spark's case rule for column names, wherever fw-magics takes one (issue 17, item 3). No Spark session.

Reference: Spark's resolver, ``equalsIgnoreCase`` unless ``spark.sql.caseSensitive``; a name
matching two columns is ambiguous (AMBIGUOUS_REFERENCE), a name matching none is an error
whose hint is the name equal but for case, when there is one.
"""

from __future__ import annotations

import re

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from pyspark.sql import types as T

from fw_magics.datastream.physical.planned import planned_partitions
from fw_magics.errors import FullWindowError, did_you_mean
from fw_magics.values.schema import resolve_field, resolve_path

NAMES = ["a", "A", "x", "X", "price", "Price", "qty", "s", "a.b"]


def schema_of(names, nested=("v", "V", "w")):
    fields = [T.StructField(n, T.LongType()) for n in names]
    if "s" in names:
        fields[names.index("s")] = T.StructField("s", T.StructType([T.StructField(n, T.StringType()) for n in nested]))
    return T.StructType(fields)


def reference(names, field, case_sensitive):
    same = [n for n in names if (n == field if case_sensitive else n.lower() == field.lower())]
    return same


@settings(max_examples=300, deadline=None)
@given(st.lists(st.sampled_from(NAMES), min_size=1, max_size=6, unique=True), st.sampled_from(NAMES + ["Y", "QTY"]),
       st.booleans())
def test_top_level_names_follow_sparks_rule(names, field, case_sensitive):
    schema = schema_of(names)
    found = reference(names, field, case_sensitive)
    if len(found) == 1:
        path, dtype = resolve_path(schema, field, case_sensitive=case_sensitive)
        assert path == found and dtype == schema[found[0]].dataType
        column, _ = resolve_field(schema, field, case_sensitive=case_sensitive)
        assert column == (found[0] if found[0] != "a.b" else "`a.b`")
    elif len(found) > 1:
        with pytest.raises(FullWindowError) as error:
            resolve_field(schema, field, case_sensitive=case_sensitive)
        assert "is ambiguous" in str(error.value) and all(repr(n) in str(error.value) for n in found)
    elif "." not in field:
        with pytest.raises(FullWindowError) as error:
            resolve_field(schema, field, case_sensitive=case_sensitive)
        message = str(error.value)
        assert message.startswith(f"no column {field!r}")
        same_but_case = [n for n in names if n.lower() == field.lower()]
        if same_but_case:  # only when case-sensitive: the hint is the name equal but for case
            assert f"(did you mean {same_but_case[0]!r}?)" in message


@pytest.mark.parametrize("field, case_sensitive, expected", [
    ("s.w", False, (["s", "w"], "`s`.`w`")), ("S.W", False, (["s", "w"], "`s`.`w`")),
    ("s.W", True, "no field 'W' in 's' (did you mean 'w'?)"),
    ("s.v", False, "field of 's' 'v' is ambiguous: it matches 'v' and 'V'"),
    ("s.v", True, (["s", "v"], "`s`.`v`")),
])
def test_nested_fields_follow_the_same_rule(field, case_sensitive, expected):
    schema = schema_of(["x", "s"])
    if isinstance(expected, str):
        with pytest.raises(FullWindowError, match=re.escape(expected)):
            resolve_field(schema, field, case_sensitive=case_sensitive)
    else:
        path, reference_ = expected
        assert resolve_path(schema, field, case_sensitive=case_sensitive)[0] == path
        assert resolve_field(schema, field, case_sensitive=case_sensitive)[0] == reference_.replace("`", "")


def test_suggestions_prefer_the_name_equal_but_for_case():
    assert did_you_mean("Y", ["yy", "y"]) == "; did you mean 'y'?"
    assert did_you_mean("PRICE", ["prize", "price"]) == "; did you mean 'price'?"


@pytest.mark.parametrize("plan, count", [
    ("Repartition 3, true\n+- Relation [x#42,y#43] csv", 3),
    ("Project [y#1L]\n+- Filter (y#1L > 1)\n   +- Repartition 3, true\n      +- Range (0, 100, step=1, splits=Some(5))", 3),
    ("RepartitionByExpression [y#1L], 4\n+- Range (0, 100, step=1, splits=Some(5))", 4),
    ("Sort [y#1L ASC NULLS FIRST], false\n+- Repartition 2, false\n   +- Range (0, 9, step=1, splits=Some(5))", 2),
    ("Project [id#0L]\n+- Range (0, 100, step=1, splits=Some(5))", 5),
    ("RepartitionByExpression [y#1L]\n+- Range (0, 100, step=1, splits=Some(5))", None),  # AQE decides
    ("Aggregate [y#1L], [y#1L, count(1) AS n#2L]\n+- Repartition 3, true\n   +- Range (0, 1, step=1, splits=Some(1))",
     None),
    ("Sort [y#1L ASC NULLS FIRST], true\n+- Repartition 3, true\n   +- Range (0, 1, step=1, splits=Some(1))", None),
    ("Union false, false\n:- Repartition 3, true\n:  +- Range (0, 1, step=1, splits=Some(1))\n"
     "+- Range (0, 1, step=1, splits=Some(1))", None),
    ("Relation [x#23,y#24] csv", None),
    ("", None),
])
def test_the_partition_count_a_plan_fixes(plan, count):
    assert planned_partitions(plan) == count
