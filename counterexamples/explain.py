"""Why an invariant fails, in words, and the step that causes it, both read from the trace's states.

The facts come from the invariants' own witnesses (`properties.invariants`): the record the
leader lacks, or the offset where two replicas diverge. The cause is found by walking back from
the step where the failure shows to the last step at which that fact became true: the record left
the log of the replica that ends up leading (a truncation, a crash losing unflushed records), that
replica became leader without it, or the second of two different records reached their offset.
"""

from __future__ import annotations

from typing import Callable, NamedTuple

from kafka_mc.model.state import Record, Replica, State, record_name, replica_name
from kafka_mc.properties.invariants import diverging_offset, missing_acked, missing_from_leader

from .steps import Step, first_failure, newly_failing, record_at, removed_records

History = Callable[[State], tuple[tuple[int, int], ...]]

# the invariants that a record of a history stays at its offset in the leader's log: the history,
# and what being in it means
HISTORIES: dict[str, tuple[History, str]] = {
    "NoCommittedDataLoss": (lambda state: state.committed, "is committed (below a HW)"),
    "NoConsumedRecordLost": (lambda state: state.consumed,
                             "was readable by a consumer (below an acting leader's HW)"),
}


class Cause(NamedTuple):
    """The step that causes a violation: its number, its action and what happened there."""

    number: int
    action: str
    what: str


class Diagnosis(NamedTuple):
    """A named invariant's failure in a trace: the step where it first shows, why, and its cause."""

    invariant: str
    shows: int
    why: str | None
    cause: Cause | None

    def cause_note(self, number: int) -> str | None:
        """At the step that causes the violation: what happened there and where the failure shows."""
        if self.cause is None or self.cause.number != number:
            return None
        return f"{self.cause.what}; {self.invariant} fails from step {self.shows}."


class Loss(NamedTuple):
    """A record the live leader lacks: at `offset`, or (an acknowledged write) anywhere when None."""

    invariant: str
    leader: int
    msg: int
    offset: int | None

    def held_by(self, replica: Replica) -> bool:
        """Whether the replica holds the record where the invariant wants it."""
        if self.offset is None:
            return any(record.msg == self.msg for record in replica.log)
        return self.offset < replica.leo and replica.log[self.offset].msg == self.msg

    def text(self, state: State) -> str:
        leader = state.replicas[self.leader]
        name = replica_name(self.leader)
        if self.offset is None:
            return f"m{self.msg} was acknowledged, but leader {name}'s log lacks it"
        there = (f"has {record_name(leader.log[self.offset])} at offset {self.offset}" if self.offset < leader.leo
                 else f"ends at offset {leader.leo}")
        return f"{record_at(self.msg, self.offset)} {HISTORIES[self.invariant][1]}, but leader {name}'s log {there}"

    def cause(self, steps: list[Step]) -> Cause | None:
        """The last removal of the record from the replica that ends up leading; failing one, the
        last step at which that replica became the live leader."""
        index = self.leader
        removal = _last_step(steps, lambda before, after: self.held_by(before.replicas[index])
                             and not self.held_by(after.replicas[index]))
        if removal is not None:
            return Cause(removal.number, removal.label, _removal_text(removal, index))
        elected = _last_step(steps, lambda before, after: not _leads(before, index) and _leads(after, index))
        if elected is None:
            return None
        lacking = f"m{self.msg}" if self.offset is None else record_at(self.msg, self.offset)
        return Cause(elected.number, elected.label, f"{replica_name(index)} becomes leader without {lacking}")


class Divergence(NamedTuple):
    """Two replicas holding different records at an offset below both their HWs."""

    first: int
    second: int
    offset: int

    def record(self, state: State, index: int) -> Record | None:
        """The record the replica holds at the offset, if any."""
        replica = state.replicas[index]
        return replica.log[self.offset] if self.offset < replica.leo else None

    def differs(self, state: State) -> bool:
        """Whether both replicas hold a record at the offset, and not the same one."""
        one, other = self.record(state, self.first), self.record(state, self.second)
        return one is not None and other is not None and one != other

    def holding(self, state: State, index: int) -> str:
        record = self.record(state, index)
        assert record is not None  # the replica diverges at the offset
        return f"{replica_name(index)} holds {record_at(record.msg, self.offset)}"

    def text(self, state: State) -> str:
        return f"{self.holding(state, self.first)}, {self.holding(state, self.second)}, both below their HWs"

    def cause(self, steps: list[Step]) -> Cause | None:
        """The step at which the second of the two records reached the offset."""
        step = _last_step(steps, lambda before, after: not self.differs(before) and self.differs(after))
        if step is None or step.before is None:
            return None
        unchanged = self.record(step.before, self.first) == self.record(step.state, self.first)
        changed, other = (self.second, self.first) if unchanged else (self.first, self.second)
        return Cause(step.number, step.label,
                     f"now {self.holding(step.state, changed)} while {self.holding(step.state, other)}")


