"""A trace's reports (ITF, TLC-style text, Markdown, HTML), written through the output guard
(`files.write_files`: nothing kafka-mc did not write is replaced)."""

from __future__ import annotations

import json
from pathlib import Path

from kafka_mc.checker.result import Trace

from .files import write_files
from .html import trace_html
from .itf import itf_text, itf_to_trace
from .markdown import trace_markdown
from .text import trace_text


def render_reports(trace: Trace, invariant: str | None, stem: str, title: str) -> dict[str, str]:
    """Every report's file name and text."""
    return {
        f"{stem}.itf.json": itf_text(trace, invariant),
        f"{stem}.txt": trace_text(trace, invariant),
        f"{stem}.md": trace_markdown(trace, invariant, title),
        f"{stem}.html": trace_html(trace, invariant, title),
    }


def write_reports(trace: Trace, invariant: str | None, out_dir: Path, stem: str, title: str,
                  overwrite: set[Path] | None = None) -> list[Path]:
    """Write `stem.itf.json`, `stem.txt`, `stem.md` and `stem.html` into `out_dir` and return
    their paths (see `write_files`)."""
    if Path(stem).name != stem:
        raise ValueError(f"report stem {stem!r} must be a file name, not a path")
    return write_files(out_dir, render_reports(trace, invariant, stem, title), overwrite)


def read_itf_file(path: Path) -> Trace:
    """The trace in an ITF file written by kafka-mc; ValueError naming the file if it is not one."""
    try:
        return itf_to_trace(json.loads(Path(path).read_text(encoding="utf-8")))
    except ValueError as error:
        raise ValueError(f"{path}: {error}") from error
    except RecursionError:
        raise ValueError(f"{path}: cannot be read: values nested too deeply") from None
