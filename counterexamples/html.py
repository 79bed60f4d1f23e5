"""Traces as one self-contained HTML page: a picture of every replica's log at every step.

The markup is XHTML-compatible (void tags self-closed, only numeric character references),
so XML tools read it as well as browsers.
"""

from __future__ import annotations

from html import escape

from kafka_mc.checker.result import Trace
from kafka_mc.model.state import (
    FOLLOWER, NO_LEADER, ROLE_NAMES, TRUNCATING, Record, Replica, State, record_name, replica_name,
)

from .explain import Diagnosis, diagnose, reasons, verdict
from .steps import (
    Step,
    controller_text,
    epoch_text,
    record_at,
    response_text,
    step_removals,
    trace_steps,
)
from .views import epochs_text, isr_membership, status_text

STYLE = """
body { font-family: system-ui, sans-serif; margin: 2em; color: #222; }
h1 { font-size: 1.5em; }
dl.config { display: grid; grid-template-columns: max-content auto; gap: 0.1em 1em; }
dl.config dt { font-weight: bold; }
dl.config dd { margin: 0; font-family: monospace; }
ol.toc li.violated a { color: #b00; font-weight: bold; }
ol.toc li.cause a { color: #c60; font-weight: bold; }
nav.timeline { position: sticky; top: 0; z-index: 1; background: #fff; padding: 0.4em 0;
  border-bottom: 1px solid #ddd; display: flex; flex-wrap: wrap; gap: 3px; align-items: center; }
nav.timeline a { display: inline-block; min-width: 1.7em; text-align: center; font-size: 0.75em;
  padding: 0.15em 0; border: 1px solid #999; border-radius: 3px; color: #222; text-decoration: none; }
nav.timeline a.violated { background: #fdd; border-color: #b00; }
nav.timeline a.shows { background: #b00; color: #fff; }
nav.timeline a.cause { background: #f90; border-color: #c60; color: #000; font-weight: bold; }
nav.timeline a.current { outline: 2px solid #06c; outline-offset: 1px; }
nav.timeline span.keys { font-size: 0.75em; color: #666; margin-left: 0.8em; }
section.step { border: 1px solid #ccc; border-radius: 6px; padding: 0.5em 1em; margin: 1em 0;
  scroll-margin-top: 3em; }
section.violated { border: 2px solid #b00; background: #fff6f6; }
section.cause { border: 3px solid #f90; background: #fff8ec; }
section.shows { border-width: 3px; }
section.current { box-shadow: 0 0 0 3px #06c; }
span.badge { font-size: 0.6em; vertical-align: middle; border-radius: 3px; padding: 0.1em 0.4em; margin-left: 0.5em; }
span.badge.cause { background: #f90; color: #000; }
span.badge.shows { background: #b00; color: #fff; }
table.logs { border-collapse: separate; border-spacing: 6px 4px; }
table.logs th.offset { font-weight: normal; color: #777; font-size: 0.8em; }
th.name { text-align: left; white-space: nowrap; }
span.leader { background: #222; color: #fff; border-radius: 50%; padding: 0 0.35em; margin-left: 0.3em; }
td.slot { vertical-align: top; min-width: 3.2em; padding: 0; }
div.record { border: 1px solid #444; text-align: center; padding: 0.2em 0; background: #fff; }
div.committed { background: #9cc3f0; }
div.free { border: 1px dashed #bbb; background: transparent; color: transparent; }
div.removed { border: 1px dashed #b00; background: #fde8e8; color: #b00; text-decoration: line-through; }
span.epoch { display: block; font-size: 0.7em; color: #555; }
div.markers { font-size: 0.7em; text-align: left; min-height: 1.2em; }
span.hw { color: #0a5; font-weight: bold; margin-right: 0.3em; }
span.leo { color: #a50; font-weight: bold; }
td.info { font-size: 0.85em; color: #444; padding-left: 1em; }
tr.down th.name, tr.down td.slot { opacity: 0.45; }
figcaption { font-size: 0.9em; margin-top: 0.3em; }
ul.changes { font-size: 0.85em; color: #444; }
p.violation, p.verdict { color: #b00; font-weight: bold; }
ul.why { color: #b00; }
p.cause { color: #a50; font-weight: bold; }
""".strip()

