"""A counterexample as a scenario file (`checker.scenario`'s TOML), to replay with `kafka-mc
replay`, to edit, and to pin with `[[checkpoint]]` tables as the shipped scenarios are."""

from __future__ import annotations

import tomli_w

from kafka_mc.checker.result import Trace
from kafka_mc.model.values import leader_name
from kafka_mc.properties import failing_invariants


def scenario_toml(trace: Trace, invariant: str | None, title: str) -> str:
    """The scenario of a replication trace: its configuration, initial leader and steps, expecting
    every invariant the trace breaks on the way (so that its replay matches)."""
    states = list(trace.states())
    broken = sorted({name for state in states for name in failing_invariants(state)})
    document = {
        "title": title,
        "source": f"kafka-mc, a counterexample to {invariant}" if invariant else "kafka-mc",
        "initial_leader": leader_name(states[0]),
        "steps": [str(action) for action in trace.actions],
        "expected_violations": broken,
        "config": trace.config.to_dict(),
    }
    return tomli_w.dumps(document)