def violation_fact(invariant: str, state: State) -> Loss | Divergence | None:
    """What breaks `invariant` in `state`, as its witness finds it; None if it holds or is not explained."""
    leader = state.controller.leader
    if invariant in HISTORIES:
        missing = missing_from_leader(state, HISTORIES[invariant][0](state))
        return None if missing is None else Loss(invariant, leader, missing[1], missing[0])
    if invariant == "NoAckedDataLoss":
        msg = missing_acked(state)
        return None if msg is None else Loss(invariant, leader, msg, None)
    if invariant == "NoLogDivergence":
        found = diverging_offset(state)
        return None if found is None else Divergence(*found)
    return None


def explain(invariant: str, state: object) -> str | None:
    """Why `invariant` fails in a replication state, in words; None where it holds, where the state
    is another model's, or for an invariant this module does not explain."""
    if not isinstance(state, State):
        return None
    fact = violation_fact(invariant, state)
    return None if fact is None else fact.text(state)


def reasons(steps: list[Step], step: Step) -> list[tuple[str, str]]:
    """Each invariant that starts failing at `step` with why it fails, where this module can say."""
    return [(name, why) for name in newly_failing(steps, step) if (why := explain(name, step.state))]


def diagnose(steps: list[Step], invariant: str | None) -> Diagnosis | None:
    """Where `invariant` first fails in the steps, why, and the step that causes it."""
    shows = None if invariant is None else first_failure(steps, invariant)
    if invariant is None or shows is None:
        return None
    state = steps[shows].state
    fact = violation_fact(invariant, state)
    if fact is None:
        return Diagnosis(invariant, shows, None, None)
    return Diagnosis(invariant, shows, fact.text(state), fact.cause(steps[:shows + 1]))


def verdict(invariant: str | None, diagnosis: Diagnosis | None) -> str:
    """One sentence: the violated invariant, why, the step that causes it and the step where it shows."""
    if invariant is None:
        return "No invariant is named as violated."
    if diagnosis is None:
        return f"Invariant {invariant} is violated."
    if diagnosis.why is None:
        return f"Invariant {invariant} is violated, first at step {diagnosis.shows}."
    cause = diagnosis.cause
    if cause is None:
        where = f"shows at step {diagnosis.shows}"
    elif cause.number == diagnosis.shows:
        where = f"caused and shows at step {cause.number} ({cause.action}: {cause.what})"
    else:
        where = f"caused at step {cause.number} ({cause.action}: {cause.what}); shows at step {diagnosis.shows}"
    return f"Invariant {invariant} is violated: {diagnosis.why}; {where}."


def _last_step(steps: list[Step], became: Callable[[State, State], bool]) -> Step | None:
    """The last step (after the initial one) whose action made `became(before, after)` true."""
    return next((step for step in reversed(steps) if step.before is not None and became(step.before, step.state)),
                None)


def _leads(state: State, index: int) -> bool:
    return state.controller.leader == index and state.replicas[index].alive


def _removal_text(step: Step, index: int) -> str:
    """What removed the records a replica lost at this step: a crash, or a truncation."""
    assert step.before is not None  # a removal happens at an action
    old, new = step.before.replicas[index], step.state.replicas[index]
    removed = removed_records(old, new)
    records = ", ".join(record_at(record.msg, offset) for offset, record in removed.items())
    name = replica_name(index)
    if old.alive and not new.alive:
        return f"{name} crashes, losing unflushed {records}"
    kept = min(removed)
    target = "its HW" if kept == new.hw else f"offset {kept}"
    return f"{name} truncates to {target}, removing {records}"
