"""Safety invariants: the two documented failures and the sanity checks behind them."""

from __future__ import annotations

from itertools import combinations

from kafka_mc.model.state import NO_LEADER, UNKNOWN, State

from .base import ALWAYS, Property


def no_committed_data_loss(state: State) -> bool:
    """Every record once below the leader's HW is at the same offset in the current leader's log."""
    leader = state.leader
    if leader is None:
        return True
    log = leader.log
    return all(offset < len(log) and log[offset].msg == msg for offset, msg in state.committed)


def no_log_divergence(state: State) -> bool:
    """No two replicas, live or not, hold different records at an offset below both their HWs."""
    for first, second in combinations(state.replicas, 2):
        common = min(first.hw, second.hw)
        if first.log[:common] != second.log[:common]:
            return False
    return True


def hw_below_leo(state: State) -> bool:
    """Every replica's high watermark is at most its log end offset."""
    return all(replica.hw <= replica.leo for replica in state.replicas)


def leader_epoch_monotonic(state: State) -> bool:
    """Leader epochs never go backwards: record epochs rise along every log, epoch-cache
    entries rise in epoch and offset, and nobody is ahead of the controller's epoch."""
    current = state.controller.epoch
    for replica in state.replicas:
        epochs = [record.epoch for record in replica.log]
        if epochs != sorted(epochs) or (epochs and epochs[-1] > current) or replica.epoch > current:
            return False
        cache = replica.epochs
        if any(a[0] >= b[0] or a[1] > b[1] for a, b in zip(cache, cache[1:])):
            return False
    return True


def leader_in_isr(state: State) -> bool:
    """The controller's leader, when there is one, is a member of the ISR; the ISR is never empty."""
    controller = state.controller
    if controller.isr == 0:
        return False
    return controller.leader == NO_LEADER or bool(controller.isr >> controller.leader & 1)


def epoch_known_only_when_live(state: State) -> bool:
    """A crashed replica has no in-memory leader epoch, response or remote view."""
    return all(replica.alive or (replica.epoch == UNKNOWN and not replica.response and not replica.remote_leos)
               for replica in state.replicas)


INVARIANTS: tuple[Property, ...] = (
    Property("NoCommittedDataLoss", ALWAYS, "seed 000 figures 8-9 to 8-11 (Case L)", no_committed_data_loss),
    Property("NoLogDivergence", ALWAYS, "seed 000 figures 8-12 to 8-14 (Case D)", no_log_divergence),
    Property("HwBelowLeo", ALWAYS, "seed 000 section 1.3: HW <= LEO", hw_below_leo),
    Property("LeaderEpochMonotonic", ALWAYS, "seed 000 section 1.4: epochs only grow", leader_epoch_monotonic),
    Property("LeaderInIsr", ALWAYS, "seed 002 and SCENARIOS section 2: the leader is in the ISR", leader_in_isr),
    Property("CrashLosesMemory", ALWAYS, "SCENARIOS section 2: a crash loses in-memory state",
             epoch_known_only_when_live),
)
