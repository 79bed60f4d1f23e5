"""Counterexamples to explore: an ITF trace kafka-mc wrote (`NAME.itf.json`), a scenario file, or a
shipped scenario by its name (`case-l-hw`), given as a path or uploaded as text."""

from __future__ import annotations

import tempfile
from pathlib import Path, PurePath

from kafka_mc.checker.scenario import Scenario, ScenarioError, load_scenario
from kafka_mc.counterexamples.reports import read_itf_scenario


class LoadError(ValueError):
    """A counterexample that cannot be read: the message names the file and what is wrong."""


def load_counterexample(source: str) -> Scenario:
    """The trace in `source`: a `.json` file is ITF, anything else a scenario file or a shipped
    scenario's name; LoadError naming it."""
    if not source.strip():
        raise LoadError("give an ITF file (NAME.itf.json), a scenario file (.toml) or a shipped scenario's "
                        "name (e.g. case-l-hw)")
    path = Path(source.strip())
    try:
        return read_itf_scenario(path) if path.name.endswith(".json") else load_scenario(path)
    except (ScenarioError, ValueError) as error:
        raise LoadError(str(error)) from None


def load_uploaded(name: str, text: str) -> Scenario:
    """The trace in an uploaded file called `name` (read as `load_counterexample` reads a file)."""
    file_name = PurePath(name.replace("\\", "/")).name
    if not file_name.endswith((".json", ".toml")):
        raise LoadError(f"{name or 'the upload'}: give an ITF file (NAME.itf.json) or a scenario file (.toml)")
    with tempfile.TemporaryDirectory(prefix="kafka-mc-explore-") as folder:
        path = Path(folder) / file_name
        path.write_text(text, encoding="utf-8")
        try:
            return load_counterexample(str(path))
        except LoadError as error:
            raise LoadError(str(error).replace(f"{folder}/", "")) from None
