"""Traces as one self-contained HTML page: a picture of every replica's log at every step.

The markup is XHTML-compatible (void tags self-closed, only numeric character references),
so XML tools read it as well as browsers.
"""

from __future__ import annotations

from html import escape

from kafka_mc.checker.result import Trace
from kafka_mc.model.state import ROLE_NAMES, Record, Replica, State, record_name, replica_name

from .steps import Step, controller_text, epoch_text, response_text, trace_steps, verdict
from .views import epochs_text, status_text

STYLE = """
body { font-family: system-ui, sans-serif; margin: 2em; color: #222; }
h1 { font-size: 1.5em; }
dl.config { display: grid; grid-template-columns: max-content auto; gap: 0.1em 1em; }
dl.config dt { font-weight: bold; }
dl.config dd { margin: 0; font-family: monospace; }
ol.toc li.violated a { color: #b00; font-weight: bold; }
section.step { border: 1px solid #ccc; border-radius: 6px; padding: 0.5em 1em; margin: 1em 0; }
section.violated { border: 2px solid #b00; background: #fff6f6; }
table.logs { border-collapse: separate; border-spacing: 6px 4px; }
table.logs th.offset { font-weight: normal; color: #777; font-size: 0.8em; }
th.name { text-align: left; white-space: nowrap; }
span.leader { background: #222; color: #fff; border-radius: 50%; padding: 0 0.35em; margin-left: 0.3em; }
td.slot { vertical-align: top; min-width: 3.2em; padding: 0; }
div.record { border: 1px solid #444; text-align: center; padding: 0.2em 0; background: #fff; }
div.committed { background: #9cc3f0; }
div.free { border: 1px dashed #bbb; background: transparent; color: transparent; }
span.epoch { display: block; font-size: 0.7em; color: #555; }
div.markers { font-size: 0.7em; text-align: left; min-height: 1.2em; }
span.hw { color: #0a5; font-weight: bold; margin-right: 0.3em; }
span.leo { color: #a50; font-weight: bold; }
td.info { font-size: 0.85em; color: #444; padding-left: 1em; }
tr.down th.name, tr.down td.slot { opacity: 0.45; }
figcaption { font-size: 0.9em; margin-top: 0.3em; }
ul.changes { font-size: 0.85em; color: #444; }
p.violation, p.verdict { color: #b00; font-weight: bold; }
""".strip()

LEGEND = ("Each box is one offset of a replica's log: the message and the leader epoch it was written in. "
          "Shaded boxes are below the replica's high watermark (committed). "
          "HW and LEO mark the offset each points to; L marks the controller's leader.")


def trace_html(trace: Trace, invariant: str | None, title: str) -> str:
    """The page: configuration, verdict, an index of the steps, then one picture per step."""
    steps = trace_steps(trace)
    slots = max(replica.leo for step in steps for replica in step.state.replicas) + 1
    parts = [
        "<!DOCTYPE html>",
        '<html lang="en">',
        "<head>",
        '<meta charset="utf-8"/>',
        f"<title>{escape(title)}</title>",
        f"<style>\n{STYLE}\n</style>",
        "</head>",
        "<body>",
        f"<h1>{escape(title)}</h1>",
        config_list(trace),
        f'<p class="verdict">{escape(verdict(steps, invariant))}</p>',
        f"<p>{escape(LEGEND)}</p>",
        _index(steps),
        *(_step_section(step, slots, trace.config.protocol) for step in steps),
        "</body>",
        "</html>",
    ]
    return "\n".join(parts) + "\n"


def config_list(trace: Trace) -> str:
    """The trace's configuration as an HTML definition list (this page's and the control-plane page's)."""
    items = "".join(f"<dt>{escape(key)}</dt><dd>{escape(str(value))}</dd>"
                    for key, value in trace.config.to_dict().items())
    return f'<dl class="config">{items}</dl>'


def _index(steps: list[Step]) -> str:
    items = "".join(
        f'<li class="{"violated" if step.failing else "fine"}">'
        f'<a href="#step-{step.number}">{escape(step.label)}</a></li>'
        for step in steps
    )
    return f'<ol class="toc" start="0">{items}</ol>'


def _step_section(step: Step, slots: int, protocol: str) -> str:
    state = step.state
    violated = " violated" if step.failing else ""
    parts = [
        f'<section class="step{violated}" id="step-{step.number}">',
        f"<h2>Step {step.number}: {escape(step.label)}</h2>",
        _picture(state, slots, protocol),
    ]
    if step.changes:
        items = "".join(f"<li><b>{escape(where)}</b>: {escape(text)}</li>" for where, text in step.changes)
        parts.append(f'<ul class="changes">{items}</ul>')
    if step.failing:
        parts.append(f'<p class="violation">✗ Invariant violated: {escape(", ".join(step.failing))}</p>')
    parts.append("</section>")
    return "\n".join(parts)


def state_picture(state: State, protocol: str) -> str:
    """One state's picture, as a step of the page draws it: every replica's log up to the longest,
    with HW, LEO, role, ISR and epoch cache, and the controller (the explorer's, `kafka_mc.explorer`)."""
    return _picture(state, max(replica.leo for replica in state.replicas) + 1, protocol)


def _picture(state: State, slots: int, protocol: str) -> str:
    offsets = "".join(f'<th class="offset">{offset}</th>' for offset in range(slots))
    rows = "\n".join(_replica_row(state, index, slots, protocol) for index in range(len(state.replicas)))
    committed = " ".join(f"m{msg}@{offset}" for offset, msg in state.committed) or "none"
    caption = f"{controller_text(state)}. Committed so far: {committed}."
    return (f'<figure class="picture">\n<table class="logs">\n<thead><tr><th></th>{offsets}<th></th></tr></thead>\n'
            f"<tbody>\n{rows}\n</tbody>\n</table>\n<figcaption>{escape(caption)}</figcaption>\n</figure>")


def _replica_row(state: State, index: int, slots: int, protocol: str) -> str:
    replica = state.replicas[index]
    badge = '<span class="leader">L</span>' if state.controller.leader == index else ""
    down = "" if replica.alive else ' class="down"'
    cells = "".join(_slot(replica, offset) for offset in range(slots))
    return (f'<tr{down}><th class="name">{replica_name(index)}{badge}</th>{cells}'
            f'<td class="info">{escape(_replica_info(state, index, protocol))}</td></tr>')


def _slot(replica: Replica, offset: int) -> str:
    if offset < replica.leo:
        record: Record = replica.log[offset]
        shade = " committed" if offset < replica.hw else ""
        box = (f'<div class="record{shade}">{escape(record_name(record))}'
               f'<span class="epoch">e{record.epoch}</span></div>')
    else:
        box = '<div class="record free">-<span class="epoch">-</span></div>'
    markers = "".join(
        f'<span class="{kind.lower()}">▲{kind}</span>'
        for kind, position in (("HW", replica.hw), ("LEO", replica.leo))
        if position == offset
    )
    return f'<td class="slot">{box}<div class="markers">{markers}</div></td>'


def _replica_info(state: State, index: int, protocol: str) -> str:
    replica = state.replicas[index]
    facts = [
        status_text(state, index),
        f"role {ROLE_NAMES[replica.role]}",
        f"leader epoch {epoch_text(replica.epoch)}",
        "in ISR" if state.controller.isr >> index & 1 else "not in ISR",
        f"epoch cache {epochs_text(replica)}",
    ]
    if replica.unflushed:
        facts.append(f"{replica.unflushed} record(s) not flushed")
    if replica.response:
        facts.append(f"fetch response in flight: {response_text(replica.response, protocol)}")
    return " · ".join(facts)
