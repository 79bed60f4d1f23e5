"""Write your own property: each function below is a test, checked over every reachable state
(or every step) of its configuration by `kafka-mc`'s pytest plugin."""

import pytest

from kafka_mc.model import Config
from kafka_mc.pytest_plugin import always


@always(Config(protocol="kip-279", replicas=2, messages=2, crashes=2, elections=2))
def test_no_step_drops_a_committed_record(state, action, next_state):
    """A step property: no replica loses a committed record it held (under hw, truncation does)."""
    for before, after in zip(state.replicas, next_state.replicas):
        for offset, msg in next_state.committed:
            if offset < before.leo and before.log[offset].msg == msg:
                assert offset < after.leo and after.log[offset].msg == msg, f"{action} dropped m{msg}"


@pytest.mark.xfail(strict=True, reason="a new leader's HW can be behind the HW consumers read below")
@always(Config(protocol="kip-279", replicas=3, messages=1, crashes=1, elections=1))
def test_a_consumer_never_reads_past_a_record_it_later_cannot_read_again(state):
    """Every record a consumer has read (below the HW of a leader) can be read again from the
    current leader: it is below that leader's HW, at the same offset."""
    leader = state.leader
    if leader is None or not leader.acts_as_leader:
        return True
    return all(offset < leader.hw and leader.log[offset].msg == msg for offset, msg in state.consumed)
