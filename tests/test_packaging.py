"""What the wheel holds: every fw_magics package is discovered, the widget layer as fw_magics.widgets."""

import pathlib

from setuptools import find_packages

ROOT = pathlib.Path(__file__).resolve().parent.parent


def test_every_folder_of_python_code_in_the_package_is_a_discovered_package():
    # setup.py discovers regular packages only: a folder of modules without __init__.py
    # (fw_magics/state/, say) would silently be left out of the wheel.
    folders = {p.parent for p in (ROOT / "fw_magics").rglob("*.py")}
    names = {".".join(folder.relative_to(ROOT).parts) for folder in folders}
    assert names <= set(find_packages(str(ROOT), include=["fw_magics", "fw_magics.*"]))


def test_the_widget_layer_is_installed_under_fw_magics_with_its_front_end():
    import fw_magics.widgets

    assert pathlib.Path(fw_magics.widgets.__file__).resolve().parent == ROOT / "widgets"
    assert {p.name for p in (ROOT / "widgets" / "static").iterdir()} >= {"graph.js", "graph.css"}
    setup = (ROOT / "setup.py").read_text()
    assert '"fw_magics.widgets", "fw_magics.widgets.static"' in setup
