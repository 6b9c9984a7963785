"""`pip install .` installs the project as a package: ``hooks`` and ``podread`` with every
subpackage, the runtime dependencies of requirements.txt and the ``nvcre-hooks`` command, so podread and
the CLI import from anywhere, not only from the repository root.

No wheel is built here: setuptools' own reader of ``pyproject.toml`` (``read_configuration``, what its
build backend runs) expands the configuration, and the packages it finds are compared with the package
directories on disk. tests/contract/test_docs_commands.py runs the README's ``pip install .`` for real
(build isolation, the backend from the package index) and the installed commands from another folder.
"""

from __future__ import annotations

import tomllib
import warnings
from pathlib import Path

from setuptools.config.pyprojecttoml import read_configuration

ROOT = Path(__file__).resolve().parents[2]


def configuration() -> dict:
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # setuptools calls [tool.setuptools] "beta"
        return read_configuration(ROOT / "pyproject.toml", expand=True)


def test_pyproject_names_a_build_backend_and_the_packages_hooks_and_podread() -> None:
    config = tomllib.loads((ROOT / "pyproject.toml").read_text())
    assert config["build-system"]["build-backend"] == "setuptools.build_meta"
    assert config["tool"]["setuptools"]["packages"]["find"]["include"] == ["hooks*", "podread*"]


def test_every_package_directory_is_installed_and_nothing_else() -> None:
    on_disk = sorted(
        ".".join(init.parent.relative_to(ROOT).parts)
        for top in ("hooks", "podread") for init in (ROOT / top).rglob("__init__.py")
        if ".venv" not in init.parts)
    assert {"hooks.core.rows", "hooks.server", "hooks.tools.record", "podread"} <= set(on_disk)
    assert sorted(configuration()["tool"]["setuptools"]["packages"]) == on_disk  # no tests, no bench


def test_the_dependencies_are_requirements_txt_and_the_cli_is_a_command() -> None:
    config = configuration()["project"]
    pinned = [line.strip() for line in (ROOT / "requirements.txt").read_text().splitlines()
              if line.strip() and not line.lstrip().startswith("#")]
    assert config["dependencies"] == pinned and "kubernetes==37.0.2" in pinned
    assert config["scripts"] == {"nvcre-hooks": "hooks.tools.cli:main",
                                 "kubectl-nvjob": "hooks.tools.nvjob.commands:main"}


def test_deploy_the_place_of_the_token_overlay_is_git_ignored() -> None:
    """docs/operations.md puts the site overlay with its token in deploy/: never committed."""
    assert "/deploy/" in (ROOT / ".gitignore").read_text().splitlines()
    assert "deploy/prod" in (ROOT / "docs" / "operations.md").read_text()
