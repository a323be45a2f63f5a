"""Stored state values as one Arrow array: ``codecs.encoder``'s inverse, a column at a time.

A keyed state of a declared type is stored in the JSON form of its Arrow type (``codecs.encoder``): an
integer, boolean or string as itself, a float as a number or ``"NaN"``/``"Infinity"``/``"-Infinity"``, a
decimal and a date as their text, a timestamp as epoch microseconds, a record as the list of its fields'
forms, a list as the list of its items'. ``stored_array`` turns a column of such forms back into the Arrow
array of the type, in C (pyarrow's converters and casts) but for a float column that holds a special value.
``storable`` says which types it takes; any other (binary, a map, a time, a duration) is not stored typed.
Pure pyarrow.
"""

from __future__ import annotations

import pyarrow as pa

_t = pa.types


def storable(arrow_type: pa.DataType) -> bool:
    """Whether ``stored_array`` takes ``arrow_type``."""
    if _t.is_struct(arrow_type):
        return all(storable(arrow_type.field(i).type) for i in range(arrow_type.num_fields))
    if _t.is_list(arrow_type):
        return storable(arrow_type.value_type)
    return any(test(arrow_type) for test in (_t.is_boolean, _t.is_integer, _t.is_string, _t.is_floating,
                                             _t.is_timestamp, _t.is_date32, _t.is_decimal))


def stored_array(forms: list, arrow_type: pa.DataType) -> pa.Array:
    """The Arrow array of ``arrow_type`` (``storable``) holding the values whose stored forms are ``forms``
    (None: null)."""
    if _t.is_struct(arrow_type):
        fields = [stored_array([None if form is None else form[i] for form in forms], arrow_type.field(i).type)
                  for i in range(arrow_type.num_fields)]
        return pa.StructArray.from_arrays(fields, fields=list(arrow_type), mask=_nulls(forms))
    if _t.is_list(arrow_type):
        offsets, items = [0], []
        for form in forms:
            if form is not None:
                items.extend(form)
            offsets.append(len(items))
        return pa.ListArray.from_arrays(pa.array(offsets, pa.int32()), stored_array(items, arrow_type.value_type),
                                        type=arrow_type, mask=_nulls(forms))
    if _t.is_timestamp(arrow_type):
        return pa.array(forms, pa.int64()).cast(arrow_type)
    if _t.is_date32(arrow_type) or _t.is_decimal(arrow_type):
        return pa.array(forms, pa.string()).cast(arrow_type)
    if _t.is_floating(arrow_type):
        try:
            return pa.array(forms, arrow_type)
        except (pa.ArrowInvalid, pa.ArrowTypeError):  # a special value's text among the numbers
            return pa.array([None if form is None else float(form) for form in forms], arrow_type)
    return pa.array(forms, arrow_type)


def _nulls(forms: list) -> pa.Array | None:
    """The null mask of ``forms``, or None when none is null."""
    if all(form is not None for form in forms):
        return None
    return pa.array([form is None for form in forms], pa.bool_())