# Left/Right or j/k move the current step; a timeline link or a #step-N address picks it; a step
# scrolled to stops below the timeline, however many lines it wraps to. Written without "<" and
# "&", so the page stays well-formed XML.
SCRIPT = r"""
(function () {
  var steps = document.querySelectorAll('section.step');
  var timeline = document.querySelector('nav.timeline');
  var ticks = timeline.querySelectorAll('a');
  var moves = {ArrowRight: 1, j: 1, ArrowLeft: -1, k: -1};
  var current = 0;
  function select(index, scroll) {
    current = Math.max(0, Math.min(steps.length - 1, index));
    for (var i = 0; i !== steps.length; i++) {
      steps[i].classList.toggle('current', i === current);
      ticks[i].classList.toggle('current', i === current);
    }
    if (scroll) { steps[current].scrollIntoView({block: 'start'}); }
  }
  function selectAddressed() {
    var match = /^#step-(\d+)$/.exec(location.hash);
    if (match) { select(Number(match[1]), false); }
  }
  document.addEventListener('keydown', function (event) {
    var move = moves[event.key];
    if (!move || event.altKey || event.ctrlKey || event.metaKey) { return; }
    event.preventDefault();
    select(current + move, true);
  });
  for (var i = 0; i !== steps.length; i++) {
    steps[i].style.scrollMarginTop = (timeline.offsetHeight + 8) + 'px';
  }
  window.addEventListener('hashchange', selectAddressed);
  select(0, false);
  selectAddressed();
})();
""".strip()

BADGES = {"cause": "cause", "shows": "failure shows"}  # the marks of `_marks` a step's heading names

LEGEND = ("Each box is one offset of a replica's log: the message and the leader epoch it was written in. "
          "Shaded boxes are below the replica's high watermark (committed). "
          "Struck-out boxes are records removed at that step (a truncation, or a crash losing unflushed records). "
          "HW and LEO mark the offset each points to; L marks the controller's leader.")


def trace_html(trace: Trace, invariant: str | None, title: str) -> str:
    """The page: configuration, verdict, a timeline and an index of the steps, then one picture per
    step, the step that causes the violation and the one where it shows marked."""
    steps = trace_steps(trace)
    diagnosis = diagnose(steps, invariant)
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
        f'<p class="verdict">{escape(verdict(invariant, diagnosis))}</p>',
        _timeline(steps, diagnosis),
        f"<p>{escape(LEGEND)}</p>",
        _index(steps, diagnosis),
        *(_step_section(steps, step, slots, trace.config.protocol, diagnosis) for step in steps),
        f"<script>\n{SCRIPT}\n</script>",
        "</body>",
        "</html>",
    ]
    return "\n".join(parts) + "\n"


def config_list(trace: Trace) -> str:
    """The trace's configuration as an HTML definition list (this page's and the control-plane page's)."""
    items = "".join(f"<dt>{escape(key)}</dt><dd>{escape(str(value))}</dd>"
                    for key, value in trace.config.to_dict().items())
    return f'<dl class="config">{items}</dl>'


def _marks(step: Step, diagnosis: Diagnosis | None) -> list[str]:
    """The classes that mark a step: "violated" where an invariant fails, "cause" at the step that
    causes the diagnosed violation, "shows" where it first shows."""
    marks = ["violated"] if step.failing else []
    if diagnosis is not None and diagnosis.cause_note(step.number):
        marks.append("cause")
    if diagnosis is not None and diagnosis.shows == step.number:
        marks.append("shows")
    return marks


def _timeline(steps: list[Step], diagnosis: Diagnosis | None) -> str:
    """One small link per step, the cause and the failure marked; the keys that step through."""
    ticks = "".join(
        f'<a href="#step-{step.number}" class="{" ".join(["tick", *_marks(step, diagnosis)])}" '
        f'title="{escape(f"Step {step.number}: {step.label}")}">{step.number}</a>'
        for step in steps
    )
    keys = '<span class="keys">orange: cause · red: fails · ← → or j k: previous and next step</span>'
    return f'<nav class="timeline">{ticks}{keys}</nav>'


def _index(steps: list[Step], diagnosis: Diagnosis | None) -> str:
    items = "".join(
        f'<li class="{" ".join(_marks(step, diagnosis)) or "fine"}">'
        f'<a href="#step-{step.number}">{escape(step.label)}</a></li>'
        for step in steps
    )
    return f'<ol class="toc" start="0">{items}</ol>'


def _step_section(steps: list[Step], step: Step, slots: int, protocol: str, diagnosis: Diagnosis | None) -> str:
    marks = _marks(step, diagnosis)
    badges = "".join(f'<span class="badge {mark}">{BADGES[mark]}</span>' for mark in marks if mark in BADGES)
    parts = [
        f'<section class="{" ".join(["step", *marks])}" id="step-{step.number}">',
        f"<h2>Step {step.number}: {escape(step.label)}{badges}</h2>",
        _picture(step.state, slots, protocol, step_removals(step)),
    ]
    if step.changes:
        items = "".join(f"<li><b>{escape(where)}</b>: {escape(text)}</li>" for where, text in step.changes)
        parts.append(f'<ul class="changes">{items}</ul>')
    note = None if diagnosis is None else diagnosis.cause_note(step.number)
    if note:
        parts.append(f'<p class="cause">⚑ Cause: {escape(note)}</p>')
    if step.failing:
        parts.append(f'<p class="violation">✗ Invariant violated: {escape(", ".join(step.failing))}</p>')
    parts.append(_reasons(steps, step))
    parts.append("</section>")
    return "\n".join(part for part in parts if part)


