"""Package discovery that pyproject.toml cannot express (the rest of the build is in pyproject.toml).

Every ``fw_magics*`` package under ``fw_magics/`` is found, so new subpackages need no edit;
the widget layer in ``widgets/`` is installed as ``fw_magics.widgets`` (``package-dir`` in
pyproject.toml), its front-end files as the data package ``fw_magics.widgets.static``.
"""

from setuptools import find_packages, setup

setup(packages=[*find_packages(include=["fw_magics", "fw_magics.*"]), "fw_magics.widgets", "fw_magics.widgets.static"])
