"""Reports for the control-plane models' traces: ITF JSON, TLC-style text, Markdown and HTML.

The replication reports draw logs, HWs and ISRs; a control-plane model's state is whatever
its `state_values` says, so these reports show those variables as they are, sets sorted so
the same trace gives the same bytes.
"""

from __future__ import annotations

import json
from html import escape
from pathlib import Path
from typing import Any

import itf_py
from tabulate import tabulate

from kafka_mc.checker.result import CheckResult, Trace
from kafka_mc.model.values import plain_value, sorted_values

from .control_sequence import controller_sequence
from .html import STYLE, config_list
from .itf import FORMAT_DESCRIPTION, INIT
from .files import write_files
from .summary import config_text
from .text import conjunct, tla_value
from .views import result_view


SEQUENCES = {"controller": controller_sequence}  # the models whose Markdown opens with a sequence diagram


def _labelled_states(trace: Trace) -> list[tuple[str, dict[str, Any]]]:
    return [(INIT if action is None else str(action), sorted_values(trace.model, state)) for action, state in trace.steps()]


def control_itf(trace: Trace, violated: str | None) -> str:
    """The trace as ITF JSON text, its `#meta` naming the model, its configuration and the property."""
    states = _labelled_states(trace)
    meta: dict[str, Any] = {"format": "ITF", "format-description": FORMAT_DESCRIPTION, "source": "kafka-mc",
                            "model": trace.model.name, "config": trace.config.to_dict(), "initial": trace.initial}
    if violated is not None:
        meta["invariant"] = violated
    itf = itf_py.Trace(meta=meta, params=[], vars=list(states[0][1]), loop=None,
                       states=[itf_py.State(meta={"index": index, "action": label}, values=values)
                               for index, (label, values) in enumerate(states)])
    return json.dumps(itf_py.trace_to_json(itf), indent=2) + "\n"


def control_text(trace: Trace, violated: str | None) -> str:
    """A TLC-style error trace; the last state, where the property first fails, carries a comment."""
    states = _labelled_states(trace)
    lines = []
    if violated is not None:
        lines += [f"Error: Invariant {violated} is violated.", "Error: The behavior up to this point is:"]
    for number, (label, values) in enumerate(states):
        lines.append(f"State {number + 1}: <{'Initial predicate' if label == INIT else label}>")
        if violated is not None and number == len(states) - 1:
            lines.append(f"\\* {violated} is violated in this state")
        lines += [conjunct(name, values[name]) for name in sorted(values)]
        lines.append("")
    return "\n".join(lines)


def _changed_rows(states: list[tuple[str, dict[str, Any]]]) -> list[tuple[str, dict[str, Any], set[str]]]:
    """Each step's label, variables and the names of those that changed since the step before."""
    previous = [None, *(values for _, values in states)]
    return [(label, values, set() if before is None else {name for name in values if values[name] != before[name]})
            for (label, values), before in zip(states, previous)]


def _verdict(violated: str | None, states: list) -> str:
    return (f"Invariant {violated} is violated at step {len(states) - 1}." if violated is not None
            else "A behaviour of the model.")


def control_markdown(trace: Trace, violated: str | None, title: str) -> str:
    """A table of the steps: each variable's value after each action, changed values in bold; for
    the controller model, a Mermaid sequence diagram of the messages first."""
    states = _labelled_states(trace)
    names = list(states[0][1])
    rows = []
    for number, (label, values, changed) in enumerate(_changed_rows(states)):
        cells = [tla_value(values[name]).replace("\n", " ") for name in names]
        cells = [f"**{cell}**" if name in changed else cell for name, cell in zip(names, cells)]
        rows.append([number, label.replace("|", "\\|"), *(cell.replace("|", "\\|") for cell in cells)])
    diagram = SEQUENCES[trace.model.name](trace) + [""] if trace.model.name in SEQUENCES else []
    return "\n".join([f"# {title}", "", f"Model `{trace.model.name}`, {config_text(trace.config)}. "
                      f"{_verdict(violated, states)}", "", *diagram,
                      tabulate(rows, headers=["step", "action", *names], tablefmt="github"), ""])


TABLE_STYLE = """
table.steps { border-collapse: collapse; font-size: 0.85em; }
table.steps th, table.steps td { border: 1px solid #ccc; padding: 0.2em 0.5em; vertical-align: top; }
table.steps td.changed { background: #fff3c4; font-weight: bold; }
table.steps tr.violated td { background: #fff6f6; border-color: #b00; }
td.value { font-family: monospace; white-space: pre-wrap; }
""".strip()


def control_html(trace: Trace, violated: str | None, title: str) -> str:
    """One self-contained page: the configuration, the verdict, and a table of every step, changed
    values highlighted and the violating step framed (XHTML-compatible, as the replication page)."""
    states = _labelled_states(trace)
    names = list(states[0][1])
    rows = []
    for number, (label, values, changed) in enumerate(_changed_rows(states)):
        cells = "".join(f'<td class="value{" changed" if name in changed else ""}">'
                        f"{escape(tla_value(values[name]))}</td>" for name in names)
        marked = ' class="violated"' if violated is not None and number == len(states) - 1 else ""
        rows.append(f'<tr id="step-{number}"{marked}><td>{number}</td><td>{escape(label)}</td>{cells}</tr>')
    verdict = _verdict(violated, states)
    header = "".join(f"<th>{escape(name)}</th>" for name in ["step", "action", *names])
    return "\n".join([
        "<!DOCTYPE html>", '<html lang="en">', "<head>", '<meta charset="utf-8"/>', f"<title>{escape(title)}</title>",
        f"<style>\n{STYLE}\n{TABLE_STYLE}\n</style>", "</head>", "<body>", f"<h1>{escape(title)}</h1>",
        f"<p>Model <code>{escape(trace.model.name)}</code>.</p>", config_list(trace),
        f'<p class="verdict">{escape(verdict)}</p>',
        f'<table class="steps"><thead><tr>{header}</tr></thead><tbody>', *rows, "</tbody></table>",
        "</body>", "</html>"]) + "\n"


def control_reports(trace: Trace, violated: str | None, stem: str, title: str) -> dict[str, str]:
    """Every report's file name and text."""
    return {f"{stem}.itf.json": control_itf(trace, violated), f"{stem}.txt": control_text(trace, violated),
            f"{stem}.md": control_markdown(trace, violated, title), f"{stem}.html": control_html(trace, violated, title)}


def write_control_reports(result: CheckResult, model_name: str, out_dir: Path) -> list[Path]:
    """A report set for every violation of `result` in `out_dir` (see `reports.write_files`)."""
    files: dict[str, str] = {}
    for violation in result.violations:
        files |= control_reports(violation.trace, violation.invariant, f"{model_name}-{violation.invariant}",
                                 f"{violation.invariant} violated in the {model_name} model")
    return write_files(out_dir, files) if files else []


def control_result_view(result: CheckResult, model_name: str) -> dict:
    """The JSON summary of a control-plane model's check."""
    return {"model": model_name,
            **result_view(result, lambda trace: [{"action": label, "state": plain_value(values)}
                                                 for label, values in _labelled_states(trace)])}
