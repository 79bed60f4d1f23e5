"""A counterexample as a scenario file (`checker.scenario`'s TOML), to replay with `kafka-mc
replay`, to edit, and to pin with `[[checkpoint]]` tables as the shipped scenarios are."""

from __future__ import annotations

from typing import Any

import tomli_w

from kafka_mc.checker.result import Trace
from kafka_mc.model.values import leader_name


def scenario_toml(trace: Trace, invariant: str | None, title: str) -> str:
    """The scenario of a trace of any model: its configuration, initial state and steps, expecting
    every invariant the trace breaks on the way (so that its replay matches). A replication trace
    names its initial leader, another model's trace the model and the initial state's index."""
    broken = sorted({name for names in trace.broken() for name in names})
    document: dict[str, Any] = {"title": title}
    if trace.model.name != "replication":
        document["model"] = trace.model.name
    document["source"] = f"kafka-mc, a counterexample to {invariant}" if invariant else "kafka-mc"
    if trace.model.name == "replication":
        document["initial_leader"] = leader_name(trace.model.initial_states()[trace.initial])
    else:
        document["initial"] = trace.initial
    document |= {"steps": [str(action) for action in trace.actions], "expected_violations": broken,
                 "config": trace.config.to_dict()}
    return tomli_w.dumps(document)
