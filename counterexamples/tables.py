"""A trace of any model as a table of its variables, one row a step, changed values marked: the
Markdown and HTML reports of a model without pictures of its own (`reports.RENDERERS`). The
replication reports draw logs, HWs and ISRs; here a state is whatever the model's `state_values`
says, sets sorted so the same trace gives the same bytes.
"""

from __future__ import annotations

from html import escape
from typing import Any

from tabulate import tabulate

from kafka_mc.checker.result import Trace
from kafka_mc.model.values import sorted_values

from .control_sequence import controller_sequence
from .html import STYLE, config_list
from .itf import INIT
from .summary import config_text
from .text import tla_value

SEQUENCES = {"controller": controller_sequence}  # the models whose Markdown opens with a sequence diagram


def labelled_states(trace: Trace) -> list[tuple[str, dict[str, Any]]]:
    """Each step's label (`Init`, then the action) and the state's variables, sorted."""
    return [(INIT if action is None else str(action), sorted_values(trace.model, state))
            for action, state in trace.steps()]


def _changed_rows(states: list[tuple[str, dict[str, Any]]]) -> list[tuple[str, dict[str, Any], set[str]]]:
    """Each step's label, variables and the names of those that changed since the step before."""
    previous = [None, *(values for _, values in states)]
    return [(label, values, set() if before is None else {name for name in values if values[name] != before[name]})
            for (label, values), before in zip(states, previous)]


def _verdict(violated: str | None, states: list) -> str:
    return (f"Invariant {violated} is violated at step {len(states) - 1}." if violated is not None
            else "A behaviour of the model.")


def table_markdown(trace: Trace, violated: str | None, title: str) -> str:
    """A table of the steps: each variable's value after each action, changed values in bold; for
    the controller model, a Mermaid sequence diagram of the messages first."""
    states = labelled_states(trace)
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


def table_html(trace: Trace, violated: str | None, title: str) -> str:
    """One self-contained page: the configuration, the verdict, and a table of every step, changed
    values highlighted and the violating step framed (XHTML-compatible, as the replication model's page)."""
    states = labelled_states(trace)
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
