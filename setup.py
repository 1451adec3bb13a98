"""Build step: ship the workflow and its default inputs inside the package (hierbench/workflow/).

Everything else about the package is declared in pyproject.toml. The files stay where the
repository keeps them (Snakefile, rules/, workflow_scripts/, schemas/, resources/, ...); the
list is src/hierbench/shipped.py's WORKFLOW_FILES, and that module finds the copy in an
installed wheel or the checkout itself, so `hierbench run CONFIG` needs no clone.
"""

from __future__ import annotations

import runpy
from pathlib import Path

from setuptools import setup
from setuptools.command.build_py import build_py

ROOT = Path(__file__).resolve().parent
SHIPPED = runpy.run_path(str(ROOT / "src/hierbench/shipped.py"))


class BuildWithWorkflow(build_py):
    """build_py that also copies the workflow's files into hierbench/<WORKFLOW_FOLDER>/."""

    def run(self) -> None:
        super().run()
        if self.editable_mode:  # an editable install runs the checkout's workflow
            return
        target = Path(self.build_lib) / "hierbench" / SHIPPED["WORKFLOW_FOLDER"]
        for pattern in SHIPPED["WORKFLOW_FILES"]:
            for source in sorted(ROOT.glob(pattern)):
                if source.is_file():
                    destination = target / source.relative_to(ROOT)
                    self.mkpath(str(destination.parent))
                    self.copy_file(str(source), str(destination))


setup(cmdclass={"build_py": BuildWithWorkflow})
