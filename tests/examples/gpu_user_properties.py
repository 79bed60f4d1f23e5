"""Users' own properties for `tests/test_gpu.py`: the GPU engine and the kernel run them lowered
(`properties/lowering.py`), so they live in a file whose source `inspect` reads."""

from __future__ import annotations

from kafka_mc.properties import PROPERTIES, SOMETIMES, Property
from kafka_mc.properties.user import user_property


def leader_keeps_committed(state):
    """A state invariant: the leader's log holds every committed record (under hw a truncation loses one)."""
    leader = state.leader
    if leader is None:
        return True
    return all(offset < leader.leo and leader.log[offset].msg == msg for offset, msg in state.committed)


def a_new_leader_holds_a_record(state):
    """A witness: after an election, the leader holds a record."""
    if state.leader is None or state.controller.epoch == 0:
        return False
    return state.leader.leo > 0


def no_truncation_drops_a_committed_record(state, action, next_state):
    """A step property: no follower's truncation drops a committed record it held."""
    if action.name != "FollowerHandleFetchResponse" and action.name != "BecomeFollower":
        return True
    for replica, (before, after) in enumerate(zip(state.replicas, next_state.replicas)):
        for offset, msg in next_state.committed:
            if replica == action.replica and offset < before.leo and before.log[offset].msg == msg:
                assert offset < after.leo and after.log[offset].msg == msg
    return True


def every_two_records_compared(state):
    """A long program: every two records of every two replicas compared, more instructions than
    the GPU's kernels hold registers for under 5 replicas and 6 messages."""
    return all(all(x.epoch * y.msg + x.msg * y.epoch >= 0 for b in state.replicas for y in b.log)
               for a in state.replicas for x in a.log)


def waits_for_a_leader(state):
    """Python the lowering refuses (a `while` loop)."""
    while state.leader is None:
        return True
    return True


WITNESSES = {"a_new_leader_holds_a_record"}


def chosen(names: tuple[str, ...]) -> tuple[Property, ...]:
    """The properties of these names: kafka-mc's own (`PROPERTIES`), or the functions here, `sometimes`
    for those of WITNESSES and `always` otherwise."""
    shipped, functions = {prop.name: prop for prop in PROPERTIES}, globals()
    return tuple(shipped[name] if name in shipped else
                 Property(name, SOMETIMES, "a test's witness", functions[name], predicate=functions[name])
                 if name in WITNESSES else user_property(functions[name], name) for name in names)


def with_properties(options: dict) -> dict:
    """A run's options with its `properties`, given by name, as `chosen` makes them."""
    return {**options, "properties": chosen(options["properties"])} if "properties" in options else options
