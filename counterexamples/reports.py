"""A trace's reports, for every model: ITF, TLC-style text, Markdown, HTML and the trace as a
scenario file, written through the output guard (`files.write_files`: nothing kafka-mc did not
write is replaced). The Markdown and HTML of the replication model draw logs, HWs and ISRs
(`markdown`, `html`); another model's show its variables as a table (`tables`)."""

from __future__ import annotations

import json
from collections.abc import Mapping
from pathlib import Path
from typing import Any, Callable

from kafka_mc.checker.result import Trace
from kafka_mc.checker.scenario import Scenario

from .files import write_files
from .html import trace_html
from .itf import (
    SettingError,
    itf_text,
    itf_to_trace,
    twin_itf_to_trace,
    written_by_kafka_mc,
)
from .markdown import trace_markdown
from .scenario_file import scenario_toml
from .tables import table_html, table_markdown
from .text import trace_text

Renderer = Callable[[Trace, "str | None", str], str]  # (trace, invariant, title) -> text
# the Markdown and HTML renderers of the models with pictures of their own; any other: tables
RENDERERS: dict[str, tuple[Renderer, Renderer]] = {"replication": (trace_markdown, trace_html)}


def render_reports(trace: Trace, invariant: str | None, stem: str, title: str) -> dict[str, str]:
    """Every report's file name and text; the scenario file only for a trace from an initial state
    (not for a counterexample to induction, which starts in a given state)."""
    markdown, html = RENDERERS.get(trace.model.name, (table_markdown, table_html))
    reports = {
        f"{stem}.itf.json": itf_text(trace, invariant),
        f"{stem}.txt": trace_text(trace, invariant),
        f"{stem}.md": markdown(trace, invariant, title),
        f"{stem}.html": html(trace, invariant, title),
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


def read_itf_scenario(path: Path, settings: Mapping[str, Any] | None = None) -> Scenario:
    """An ITF file written by kafka-mc as a scenario to replay: its trace, expected to break the
    invariant the file records (others may break too); ValueError naming the file if it is not one.
    A file without kafka-mc's #meta is read as a trace of the TLA+ twin (`itf.twin_itf_to_trace`),
    under `settings` (Config fields) and what it infers; SettingError naming the file and the option
    for a setting missing, contradicted, or given for a file whose #meta has its configuration."""
    note = ""
    try:
        data = json.loads(Path(path).read_text(encoding="utf-8"))
        if written_by_kafka_mc(data):
            trace = itf_to_trace(data, settings)
        else:
            trace, note = twin_itf_to_trace(data, settings or {})
    except SettingError as error:
        raise SettingError(f"{path}: {error}") from None
    except ValueError as error:
        raise ValueError(f"{path}: {error}") from error
    except RecursionError:
        raise ValueError(f"{path}: cannot be read: values nested too deeply") from None
    except OSError as error:
        raise ValueError(f"{path}: cannot be read ({error.strerror or error})") from None
    meta = data.get("#meta")
    invariant = meta.get("invariant") if isinstance(meta, dict) else None
    expected = (invariant,) if isinstance(invariant, str) else ()
    title = f"{Path(path).name}: {invariant} violated" if expected else Path(path).name
    if note:
        title += f" (a trace of the TLA+ twin; {note})"
    return Scenario(path=Path(path), title=title, source=str(path), description="", trace=trace, checkpoints=(),
                    expected_violations=expected, exhaustive_violations=None, strict=False)
