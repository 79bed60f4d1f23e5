"""Plain views of states and results, shared by every renderer and the JSON output."""

from __future__ import annotations

from functools import partial

from kafka_mc.checker.result import CheckResult, KernelStats, Trace
from kafka_mc.model.state import (
    ROLE_NAMES,
    STATUS_NAMES,
    Replica,
    State,
    isr_members,
    record_name,
    replica_name,
)
from kafka_mc.model.values import acked_names, followed_name, leader_name, plain_values

TABLE_HEADERS = ("replica", "status", "role", "log (epoch)", "LEO", "HW", "epoch cache", "ISR", "leader epoch",
                 "leader id")


def log_text(replica: Replica) -> str:
    """The records with their epochs; a record only in the page cache (not flushed) ends in `*`."""
    flushed = replica.leo - replica.unflushed
    return " ".join(f"{record_name(r)}({r.epoch})" + ("*" if offset >= flushed else "")
                    for offset, r in enumerate(replica.log)) or "-"


def status_text(state: State, index: int) -> str:
    """The replica's status, with the network failures it is behind."""
    cut = [name for mask, name in ((state.zk_cut, "no ZooKeeper"), (state.peer_cut, "no brokers"))
           if mask >> index & 1]
    return ", ".join([STATUS_NAMES[state.replicas[index].status], *cut])


def epochs_text(replica: Replica) -> str:
    return " ".join(f"{epoch}=>{start}" for epoch, start in replica.epochs) or "-"


def replicas_text(mask: int) -> str:
    """A bitmask of replicas as their names, e.g. `{A, C}`."""
    return "{" + ", ".join(replica_name(m) for m in isr_members(mask)) + "}"


def isr_text(state: State) -> str:
    return replicas_text(state.controller.isr)


def elr_text(state: State) -> str:
    """The eligible leader replicas (KIP-966; empty in every variant without them)."""
    return replicas_text(state.controller.elr)


def isr_state_text(state: State) -> str:
    """The ISR, followed by the ELR and the last known leader where they are not empty and the requests in
    flight where there are some: `{A}`, `{A}, ELR {B, C}`, `{}, last known leader A`, `{A}, AlterPartition
    adding B in flight (B registered again since)` or `{A, B}, fetch of B at offset 1 in flight (sent before B
    crashed)`."""
    controller = state.controller
    text = isr_text(state) + (f", ELR {elr_text(state)}" if controller.elr else "")
    if controller.last_known_elr:
        text += ", last known leader " + ", ".join(replica_name(m) for m in isr_members(controller.last_known_elr))
    if controller.proposal:
        adding = ", ".join(replica_name(m) for m in isr_members(controller.proposal))
        text += f", AlterPartition adding {adding} in flight"
        if controller.reregistered:
            again = ", ".join(replica_name(m) for m in isr_members(controller.reregistered))
            text += f" ({again} registered again since)"
    for index, replica in enumerate(state.replicas):
        if replica.delayed_fetch:
            name = replica_name(index)
            text += f", fetch of {name} at offset {replica.delayed_fetch - 1} in flight"
            text += f" (sent before {name} crashed)" if replica.delayed_fetch_stale else ""
    return text


def isr_membership(state: State, index: int) -> str:
    """"yes", "no", or "ELR" for an eligible leader replica outside the ISR (KIP-966)."""
    if state.controller.isr >> index & 1:
        return "yes"
    return "ELR" if state.controller.elr >> index & 1 else "no"


def replica_rows(state: State) -> list[tuple]:
    """One row per replica for a step table (see TABLE_HEADERS)."""
    return [
        (
            replica_name(index),
            status_text(state, index),
            ROLE_NAMES[replica.role],
            log_text(replica),
            replica.leo,
            replica.hw,
            epochs_text(replica),
            isr_membership(state, index),
            replica.epoch,
            followed_name(replica),
        )
        for index, replica in enumerate(state.replicas)
    ]


