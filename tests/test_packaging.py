"""What the wheel holds: every fw_magics package is discovered, the widget layer as fw_magics.widgets."""

import pathlib

import pytest
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


def packages_of_setup_py(monkeypatch) -> list[str]:
    """The ``packages`` setup.py passes to setuptools (setup.py run with ``setup`` captured)."""
    import runpy

    import setuptools

    captured = {}
    monkeypatch.setattr(setuptools, "setup", lambda **kwargs: captured.update(kwargs))
    monkeypatch.chdir(ROOT)
    runpy.run_path(str(ROOT / "setup.py"))
    return captured["packages"]


def test_every_package_data_file_sits_in_a_listed_package(monkeypatch):
    # setuptools' rule behind its 40-line "Package 'fw_magics.widgets.static' is absent from the
    # `packages` configuration" warning at install: a data file whose folder is not a listed package
    # is installed only as a deprecated fallback. Checked here as setuptools checks it.
    tomllib = pytest.importorskip("tomllib")
    config = tomllib.loads((ROOT / "pyproject.toml").read_text())["tool"]["setuptools"]
    package_dir = config.get("package-dir", {})
    packages = set(packages_of_setup_py(monkeypatch))

    def folder_of(package: str) -> pathlib.Path:
        mapped = max((p for p in package_dir if package == p or package.startswith(p + ".")), key=len, default=None)
        if mapped is None:
            return ROOT.joinpath(*package.split("."))
        return ROOT / package_dir[mapped] / pathlib.Path(*package[len(mapped):].split(".")[1:])

    assert all(folder_of(p).is_dir() for p in packages), sorted(p for p in packages if not folder_of(p).is_dir())
    shipped = set()
    for package, patterns in config["package-data"].items():
        assert package in packages, f"package-data for {package!r}, which is not a listed package"
        for pattern in patterns:
            for path in folder_of(package).glob(pattern):
                relative = path.parent.relative_to(folder_of(package)).parts
                owner = ".".join([package, *relative])
                assert owner in packages, f"{path.relative_to(ROOT)} is data of {owner!r}, absent from packages"
                shipped.add(path.relative_to(ROOT).as_posix())
    assert {"widgets/static/graph.js", "widgets/static/graph.css", "fw_magics/spark/log4j2.properties"} <= shipped
