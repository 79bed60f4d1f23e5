"""KIP-966's promise, as Vanlightly's LeaderCandidateCompleteness: every replica that may be elected
holds every committed record. Under kip-966 it holds; under kafka-15583 (before eligible leader
replicas) the last replica standing in the ISR comes back from an unclean shutdown without them."""

import pytest

from kafka_mc.model import Config
from kafka_mc.pytest_plugin import always

UNFLUSHED = dict(replicas=2, messages=2, crashes=1, elections=1, min_isr=2, flush=False)


def leader_candidates_hold_every_committed_record(state):
    """Every live replica eligible to lead (an ISR member, or an ELR member while the ISR is empty)
    holds every committed record, at its offset."""
    isr, elr = state.controller.isr, state.controller.elr
    for index, replica in enumerate(state.replicas):
        eligible = isr >> index & 1 or (isr == 0 and elr >> index & 1)
        if eligible and replica.alive:
            for offset, msg in state.committed:
                if offset >= replica.leo or replica.log[offset].msg != msg:
                    return False
    return True


@always(Config(protocol="kip-966", **UNFLUSHED))
def test_kip_966_elects_only_complete_replicas(state):
    return leader_candidates_hold_every_committed_record(state)


@pytest.mark.xfail(strict=True, reason="the last ISR member restarts without its unflushed committed records")
@always(Config(protocol="kafka-15583", **UNFLUSHED))
def test_kafka_15583_may_elect_an_incomplete_replica(state):
    return leader_candidates_hold_every_committed_record(state)
