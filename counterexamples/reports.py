"""A trace's reports (ITF, TLC-style text, Markdown, HTML), written through the output guard
(`files.write_files`: nothing kafka-mc did not write is replaced)."""

from __future__ import annotations

import json
from pathlib import Path

from kafka_mc.checker.result import Trace
from kafka_mc.checker.scenario import Scenario

from .files import write_files
from .html import trace_html
from .itf import itf_text, itf_to_trace
from .markdown import trace_markdown
from .scenario_file import scenario_toml
from .text import trace_text


def render_reports(trace: Trace, invariant: str | None, stem: str, title: str) -> dict[str, str]:
    """Every report's file name and text; the scenario file only for a trace from an initial state
    (not for a counterexample to induction, which starts in a given state)."""
    reports = {
        f"{stem}.itf.json": itf_text(trace, invariant),
        f"{stem}.txt": trace_text(trace, invariant),
        f"{stem}.md": trace_markdown(trace, invariant, title),
        f"{stem}.html": trace_html(trace, invariant, title),
    }
    if trace.start is None:
        reports[f"{stem}.toml"] = scenario_toml(trace, invariant, title)
    return reports


def write_reports(trace: Trace, invariant: str | None, out_dir: Path, stem: str, title: str,
                  overwrite: set[Path] | None = None) -> list[Path]:
    """Write `stem.itf.json`, `stem.txt`, `stem.md`, `stem.html` and `stem.toml` (the trace as a
    scenario file, see `render_reports`) into `out_dir` and return their paths (see `write_files`)."""
    if Path(stem).name != stem:
        raise ValueError(f"report stem {stem!r} must be a file name, not a path")
    return write_files(out_dir, render_reports(trace, invariant, stem, title), overwrite)


def read_itf_file(path: Path) -> Trace:
    """The trace in an ITF file written by kafka-mc; ValueError naming the file if it is not one."""
    return read_itf_scenario(path).trace


def read_itf_scenario(path: Path) -> Scenario:
    """An ITF file written by kafka-mc as a scenario to replay: its trace, expected to break the
    invariant the file records (others may break too); ValueError naming the file if it is not one."""
    try:
        data = json.loads(Path(path).read_text(encoding="utf-8"))
        trace = itf_to_trace(data)
    except ValueError as error:
        raise ValueError(f"{path}: {error}") from error
    except RecursionError:
        raise ValueError(f"{path}: cannot be read: values nested too deeply") from None
    except OSError as error:
        raise ValueError(f"{path}: cannot be read ({error.strerror or error})") from None
    invariant = data["#meta"].get("invariant")
    expected = (invariant,) if isinstance(invariant, str) else ()
    title = f"{Path(path).name}: {invariant} violated" if expected else Path(path).name
    return Scenario(path=Path(path), title=title, source=str(path), description="", trace=trace, checkpoints=(),
                    expected_violations=expected, exhaustive_violations=None, strict=False)
