"""The package type-checks clean with mypy, configured by pyproject.toml's [tool.mypy].

mypy cannot follow the folders pyproject.toml maps (`kafka_mc.model -> model/`, ...), so the check
runs on a tree laid out as the installed package: `kafka_mc/` holds a symlink to each module of the
project's `kafka_mc/` folder and, for each subpackage, a symlink to its folder (subpackages of
subpackages, such as `kafka_mc.checker.kernel`, come with their parent's folder).
"""

from __future__ import annotations

import os
import subprocess
import sys
import tomllib
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
PYPROJECT = ROOT / "pyproject.toml"
PACKAGE = "kafka_mc"
MYPY_SECONDS = 600  # a cold run takes a few seconds; this only stops a hung one


def shadow_tree(where: Path) -> Path:
    """The package as installed, in symlinks under `where`; returns `where`."""
    folders = tomllib.loads(PYPROJECT.read_text(encoding="utf-8"))["tool"]["setuptools"]["package-dir"]
    package = where / PACKAGE
    package.mkdir(parents=True)
    for module in sorted((ROOT / folders[PACKAGE]).glob("*.py")):
        (package / module.name).symlink_to(module)
    for name, folder in sorted(folders.items()):
        parts = name.split(".")
        if len(parts) == 2:
            (package / parts[1]).symlink_to(ROOT / folder, target_is_directory=True)
        elif len(parts) > 2:  # inside its parent's folder, so its parent's symlink brings it
            parent = folders[".".join(parts[:-1])]
            assert Path(folder) == Path(parent) / parts[-1], \
                f"{name} -> {folder} is not {parts[-1]}/ in its parent's folder {parent}/: extend the shadow tree"
    return where


def test_mypy_reports_no_errors(tmp_path):
    pytest.importorskip("mypy", reason="mypy is not installed (pip install -e . brings it)")
    shadow = shadow_tree(tmp_path / "shadow")
    command = [sys.executable, "-m", "mypy", "--config-file", str(PYPROJECT), "--cache-dir",
               str(tmp_path / "mypy-cache"), "-p", PACKAGE]
    done = subprocess.run(command, cwd=shadow, capture_output=True, text=True, timeout=MYPY_SECONDS,
                          env={**os.environ, "MYPYPATH": str(shadow)})
    if done.returncode != 0:
        pytest.fail(f"mypy exited {done.returncode} on {' '.join(command[1:])} (in the shadow tree):\n"
                    f"{done.stdout}{done.stderr}", pytrace=False)
