"""Build step: ship the repository's default inputs as package data (hierbench/data/).

Everything else about the package is declared in pyproject.toml. The files stay where the
pipeline's config points at them (resources/, schemas/); the list is src/hierbench/shipped.py's
SHIPPED_FILES, and that module finds them in an installed wheel or in the checkout.
"""

from __future__ import annotations

import runpy
from pathlib import Path

from setuptools import setup
from setuptools.command.build_py import build_py

ROOT = Path(__file__).resolve().parent
SHIPPED = runpy.run_path(str(ROOT / "src/hierbench/shipped.py"))


class BuildWithShippedFiles(build_py):
    """build_py that also copies each shipped file into hierbench/<DATA_FOLDER>/."""

    def run(self) -> None:
        super().run()
        if self.editable_mode:  # an editable install reads the files from the checkout
            return
        target = Path(self.build_lib) / "hierbench" / SHIPPED["DATA_FOLDER"]
        self.mkpath(str(target))
        for name, folder in SHIPPED["SHIPPED_FILES"].items():
            self.copy_file(str(ROOT / folder / name), str(target / name))


setup(cmdclass={"build_py": BuildWithShippedFiles})
