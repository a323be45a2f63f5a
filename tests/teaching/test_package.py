"""Every teaching helper a tutorial imports from ``fw_magics.teaching`` resolves and is documented."""

import inspect

import pytest

import fw_magics.teaching as teaching


@pytest.mark.parametrize("name", teaching.__all__)
def test_each_helper_resolves_and_has_a_docstring(name):
    helper = getattr(teaching, name)
    assert inspect.getdoc(helper), f"fw_magics.teaching.{name} has no docstring"
    assert helper.__module__ == f"fw_magics.teaching.{teaching._LAZY[name]}"


def test_an_unknown_name_is_an_attribute_error():
    with pytest.raises(AttributeError, match=r"no attribute 'land_files'"):
        teaching.land_files  # noqa: B018
