"""The recoverability target: a state every reachable state must be able to get back to."""

from __future__ import annotations

from itertools import combinations

from kafka_mc.model.interface import Goal
from kafka_mc.model.state import State

RECOVERABILITY = "LiveReplicasAgree"
RECOVERABILITY_SOURCE = "reliability article figure 8-14: under hw, A can never fetch m3"


def live_replicas_agree(state: State) -> bool:
    """Every two live replicas hold the same records below the lower of their HWs."""
    live = [replica for replica in state.replicas if replica.alive]
    return all(a.log[: min(a.hw, b.hw)] == b.log[: min(a.hw, b.hw)] for a, b in combinations(live, 2))


GOAL = Goal(RECOVERABILITY, RECOVERABILITY_SOURCE, live_replicas_agree)

LEADER_AGAIN = "LeaderAgain"
LEADER_AGAIN_SOURCE = ("KIP-966 (a partition whose ISR and ELR are empty elects its last known leader, "
                       "KAFKA-15584); Vanlightly's kip-966 liveness properties")


def live_leader(state: State) -> bool:
    """The controller's leader is live and acts as leader."""
    leader = state.leader
    return leader is not None and leader.acts_as_leader
