"""A controller-model trace as a Mermaid sequence diagram: ZooKeeper and the brokers as
participants, the race for /controller, session expiries and every LeaderAndIsr request from
its sender to the broker that handles it, obeyed or ignored."""

from __future__ import annotations

from kafka_mc.checker.result import Trace
from kafka_mc.control.controller import ControllerState


def controller_sequence(trace: Trace) -> list[str]:
    """The fenced Mermaid block's lines."""
    brokers = trace.config.brokers
    lines = ["```mermaid", "sequenceDiagram", "    participant ZK as ZooKeeper",
             *(f"    participant B{b} as broker {b}" for b in range(brokers))]
    steps = trace.steps()
    for (_, before), (action, after) in zip(steps, steps[1:]):
        lines += [f"    {line}" for line in _messages(before, action, after)]
    return [*lines, "```"]


def _messages(before: ControllerState, action, after: ControllerState) -> list[str]:
    name, args = action
    if name == "BrokerWinsElection":
        (b,) = args
        return [f"B{b}->>ZK: create /controller, /controller_epoch = {after.zk_epoch}",
                f"Note over B{b}: controller in epoch {after.zk_epoch}, sends LeaderAndIsr to every broker"]
    if name == "BrokerCreatesControllerZnode":
        (b,) = args
        return [f"B{b}->>ZK: create /controller, read /controller_epoch = {before.zk_epoch}"]
    if name == "ControllerWritesEpoch":
        (b,) = args
        return [f"B{b}->>ZK: write /controller_epoch = {after.zk_epoch}",
                f"Note over B{b}: controller in epoch {after.acting[b]}, sends LeaderAndIsr to every broker"]
    if name == "ControllerResign":
        (b,) = args
        return [f"Note over B{b}: notices it lost /controller and resigns"]
    if name == "ControllerSendLeaderAndIsr":
        b, target = args
        return [f"Note over B{b}: sends LeaderAndIsr (epoch {before.acting[b]}) to broker {target}"]
    if name == "BrokerHandleLeaderAndIsr":
        target, epoch, sender = args
        newest = before.obeyed[target]
        if epoch >= newest:
            verdict = "obeys"
        elif after.obeyed[target] == epoch:
            verdict = f"obeys it, going back from epoch {newest}"
        else:
            verdict = f"ignores it (has obeyed epoch {newest})"
        return [f"B{sender}->>B{target}: LeaderAndIsr (controller epoch {epoch})", f"Note over B{target}: {verdict}"]
    if name == "SessionExpire":
        (b,) = args
        gone = ", /controller deleted" if before.holder == b else ""
        return [f"ZK-->>B{b}: session expired{gone}"]
    if name == "BrokerReconnect":
        (b,) = args
        return [f"B{b}->>ZK: new session"]
    return [f"Note over ZK: {action}"]