def _reasons(steps: list[Step], step: Step) -> str:
    """Why each invariant that starts failing at this step fails, where it can be said."""
    items = "".join(f"<li><b>{escape(name)}</b>: {escape(why)}</li>" for name, why in reasons(steps, step))
    return f'<ul class="why">{items}</ul>' if items else ""


def state_picture(state: State, protocol: str) -> str:
    """One state's picture, as a step of the page draws it: every replica's log up to the longest,
    with HW, LEO, role, ISR and epoch cache, and the controller (the explorer's, `kafka_mc.explorer`)."""
    return _picture(state, max(replica.leo for replica in state.replicas) + 1, protocol, {})


def _picture(state: State, slots: int, protocol: str, removals: dict[int, dict[int, Record]]) -> str:
    """The replicas' logs; `removals` are the records each replica (by index) lost at this step."""
    offsets = "".join(f'<th class="offset">{offset}</th>' for offset in range(slots))
    rows = "\n".join(_replica_row(state, index, slots, protocol, removals.get(index, {}))
                     for index in range(len(state.replicas)))
    committed = " ".join(record_at(msg, offset) for offset, msg in state.committed) or "none"
    caption = f"{controller_text(state)}. Committed so far: {committed}."
    return (f'<figure class="picture">\n<table class="logs">\n<thead><tr><th></th>{offsets}<th></th></tr></thead>\n'
            f"<tbody>\n{rows}\n</tbody>\n</table>\n<figcaption>{escape(caption)}</figcaption>\n</figure>")


def _replica_row(state: State, index: int, slots: int, protocol: str, removed: dict[int, Record]) -> str:
    replica = state.replicas[index]
    badge = '<span class="leader">L</span>' if state.controller.leader == index else ""
    down = "" if replica.alive else ' class="down"'
    cells = "".join(_slot(replica, offset, removed.get(offset)) for offset in range(slots))
    return (f'<tr{down}><th class="name">{replica_name(index)}{badge}</th>{cells}'
            f'<td class="info">{escape(_replica_info(state, index, protocol))}</td></tr>')


def _slot(replica: Replica, offset: int, removed: Record | None) -> str:
    """One offset of a replica's log: its record (or a free box), the record removed from it at
    this step struck out, and the HW and LEO markers that point to it."""
    boxes = []
    if offset < replica.leo:
        boxes.append(_record_box(replica.log[offset], "committed" if offset < replica.hw else ""))
    if removed is not None:
        boxes.append(_record_box(removed, "removed"))
    box = "".join(boxes) or '<div class="record free">-<span class="epoch">-</span></div>'
    markers = "".join(
        f'<span class="{kind.lower()}">▲{kind}</span>'
        for kind, position in (("HW", replica.hw), ("LEO", replica.leo))
        if position == offset
    )
    return f'<td class="slot">{box}<div class="markers">{markers}</div></td>'


def _record_box(record: Record, kind: str) -> str:
    classes = f"record {kind}".rstrip()
    title = ' title="removed at this step"' if kind == "removed" else ""
    epoch = f'<span class="epoch">e{record.epoch}</span>'
    return f'<div class="{classes}"{title}>{escape(record_name(record))}{epoch}</div>'


def _replica_info(state: State, index: int, protocol: str) -> str:
    replica = state.replicas[index]
    facts = [
        status_text(state, index),
        f"role {ROLE_NAMES[replica.role]}",
        f"leader epoch {epoch_text(replica.epoch)}",
        {"yes": "in ISR", "no": "not in ISR", "ELR": "eligible leader (ELR)"}[isr_membership(state, index)],
        f"epoch cache {epochs_text(replica)}",
    ]
    if replica.role in (FOLLOWER, TRUNCATING) and replica.leader_id != NO_LEADER:
        # only where the variant remembers it (`follower_skips`): why a LeaderAndIsr naming it is skipped
        facts.append(f"follows {replica_name(replica.leader_id)}")
    if replica.unflushed:
        facts.append(f"{replica.unflushed} record(s) not flushed")
    if replica.response:
        facts.append(f"fetch response in flight: {response_text(replica.response, protocol)}")
    return " · ".join(facts)
