"""Build hook: the wheel records the commit it was built from, for `cockpit --version`.

Everything else about the package is in pyproject.toml.
"""

import importlib.util
from pathlib import Path

from setuptools import setup
from setuptools.command.build_py import build_py

HERE = Path(__file__).resolve().parent
# cockpit/version.py alone: the package's __init__ needs dependencies the build does not have.
_spec = importlib.util.spec_from_file_location("cockpit_version", HERE / "cockpit" / "version.py")
_version = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(_version)


class BuildPyWithCommit(build_py):
    def run(self) -> None:
        super().run()
        found = _version.checkout_commit(HERE)
        if found and not self.editable_mode:
            (Path(self.build_lib) / "cockpit" / "COMMIT").write_text(found + "\n")


setup(cmdclass={"build_py": BuildPyWithCommit})
