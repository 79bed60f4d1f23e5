"""ARCHITECTURE.md's worked example of a new protocol variant runs as written: in Python, and from
the command line with `--plugin`."""

from __future__ import annotations

import json
import re
import shlex
from pathlib import Path

import pytest

from kafka_mc.cli import main
from kafka_mc.model import PROTOCOLS
from kafka_mc.model.protocols import unregister_protocol

DOC = (Path(__file__).parent.parent / "ARCHITECTURE.md").read_text(encoding="utf-8")
SECTION = DOC.split("## A new protocol variant")[1].split("\n## ")[0]
PYTHON = re.findall(r"```python\n(.*?)```", SECTION, re.DOTALL)
BASH = re.findall(r"```bash\n(.*?)```", SECTION, re.DOTALL)


@pytest.fixture
def forget_the_variant():
    yield
    unregister_protocol("leader-epoch-7415")


def test_the_python_example_runs_as_written(forget_the_variant):
    assert len(PYTHON) == 1
    exec(compile(PYTHON[0], "ARCHITECTURE.md", "exec"), {})
    assert PROTOCOLS["leader-epoch-7415"].epoch_on_election


def test_the_command_line_example_runs_as_written(tmp_path, monkeypatch, capsys, forget_the_variant):
    registration = PYTHON[0].split("# the kernel is held")[0]  # the imports and register_protocol
    (tmp_path / "my_variants.py").write_text(registration, encoding="utf-8")
    monkeypatch.chdir(tmp_path)
    argv = shlex.split(BASH[0].replace("\\\n", " "))
    assert argv[:2] == ["kafka-mc", "check"]
    assert main([*argv[1:], "--format", "json"]) == 12
    summary = json.loads(capsys.readouterr().out)
    assert summary["violations"][0]["invariant"] == "NoLogDivergence"
    assert summary["violations"][0]["length"] == 15


def test_a_plugin_that_is_missing_or_broken_is_a_clear_error(tmp_path, monkeypatch, capsys):
    monkeypatch.chdir(tmp_path)
    assert main(["check", "--plugin", "no_such_module_here", "--protocol", "hw"]) == 150
    assert "--plugin no_such_module_here" in capsys.readouterr().err
    (tmp_path / "broken.py").write_text("raise RuntimeError('boom')\n", encoding="utf-8")
    assert main(["check", "--plugin", "broken.py", "--protocol", "hw"]) == 150
    assert "boom" in capsys.readouterr().err
    for raised in ("SystemExit(0)", "KeyboardInterrupt()"):  # a user's code never ends the command as a verdict
        (tmp_path / "leaves.py").write_text(f"raise {raised}\n", encoding="utf-8")
        assert main(["check", "--plugin", "leaves.py", "--protocol", "hw"]) == 150
        assert f"--plugin leaves.py: it cannot be imported: {raised.split('(')[0]}" in capsys.readouterr().err