def replica_view(replica: Replica) -> dict:
    response = replica.response
    return {
        "log": [{"msg": record_name(r), "epoch": r.epoch} for r in replica.log],
        "unflushed": replica.unflushed,
        "leo": replica.leo,
        "hw": replica.hw,
        "epoch_cache": [{"epoch": e, "start_offset": s} for e, s in replica.epochs],
        "status": STATUS_NAMES[replica.status],
        "role": ROLE_NAMES[replica.role],
        "leader_epoch": replica.epoch,
        "leader_id": followed_name(replica),
        "fetch_response": None if not response else {
            "offset": response.offset,
            "hw": response.hw,
            "records": [record_name(r) for r in response.records],
            "out_of_range": response.out_of_range,
        },
        "remote_leos": {replica_name(i): leo for i, leo in enumerate(replica.remote_leos)},
    }


def state_view(state: State) -> dict:
    """A JSON-ready picture of a state, keyed by replica name."""
    return {
        "replicas": {replica_name(i): replica_view(r) for i, r in enumerate(state.replicas)},
        "controller": {
            "leader": leader_name(state),
            "leader_epoch": state.controller.epoch,
            "isr": [replica_name(m) for m in isr_members(state.controller.isr)],
            "elr": [replica_name(m) for m in isr_members(state.controller.elr)],
            "last_known_elr": [replica_name(m) for m in isr_members(state.controller.last_known_elr)],
        },
        "written": state.written,
        "crashes": state.crashes,
        "disk_failures": state.disk_failures,  # counted where fewer than the crashes may lose the disk
        "committed": [{"offset": o, "msg": f"m{m}"} for o, m in state.committed],
        "consumed": [{"offset": o, "msg": f"m{m}"} for o, m in state.consumed],
        "acked": acked_names(state),
        "cut_from_zookeeper": [replica_name(m) for m in isr_members(state.zk_cut)],
        "cut_from_brokers": [replica_name(m) for m in isr_members(state.peer_cut)],
    }


def trace_view(trace: Trace) -> list[dict]:
    """The steps of a trace: the initial state under action "Init", then each action and the state
    after it (a replication state as `state_view` gives it, another model's as its variables)."""
    view = state_view if trace.model.name == "replication" else partial(plain_values, trace.model)
    return [{"action": "Init" if action is None else str(action), "state": view(state)}
            for action, state in trace.steps()]


def result_view(result: CheckResult, model_name: str = "replication") -> dict:
    """The JSON summary of a check (`kafka-mc check --format json`, `kafka-mc control`) of the
    model named `model_name`."""
    stats = result.stats
    protocol = getattr(result.config, "protocol", None)
    return {
        "model": model_name,
        "engine": result.engine,
        **({"protocol": protocol} if protocol is not None else {}),
        "config": result.config.to_dict(),
        "complete": result.complete,
        "stopped_because": result.stopped_because or None,
        "distinct_states": stats.distinct_states,
        "states_generated": stats.states_generated,
        "depth": stats.depth,
        "bounded_to": result.bounded_to,
        "seconds": round(stats.seconds, 3),
        "states_per_second": round(stats.states_per_second, 1),
        "violations": [
            {"invariant": v.invariant, "length": len(v.trace), "trace": trace_view(v.trace)}
            for v in result.violations
        ],
        "witnesses": result.witnesses,
        "coverage": None if result.coverage is None else [
            {"action": entry.action, "enabled": entry.enabled, "new_states": entry.new_states}
            for entry in result.coverage],
        "never_enabled": list(result.never_enabled),
        "passed": result.passed,
        **({"compile_seconds": round(stats.compile_seconds, 3), "collision_probability": stats.collision_probability,
            "visited_bytes": stats.visited_bytes} if isinstance(stats, KernelStats) else {}),
    }


def state_label(state: State) -> str:
    """A short multi-line label: one line per replica, then the controller."""
    lines = [
        f"{replica_name(i)} {status_text(state, i)} {ROLE_NAMES[r.role]}: [{log_text(r)}] LEO={r.leo} HW={r.hw}"
        for i, r in enumerate(state.replicas)
    ]
    lines.append(f"leader={leader_name(state)} epoch={state.controller.epoch} ISR={isr_text(state)}")
    return "\n".join(lines)
