"""Build hook: the wheel carries what ``vocero serve`` needs outside the package's own tree.

``pip install vocero && vocero serve`` must work from a wheel (issue 31), so the demo's profiles,
catalogs, identities and fixture MCP servers (``fixtures/``) and the Alembic migrations
(``migrations/``) are copied into the wheel under ``vocero/_data/``, with the same relative
layout (a profile's ``../mcp_servers/...`` still resolves). A source checkout reads them in
place (``vocero.app.settings.shipped``); an editable install copies nothing.
"""

from __future__ import annotations

import shutil
from pathlib import Path

from setuptools import setup
from setuptools.command.build_py import build_py

SHIPPED = (
    "fixtures/profiles",
    "fixtures/mcp_servers",
    "fixtures/identities.yaml",
    "migrations",
)


class BuildPyWithData(build_py):
    def run(self) -> None:
        super().run()
        if getattr(self, "editable_mode", False):
            return
        target = Path(self.build_lib) / "vocero" / "_data"
        for name in SHIPPED:
            source = Path(name)
            if source.is_dir():
                shutil.copytree(source, target / name, dirs_exist_ok=True,
                                ignore=shutil.ignore_patterns("__pycache__", "*.pyc"))
            else:
                (target / name).parent.mkdir(parents=True, exist_ok=True)
                shutil.copy2(source, target / name)


setup(cmdclass={"build_py": BuildPyWithData})
