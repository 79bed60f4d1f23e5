"""Human-readable summaries of a check and of a scenario replay."""

from __future__ import annotations

from typing import Any, Callable

from tabulate import tabulate

from kafka_mc.checker.graph import Recoverability
from kafka_mc.checker.result import CheckResult, KernelStats, Trace
from kafka_mc.checker.scenario import Replay
from kafka_mc.control.replication import ReplicationSystem
from kafka_mc.model import Config
from kafka_mc.model.values import leader_name, plain_values
from kafka_mc.properties import INVARIANTS

from .views import TABLE_HEADERS, isr_state_text, replica_rows


def config_text(config: Config) -> str:
    return ", ".join(f"{key}={value}" for key, value in config.to_dict().items())


def invariant_verdicts(result: CheckResult, invariants: tuple[str, ...] | None = None) -> dict[str, str]:
    """Each invariant's verdict: `violated (n steps)`, `holds`, or `not violated so far` for an incomplete run.
    `invariants` names them (default: those the run checked)."""
    lengths = {v.invariant: len(v.trace) for v in result.violations}
    if result.bounded_to is not None:
        unknown = f"no violation up to depth {result.stats.depth}"
    else:
        unknown = "holds" if result.complete else "not violated so far"
    names = invariants if invariants is not None else result.invariants
    if names is None:
        names = tuple(p.name for p in INVARIANTS)
    return {name: f"violated ({lengths[name]} steps)" if name in lengths else unknown for name in names}


def result_text(result: CheckResult, goals: tuple[Recoverability, ...] = (),
                invariants: tuple[str, ...] | None = None, coverage: bool = False) -> str:
    """The summary of a run: what was explored, each property's verdict, each AG EF `goal` decided on
    the state graph, and (`coverage`) each action's coverage; an action a complete run never found
    enabled is always named."""
    stats = result.stats
    lines = [f"Checked {config_text(result.config)} with the {result.engine} engine."]
    if result.bounded_to is not None:
        lines.append(f"Bounded model checking to depth {result.bounded_to} ({result.stopped_because}): "
                     "no violation up to a depth is not a proof that a property holds.")
        lines.append(f"Every behaviour of up to {stats.depth} steps was searched, {stats.seconds:.2f} s.")
    else:
        if result.complete:
            lines.append("Model checking completed: every reachable state was explored.")
        elif result.every_witness_reached:
            lines.append("Model checking completed: every witness was reached (with no invariant to check, the "
                         "search stopped there, before every reachable state was explored).")
        else:
            lines.append(f"Model checking INCOMPLETE ({result.stopped_because}): this is not a pass.")
        lines.append(f"{stats.states_generated} states generated, {stats.distinct_states} distinct states found, "
                     f"depth {stats.depth}, {stats.seconds:.2f} s ({stats.states_per_second:,.0f} distinct states/s).")
        if isinstance(stats, KernelStats):  # the compiled kernel's own figures
            lines.append(f"Compiling (or loading) the kernel took {stats.compile_seconds:.2f} s before exploring. "
                         f"The probability of a fingerprint collision is calculated (optimistic): "
                         f"{stats.collision_probability:.1E}.")
    rows = [(name, verdict) for name, verdict in invariant_verdicts(result, invariants).items()]
    rows += [(name, "reached" if reached else ("NOT REACHED" if result.complete else "not reached so far"))
             for name, reached in result.witnesses.items()]
    for goal in goals:
        verdict = "holds" if goal.holds else f"violated: {goal.unrecoverable:,} states can never recover"
        rows.append((f"{goal.property} (recoverability)", verdict))
    lines += ["", tabulate(rows, headers=("property", "verdict"))]
    if goals:
        lines.append(f"Recoverability is decided on the whole state graph ({goals[0].states:,} states), "
                     "built apart from the run above, whatever it explored.")
    if coverage:
        lines += ["", coverage_text(result)]
    if result.never_enabled:
        lines.append(f"Warning: never enabled in this complete run: {', '.join(result.never_enabled)} (vacuous: "
                     "the bounds or settings leave these actions no state to fire in).")
    return "\n".join(lines)


def coverage_text(result: CheckResult) -> str:
    """Each action's coverage, as TLC's `-coverage` reports it, or why there is none."""
    if result.coverage is None:
        return f"Coverage: the {result.engine} engine does not count it."
    rows = [(entry.action, f"{entry.enabled:,}", f"{entry.new_states:,}") for entry in result.coverage]
    return tabulate(rows, headers=("action", "enabled (successors)", "new states"), colalign=("left", "right", "right"))


def replay_text(replay: Replay) -> str:
    scenario = replay.scenario
    parts = [f"{scenario.title}", f"source: {scenario.source}", f"config: {config_text(scenario.config)}", ""]
    model = scenario.trace.model
    describe = _replica_table if isinstance(model, ReplicationSystem) else _control_changes(scenario.trace)
    for step in replay.steps:
        parts += describe(step)
        fresh = [name for name in step.broken if replay.first_breaks[name] == step.number]
        if fresh:
            parts.append(f"<<< {'invariants' if len(fresh) > 1 else 'invariant'} {', '.join(fresh)} "
                         f"{'break' if len(fresh) > 1 else 'breaks'} here >>>")
        parts += [f"!!! {mismatch}" for mismatch in step.mismatches]
        parts.append("")
    mismatches = replay.mismatches
    if mismatches:
        parts.append("The replay does NOT match the scenario:")
        parts += [f"  - {mismatch}" for mismatch in mismatches]
    else:
        breaks = ", ".join(f"{name} at step {n}" for name, n in replay.first_breaks.items()) or "none"
        parts.append(f"The replay matches every checkpoint of the scenario; invariants broken: {breaks}.")
    return "\n".join(parts)


def _replica_table(step) -> list[str]:
    state = step.state
    return [f"Step {step.number}: {step.action}    leader {leader_name(state)}, "
            f"epoch {state.controller.epoch}, ISR {isr_state_text(state)}",
            tabulate(replica_rows(state), headers=TABLE_HEADERS)]


def _control_changes(trace: Trace) -> Callable[[Any], list[str]]:
    """A control-plane step: its action, then every variable that changed (all of them at step 0)."""
    previous: dict = {}

    def describe(step) -> list[str]:
        values = plain_values(trace.model, step.state)
        changed = [f"    {name} = {value}" for name, value in values.items() if previous.get(name) != value]
        previous.clear()
        previous.update(values)
        return [f"Step {step.number}: {step.action}", *changed]
    return describe
