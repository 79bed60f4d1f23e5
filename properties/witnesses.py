"""Reachability witnesses: a model in which none of these happens proves nothing."""

from __future__ import annotations

from kafka_mc.model.state import State

from .base import SOMETIMES, Property


def record_committed(state: State) -> bool:
    """Some record has been below the leader's HW."""
    return bool(state.committed)


def leader_changed(state: State) -> bool:
    """The controller has elected a leader after the initial one."""
    return state.controller.epoch > 0


def follower_truncated(before: State, action, after: State) -> bool:
    """A step removed records from some replica's log."""
    return any(a.leo < b.leo for a, b in zip(after.replicas, before.replicas))


WITNESSES: tuple[Property, ...] = (
    Property("RecordCommitted", SOMETIMES, "reliability article: records below the HW are committed",
             record_committed),
    Property("LeaderChanged", SOMETIMES, "reliability article: leader election", leader_changed),
    Property("FollowerTruncated", SOMETIMES, "reliability article, truncation cases: truncation", follower_truncated,
             on_step=True),
)
