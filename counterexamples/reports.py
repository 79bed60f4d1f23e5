"""Writing a trace's reports (ITF, TLC-style text, Markdown, HTML) without clobbering user files.

A manifest in the output folder lists the files kafka-mc wrote there; only those (and the
paths a caller names explicitly) may be replaced.
"""

from __future__ import annotations

import json
from pathlib import Path

from kafka_mc.checker.result import Trace

from .html import trace_html
from .itf import itf_text, itf_to_trace
from .markdown import trace_markdown
from .text import trace_text

MANIFEST = ".kafka-mc-reports"
MANIFEST_HEADER = "# Files written by kafka-mc; it may replace them. One name a line."


class ReportConflict(FileExistsError):
    """A report would replace a file that kafka-mc did not write."""

    def __init__(self, path: Path):
        super().__init__(f"{path} exists and was not written by kafka-mc; "
                         "choose another --out directory or remove the file")
        self.path = path


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


def write_files(out_dir: Path, files: dict[str, str], overwrite: set[Path] | None = None) -> list[Path]:
    """Write each named text into `out_dir` and return the paths. ReportConflict, before
    anything is written, when a target exists but is neither in the manifest nor in `overwrite`."""
    out_dir = Path(out_dir)
    owned = _read_manifest(out_dir)
    allowed = {Path(path).resolve() for path in overwrite or ()}
    for name in files:
        path = out_dir / name
        if path.exists() and name not in owned and path.resolve() not in allowed:
            raise ReportConflict(path)
    out_dir.mkdir(parents=True, exist_ok=True)
    _write_manifest(out_dir, owned | set(files))
    for name, text in files.items():
        (out_dir / name).write_text(text, encoding="utf-8")
    return [out_dir / name for name in files]


def read_itf_file(path: Path) -> Trace:
    """The trace in an ITF file written by kafka-mc; ValueError naming the file if it is not one."""
    try:
        return itf_to_trace(json.loads(Path(path).read_text(encoding="utf-8")))
    except ValueError as error:
        raise ValueError(f"{path}: {error}") from error


def _read_manifest(out_dir: Path) -> set[str]:
    manifest = out_dir / MANIFEST
    if not manifest.is_file():
        return set()
    lines = manifest.read_text(encoding="utf-8").splitlines()
    return {line.strip() for line in lines if line.strip() and not line.startswith("#")}


def _write_manifest(out_dir: Path, names: set[str]) -> None:
    text = "\n".join([MANIFEST_HEADER, *sorted(names)]) + "\n"
    (out_dir / MANIFEST).write_text(text, encoding="utf-8")
