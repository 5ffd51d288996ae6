"""Build hook: the wheel carries the labs (``jtk labs --out DIR`` writes them), everything else is in pyproject.toml.

The labs stay where they are in the repository (``notebooks/``, ``exercises/`` and the CSVs they read; never
``solutions/``); ``jtk/course/labs.py`` lists them (``LAB_FILES``). setuptools' ``package-data`` only takes files inside a
package directory and ``data-files`` are not importable, so this ``build_py`` copies the listed files into
``build_lib/jtk/_labs/`` for a wheel, and names them as its source files so that an sdist carries them too. In an
editable install (``pip install -e .``) it copies nothing, as setuptools asks of build steps: jtk finds the labs in
the checkout there (``jtk.course.labs.labs_root``).
"""

import os
import runpy
import shutil

from setuptools import setup
from setuptools.command.build_py import build_py

HERE = os.path.dirname(os.path.abspath(__file__))
LABS = runpy.run_path(os.path.join(HERE, "jtk", "course", "labs.py"))  # standard library only: no jtk, no JAX at build time


class build_py_with_labs(build_py):
    def _target(self) -> str:
        return os.path.join(self.build_lib, "jtk", LABS["PACKAGE_DIR"])

    def _lab_mapping(self) -> dict:
        return {os.path.join(self._target(), *name.split("/")): name for name in LABS["lab_files"](HERE)}

    def run(self):
        super().run()
        if self.editable_mode:
            return
        shutil.rmtree(self._target(), ignore_errors=True)  # a file dropped from LAB_FILES must not linger in build/
        for dest, name in self._lab_mapping().items():
            os.makedirs(os.path.dirname(dest), exist_ok=True)
            shutil.copyfile(os.path.join(HERE, *name.split("/")), dest)

    def get_outputs(self, include_bytecode=1):
        labs = [] if self.editable_mode else list(self._lab_mapping())
        return super().get_outputs(include_bytecode) + labs

    def get_source_files(self):
        return super().get_source_files() + LABS["lab_files"](HERE)


setup(cmdclass={"build_py": build_py_with_labs})
