"""The invariants of Jack Vanlightly's KIP-966 specification (kafka-tlaplus,
`kafka_data_replication/kraft/kip-966/kip_966_properties.tla`) that kafka-mc's own do not state,
written over kafka-mc's states as properties of your own would be: every engine runs them, the kernel,
the GPU engine, Z3 and the TLA+ twin lowered from this source (`properties/lowering.py`).

    kafka-mc check --protocol kip-966 --property kafka_mc.properties.anchors:leader_candidate_completeness

The others of that file are kafka-mc's own under other names, or say nothing about its states:
- `LeaderCompletenessProperty`: `NoCommittedDataLoss` and `NoAckedDataLoss` (the live leader holds
  every committed record and every acknowledged write);
- `LogMatchingProperty`: `NoLogDivergence` (no two replicas differ below both their HWs);
- `ConsistentReadProperty`: `NoConsumedRecordLost` (what a consumer read is still in the leader's log);
- `ReplicationQuorumSupersetProperty`: the leader's maximal ISR holds the controller's ISR and ELR. The
  model keeps one ISR, the controller's, and the leader's maximal ISR is it plus the member in flight
  (`Controller.proposal`), so it holds by construction;
- `MetadataLogMatchingProperty`, `MinIsrRecoveryQuorum` and the type and validity checks: the model has
  no metadata log (the controller's decisions reach the brokers in the event that makes them) and no
  last known ELR.
"""

from __future__ import annotations

from .base import Property
from .user import user_property


def leader_candidate_completeness(state):
    """`LeaderCandidateCompletenessProperty`: every live member of the ISR or of the ELR holds every
    committed record, at its offset (Vanlightly compares the member's LEO with the true HW; the
    records themselves are compared here). A replica back from an unclean shutdown may miss some, but
    it is then out of both (KIP-966)."""
    candidates = state.controller.isr | state.controller.elr
    for index, replica in enumerate(state.replicas):
        if candidates >> index & 1 and replica.alive:
            for offset, msg in state.committed:
                if offset >= replica.leo or replica.log[offset].msg != msg:
                    return False
    return True


def no_committed_record_lost_globally(state):
    """`NoCommittedRecordLostGlobally`: every write acknowledged to the producer is in the log of some
    replica, live or not. `NoAckedDataLoss` asks it of the current leader; this one fails only where
    no replica could ever serve the write again, as when more replicas than min.insync.replicas - 1
    lose it in unclean shutdowns."""
    held = 0  # bitmask over message numbers, as `State.acked`
    for replica in state.replicas:
        for record in replica.log:
            held |= 1 << record.msg
    return state.acked & ~held == 0


ANCHOR_PROPERTIES: tuple[Property, ...] = (
    user_property(leader_candidate_completeness, "LeaderCandidateCompleteness"),
    user_property(no_committed_record_lost_globally, "NoCommittedRecordLostGlobally"),
)
