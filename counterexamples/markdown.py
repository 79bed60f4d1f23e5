"""Traces as Markdown: a Mermaid sequence diagram of the messages, then a table per step."""

from __future__ import annotations

from tabulate import tabulate

from kafka_mc.checker.result import Trace
from kafka_mc.model import PROTOCOLS
from kafka_mc.model.state import UNKNOWN, replica_name
from kafka_mc.model.values import leader_name

from .explain import Diagnosis, diagnose, reasons, verdict
from .steps import (
    CONTROLLER,
    Change,
    Step,
    controller_text,
    epoch_text,
    newly_failing,
    record_at,
    response_text,
    step_removals,
    trace_steps,
)
from .views import TABLE_HEADERS, replica_rows


def trace_markdown(trace: Trace, invariant: str | None, title: str) -> str:
    """A report: configuration, violated invariant, sequence diagram and every step's state."""
    steps = trace_steps(trace)
    diagnosis = diagnose(steps, invariant)
    lines = [f"# {title}", "", "## Configuration", ""]
    lines += [f"- {key}: `{value}`" for key, value in trace.config.to_dict().items()]
    lines += ["", f"**Verdict:** {verdict(invariant, diagnosis)}", "", "## Sequence", "",
              *sequence_diagram(steps, trace.config.protocol)]
    lines += ["", "## Steps"]
    for step in steps:
        lines += ["", *_step_section(steps, step, diagnosis)]
    return "\n".join(lines) + "\n"


def _step_section(steps: list[Step], step: Step, diagnosis: Diagnosis | None) -> list[str]:
    """A step's table and controller; the records removed at it struck out, the cause of the
    diagnosed violation, and why each invariant that starts failing here fails."""
    state = step.state
    lines = [
        f"### Step {step.number}: {step.label}",
        "",
        tabulate(replica_rows(state), headers=TABLE_HEADERS, tablefmt="github"),
        "",
        controller_text(state),
    ]
    lines += _removed(step)
    note = None if diagnosis is None else diagnosis.cause_note(step.number)
    if note:
        lines += ["", f"**⚑ Cause:** {note}"]
    if step.failing:
        lines += ["", f"**✗ Invariant violated: {', '.join(step.failing)}**"]
    why = reasons(steps, step)
    if why:
        lines += ["", *(f"- {name}: {text}" for name, text in why)]
    return lines


def _removed(step: Step) -> list[str]:
    """The records each replica lost at this step, struck out."""
    removals = step_removals(step)
    if not removals:
        return []
    struck = {index: " ".join(f"~~{record_at(record.msg, offset)}~~" for offset, record in records.items())
              for index, records in removals.items()}
    removed = "; ".join(f"{replica_name(index)} {records}" for index, records in struck.items())
    return ["", f"Removed at this step: {removed}"]


def sequence_diagram(steps: list[Step], protocol: str) -> list[str]:
    """A fenced Mermaid sequenceDiagram: the messages of each action, then one note per
    participant on what it did and what changed."""
    replicas = [replica_name(i) for i in range(len(steps[0].state.replicas))]
    everyone = f"{replicas[0]},{replicas[-1]}"
    lines = ["```mermaid", "sequenceDiagram"]
    lines += [f"    participant {name}" for name in ("Producer", CONTROLLER, *replicas)]
    responders: dict[int, int] = {}  # follower -> the leader that built its FetchResponse in flight
    for step in steps[1:]:
        messages, notes = _exchange(step, responders, protocol)
        lines += [f"    {message}" for message in messages]
        texts_by_place: dict[str, list[str]] = {}
        for where, text in (*notes, *step.changes):
            texts_by_place.setdefault(where, []).append(text)
        lines += [f"    Note over {where}: {'<br/>'.join(texts)}" for where, texts in texts_by_place.items()]
        starting = newly_failing(steps, step)
        if starting:
            lines.append(f"    Note over {everyone}: ✗ {', '.join(starting)} violated")
    lines.append("```")
    return lines


def _exchange(step: Step, responders: dict[int, int], protocol: str) -> tuple[list[str], list[Change]]:
    """The Mermaid messages of one action, and the notes that say what a participant did."""
    action, before, after = step.action, step.before, step.state
    assert action is not None and before is not None  # not the initial step
    index = action.replica
    name = replica_name(index)
    leader = leader_name(before)
    match action.name:
        case "ProducerWrite":
            return [f"Producer->>{name}: write m{after.written}"], []
        case "LeaderHandleFetchRequest":
            responders[index] = before.controller.leader
            built = after.replicas[index].response
            assert built, "LeaderHandleFetchRequest builds a FetchResponse"
            response = response_text(built, protocol)
            return [f"{name}->>{leader}: Fetch(offset={before.replicas[index].leo})"], [
                Change(leader, f"builds response: {response}")
            ]
        case "FollowerHandleFetchResponse":
            sender = replica_name(responders.pop(index))
            handled = before.replicas[index].response
            assert handled, "FollowerHandleFetchResponse handles a FetchResponse"
            return [f"{sender}-->>{name}: {response_text(handled, protocol)}"], []
        case "FollowerTruncateByLeaderEpoch":
            epochs = before.replicas[index].epochs
            latest = epochs[-1][0] if epochs else UNKNOWN
            answering = before.leader
            assert answering is not None, "the follower asks the partition's leader"
            epoch, end_offset = PROTOCOLS[protocol].leader_answer(answering, before.replicas[index])
            answer = f"end offset {'UNDEFINED' if end_offset == UNKNOWN else end_offset}"
            return [
                f"{name}->>{leader}: OffsetsForLeaderEpoch(epoch {epoch_text(latest)})",
                f"{leader}-->>{name}: {answer}" + ("" if epoch == UNKNOWN else f" of epoch {epoch_text(epoch)}"),
            ], []
        case "LeaderShrinkIsr":
            return [f"{leader}->>{CONTROLLER}: shrink ISR (remove {name})"], []
        case "BecomeFollower" | "ControllerElectLeader":
            leader_and_isr = f"LeaderAndIsr(leader {leader_name(after)}, epoch {after.controller.epoch})"
            return [f"{CONTROLLER}->>{name}: {leader_and_isr}"], []
        case "ReplicaCrash":
            return [], [Change(name, "crashes")]
        case "ReplicaRestart":
            return [], [Change(name, "restarts")]
        case "ControllerNoticeFailure":
            return [f"{name}--x{CONTROLLER}: session expired"], []
    return [], [Change(name, str(action))]
