"""The steps of a trace as every report shows them: numbered, with the invariants that fail
and what changed since the step before."""

from __future__ import annotations

from typing import NamedTuple

from kafka_mc.checker.result import Trace
from kafka_mc.model import PROTOCOLS, Action, State
from kafka_mc.model.state import (
    ROLE_NAMES,
    UNKNOWN,
    FetchResponse,
    Record,
    Replica,
    record_name,
    replica_name,
)
from kafka_mc.model.values import followed_name, leader_name

from .views import elr_text, epochs_text, isr_state_text, isr_text, status_text

CONTROLLER = "Controller"


class Change(NamedTuple):
    """One visible difference between two consecutive states; `where` is a replica name or CONTROLLER."""

    where: str
    text: str


class Step(NamedTuple):
    """A numbered state of a trace: step 0 is the initial state, step n follows the n-th action."""

    number: int
    action: Action | None
    before: State | None
    state: State
    failing: tuple[str, ...]
    changes: tuple[Change, ...]

    @property
    def label(self) -> str:
        return "Init" if self.action is None else str(self.action)


def trace_steps(trace: Trace) -> list[Step]:
    """Every step of the trace with its failing invariants and its changes."""
    steps: list[Step] = []
    before: State | None = None
    for number, (action, state, broken) in enumerate(trace.checked_steps()):
        changes = () if before is None else tuple(state_changes(before, state))
        steps.append(Step(number, action, before, state, broken, changes))
        before = state
    return steps


def first_failure(steps: list[Step], invariant: str | None) -> int | None:
    """The number of the first step where `invariant` fails, if any."""
    return next((step.number for step in steps if invariant in step.failing), None)


def newly_failing(steps: list[Step], step: Step) -> tuple[str, ...]:
    """The invariants that fail at `step` but not at the step before."""
    earlier = steps[step.number - 1].failing if step.number else ()
    return tuple(name for name in step.failing if name not in earlier)


def state_changes(before: State, after: State) -> list[Change]:
    """What a reader sees change: per replica its log, LEO, HW, epoch cache, status, role, leader
    epoch and the leader it follows, then the controller's leader, epoch, ISR and ELR."""
    changes = [
        Change(replica_name(index), text)
        for index in range(len(before.replicas))
        for text in _replica_changes(before, after, index)
    ]
    controller_values = (
        ("leader", leader_name(before), leader_name(after)),
        ("epoch", before.controller.epoch, after.controller.epoch),
        ("ISR", isr_text(before), isr_text(after)),
        ("ELR", elr_text(before), elr_text(after)),
    )
    changes += [Change(CONTROLLER, _moved(label, old, new)) for label, old, new in controller_values if old != new]
    return changes


def _replica_changes(before: State, after: State, index: int) -> list[str]:
    old, new = before.replicas[index], after.replicas[index]
    removed = removed_records(old, new)
    texts = [f"truncated to {min(removed)}"] if removed else []
    values = (
        ("LEO", old.leo, new.leo),
        ("HW", old.hw, new.hw),
        ("unflushed", old.unflushed, new.unflushed),
        ("epoch cache", f"[{epochs_text(old)}]", f"[{epochs_text(new)}]"),
        ("status", status_text(before, index), status_text(after, index)),
        ("role", ROLE_NAMES[old.role], ROLE_NAMES[new.role]),
        ("leader epoch", epoch_text(old.epoch), epoch_text(new.epoch)),
        ("leader id", followed_name(old), followed_name(new)),
    )
    return texts + [_moved(label, before, after) for label, before, after in values if before != after]


def removed_records(old: Replica, new: Replica) -> dict[int, Record]:
    """The records of `old` that `new` no longer holds at their offsets (a truncation, or a crash
    losing unflushed records), by offset."""
    kept = _common_prefix(old.log, new.log)
    return dict(enumerate(old.log[kept:], start=kept))


def step_removals(step: Step) -> dict[int, dict[int, Record]]:
    """The records each replica (by index) lost at this step, for the replicas that lost any."""
    if step.before is None:
        return {}
    pairs = zip(step.before.replicas, step.state.replicas)
    return {index: removed for index, (old, new) in enumerate(pairs) if (removed := removed_records(old, new))}


def record_at(msg: int, offset: int) -> str:
    """A record by message number and offset: `m2@1`."""
    return f"m{msg}@{offset}"


def _common_prefix(first: tuple, second: tuple) -> int:
    return next((i for i, (a, b) in enumerate(zip(first, second)) if a != b), min(len(first), len(second)))


def _moved(label: str, old: object, new: object) -> str:
    return f"{label} {old}→{new}"


def controller_text(state: State) -> str:
    """The controller's partition state in one line."""
    return f"Controller: leader {leader_name(state)}, epoch {state.controller.epoch}, ISR {isr_state_text(state)}"


def epoch_text(value: int) -> str:
    """An epoch or offset, or "?" when UNKNOWN."""
    return "?" if value == UNKNOWN else str(value)


def response_text(response: FetchResponse, protocol: str) -> str:
    """A FetchResponse as its content: `records m2 m3, HW=1`, `OffsetOutOfRange(LEO=1)` or, under
    a protocol that truncates on the fetch, `DivergingEpoch(truncate to 0), HW=1`."""
    if response.out_of_range and PROTOCOLS[protocol].truncate_on_fetch:
        return f"DivergingEpoch(truncate to {response.offset}), HW={response.hw}"
    if response.out_of_range:
        return f"OffsetOutOfRange(LEO={response.offset})"
    records = " ".join(record_name(r) for r in response.records) or "none"
    return f"records {records}, HW={response.hw}"
