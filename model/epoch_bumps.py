"""The replication model with the ZooKeeper controller's epoch bump on ISR removal.

When the controller removes a dead follower from the ISR it writes a new leader epoch with the
same leader and sends that LeaderAndIsr to the partition's other replicas (0.11.0.0
`KafkaController.removeReplicaFromIsr`, "increment the leader epoch even if the ISR changes";
2.1.0 `ReplicaStateMachine.doRemoveReplicasFromIsr` -> `LeaderAndIsr.newLeaderAndIsr`, epoch + 1).
`model/replication.py` leaves this out; this subclass puts it in, so that exhaustive checks can
show what leaving it out changes (`benchmarks/epoch_bumps.py`, docs/model.md). Whether the controller
bumps, and what a follower does with the bump, is the variant's choice `isr_removal_bump`
(`model/protocols.py`): `none` for the KRaft controller from metadata version 3.6 (KAFKA-15021), where
this model is the replication model.

What each replica does with the bumped epoch, read at the release tags:
- The leader: `Partition.makeLeader` as a leader already (`isNewLeader` false): it keeps its view
  of the followers' LEOs and its purgatory, takes the new epoch for its next appends, and from
  2.0.1 on (KAFKA-7415) assigns (new epoch, LEO) in its epoch cache at once. As at an election,
  the LeaderAndIsr reaches the leader in the event that writes it.
- A follower of that leader: `Partition.makeFollower` returns false for a LeaderAndIsr naming the
  leader it follows, up to 2.0.0 (`leaderReplicaIdOpt.get == newLeaderBrokerId`; 2.0.1 for the
  next epoch only, KAFKA-7164): it takes the epoch and goes on fetching, with no truncation, as
  the replication model's `become_follower` does (`follower_skips`). From 2.1.0 it returns false
  only for the same epoch (`leaderEpoch == oldLeaderEpoch`), so the bump sends it through
  truncation again; 2.1's fetches carry the follower's epoch (KIP-320), so until then the leader
  fences them.
- The dead follower gets nothing (it is the one removed).

A bump with no leader (the last ISR member died, `NoLeader`) reaches no replica that acts on it
(`ReplicaManager.makeFollowers` skips a leader that is not alive) and only skips an epoch number;
it is left out. The elections bound still counts elections: the controller's `bumped` marks the
epochs bumps made (at most one per crash or network failure, `greatest_epoch`); the replication
model's leadership and election counts read it (none there).

A leader cut off from ZooKeeper when its epoch is bumped takes the bump when it reconnects (the
controller resends the request until it arrives); until then it still leads, in the older epoch:
up to 2.0 its followers' requests, which carry no epoch, reach it whatever epoch they took; from 2.1
it fences those of the newer epoch (UNKNOWN_LEADER_EPOCH). Its ISR writes fail meanwhile, as they
do for any leader cut off (`LeaderShrinkIsrFails`); the ISR the controller shrank is the one it
works with, as everywhere in the model (the ISR lives in one place).
"""

from __future__ import annotations

from dataclasses import replace

from .config import CHECK_COUNT_LIMIT, Config, ConfigError
from .replication import ReplicationModel, fenced_fetches
from .state import NO_LEADER, State


def greatest_epoch(config: Config) -> int:
    """Every failure the controller notices (a crash, or a session expired by a network failure) may
    add a bumped epoch: epochs run to elections + crashes + network failures."""
    return config.elections + config.crashes + config.partitions


def bounding_config(config: Config) -> Config:
    """A configuration of the replication model whose bounds hold every value this model reaches
    under `config` (`greatest_epoch`)."""
    return replace(config, elections=greatest_epoch(config))


class EpochBumpModel(ReplicationModel):
    """`ReplicationModel` whose controller bumps the leader epoch when it removes a dead follower
    from the ISR."""

    def __init__(self, config: Config):
        if config.metadata_lag:
            raise ConfigError("metadata_lag", "metadata_lag: the epoch bump's LeaderAndIsr brings the ISR to the leader "
                                              "in the event that writes it; this model has no metadata log to lag")
        epochs = greatest_epoch(config)
        if epochs > CHECK_COUNT_LIMIT:
            raise ConfigError("crashes", f"with the epoch bump, elections + crashes + network failures must be "
                                         f"at most {CHECK_COUNT_LIMIT}, not {epochs}")
        super().__init__(config)

    def _acting_leader(self, state: State, epoch: int) -> int:
        """Up to 2.0 a follower's fetches and OffsetsForLeaderEpoch requests carry no epoch of
        its own: it reaches the leader whose leadership includes its epoch. From 2.1 (KIP-320) the
        leader fences a request from an older epoch: only a leader in the same epoch answers."""
        if not self.protocol.followers_skip_bumps:
            return super()._acting_leader(state, epoch)
        controller = state.controller
        for index, replica in enumerate(state.replicas):
            if not replica.acts_as_leader:
                continue
            start = self._leadership_start(state, replica.epoch)
            # the controller's leader leads to the controller's epoch, bumps it has not yet taken included
            last = controller.epoch if index == controller.leader and self._current_leader(state) == index \
                else replica.epoch
            if start <= epoch <= last:
                return index
        return NO_LEADER

    def controller_notice_failure(self, state: State, index: int) -> State | None:
        """As in the replication model; when that removes a follower from the ISR of a leader,
        the controller bumps the epoch and the leader takes it (module docstring)."""
        before = state.controller
        noticed = super().controller_notice_failure(state, index)
        if noticed is None or not self.protocol.bumps_on_isr_removal:
            return noticed
        state, controller = noticed, noticed.controller
        leader_index = controller.leader
        if leader_index in (NO_LEADER, index) or controller.isr == before.isr:
            return state
        epoch = controller.epoch + 1
        state = fenced_fetches(state)._replace(controller=controller._replace(epoch=epoch,
                                                                              bumped=controller.bumped | 1 << epoch))
        if state.zk_cut >> leader_index & 1:  # cut off: it takes the LeaderAndIsr once reconnected
            return state
        return self._take_bump(state, leader_index)

    def _take_bump(self, state: State, index: int) -> State:
        """The controller's leader acts on the LeaderAndIsr of a bump (`Partition.makeLeader`, as
        a leader already), unless it crashed and the request is lost."""
        leader = state.replicas[index]
        if not leader.acts_as_leader:
            return state
        epoch = state.controller.epoch
        leader = leader._replace(epoch=epoch, epochs=self.protocol.epochs_on_become_leader(leader.epochs, epoch,
                                                                                             leader.leo))
        return self._advance_hw(self.with_replica(state, index, leader), index)

    def zk_reconnect(self, state: State, index: int) -> State | None:
        """As in the replication model; the controller's leader, cut off when the epoch was bumped,
        now takes the bump (the controller's request is sent again until it arrives)."""
        reconnected = super().zk_reconnect(state, index)
        if reconnected is None or not self.protocol.bumps_on_isr_removal or index != reconnected.controller.leader \
                or reconnected.replicas[index].epoch == reconnected.controller.epoch:
            return reconnected
        return self._take_bump(reconnected, index)
