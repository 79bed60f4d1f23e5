"""The replication model with the ZooKeeper controller's epoch bump on ISR removal.

When the controller removes a dead follower from the ISR it writes a new leader epoch with the
same leader and sends that LeaderAndIsr to the partition's other replicas (0.11.0.0
`KafkaController.removeReplicaFromIsr`, "increment the leader epoch even if the ISR changes";
2.1.0 `ReplicaStateMachine.doRemoveReplicasFromIsr` -> `LeaderAndIsr.newLeaderAndIsr`, epoch + 1).
`model/replication.py` leaves this out; this subclass puts it in, so that exhaustive checks can
show what leaving it out changes (`benchmarks/epoch_bumps.py`, docs/model.md).

What each replica does with the bumped epoch, read at the release tags:
- The leader: `Partition.makeLeader` as a leader already (`isNewLeader` false): it keeps its view
  of the followers' LEOs and its purgatory, takes the new epoch for its next appends, and from
  2.0.1 on (KAFKA-7415) assigns (new epoch, LEO) in its epoch cache at once. As at an election,
  the LeaderAndIsr reaches the leader in the event that writes it.
- A follower of that leader: `Partition.makeFollower` returns false for a LeaderAndIsr naming the
  leader it follows, up to 2.0.0 (`leaderReplicaIdOpt.get == newLeaderBrokerId`): it takes the
  epoch and goes on fetching, with no truncation. From 2.1.0 it returns false only for the same
  epoch (`leaderEpoch == oldLeaderEpoch`), so the bump sends it through truncation again; 2.1's
  fetches carry the follower's epoch (KIP-320), so until then the leader fences them.
  (2.0.1 also skips a bump of exactly one, KAFKA-7164; no variant is 2.0.1.)
- The dead follower gets nothing (it is the one removed).

A bump with no leader (the last ISR member died, `NoLeader`) reaches no replica that acts on it
(`ReplicaManager.makeFollowers` skips a leader that is not alive) and only skips an epoch number;
it is left out. The elections bound still counts elections: the controller's `bumped` marks the
epochs bumps made (at most one per crash, so epochs run to elections + crashes; 0 in the replication
model).

Not modelled: network failures (`partitions` > 0). A leader cut off from the controller would
take the bump late, with a stale ZooKeeper version meanwhile (its ISR writes fail), which the
replication model's single ISR cannot express; such a configuration is refused by name.
"""

from __future__ import annotations

from dataclasses import replace

from .config import CHECK_COUNT_LIMIT, Config, ConfigError
from .replication import ReplicationModel
from .state import FOLLOWER, NO_LEADER, TRUNCATING, Controller, State

# which LeaderAndIsr a follower skips (`Partition.makeFollower` returns false), by variant
SAME_LEADER, SAME_EPOCH = "same leader", "same leader and epoch"
SKIPS = {
    "hw": SAME_LEADER,  # 0.10.2.0 Partition.makeFollower
    "leader-epoch": SAME_LEADER,  # 0.11.0.0
    "kip-279": SAME_LEADER,  # 2.0.0
    "kip-320": SAME_EPOCH,  # 2.1.0
    "diverging-epoch": SAME_EPOCH,  # 2.8.0
    "kafka-13141": SAME_EPOCH,  # 3.0.0
}


def bounding_config(config: Config) -> Config:
    """A configuration of the replication model whose bounds hold every value this model reaches
    under `config`: every crash may add a bumped epoch, so epochs run to elections + crashes."""
    return replace(config, elections=config.elections + config.crashes)


class EpochBumpModel(ReplicationModel):
    """`ReplicationModel` whose controller bumps the leader epoch when it removes a dead follower
    from the ISR."""

    def __init__(self, config: Config):
        if config.protocol not in SKIPS:
            raise ConfigError("protocol", f"the epoch bump is modelled for the shipped variants only "
                                          f"({', '.join(SKIPS)}), not {config.protocol!r}")
        if config.partitions:
            raise ConfigError("partitions", "the epoch bump is not modelled with network failures: "
                                            f"must be 0, not {config.partitions}")
        if config.elections + config.crashes > CHECK_COUNT_LIMIT:
            # every crash may bump the epoch once: epochs run to elections + crashes
            raise ConfigError("crashes", f"with the epoch bump, elections + crashes must be at most "
                                         f"{CHECK_COUNT_LIMIT}, not {config.elections + config.crashes}")
        super().__init__(config)
        self.skips = SKIPS[config.protocol]

    def _elections(self, controller: Controller) -> int:
        return controller.epoch - bin(controller.bumped).count("1")

    def _leadership_start(self, state: State, epoch: int) -> int:
        """The epoch of the election that began the leadership `epoch` belongs to."""
        bumped = state.controller.bumped
        while epoch > 0 and bumped >> epoch & 1:
            epoch -= 1
        return epoch

    def _acting_leader(self, state: State, epoch: int) -> int:
        """Up to 2.0 a follower's fetches and OffsetsForLeaderEpoch requests carry no epoch of
        its own: it reaches the leader whose leadership includes its epoch. From 2.1 (KIP-320) the
        leader fences a request from an older epoch: only a leader in the same epoch answers."""
        if self.skips == SAME_EPOCH:
            return super()._acting_leader(state, epoch)
        for index, replica in enumerate(state.replicas):
            if replica.acts_as_leader and self._leadership_start(state, replica.epoch) <= epoch <= replica.epoch:
                return index
        return NO_LEADER

    def controller_notice_failure(self, state: State, index: int) -> State | None:
        """As in the replication model; when that removes a follower from the ISR of a leader,
        the controller bumps the epoch and the leader takes it (module docstring)."""
        before = state.controller
        noticed = super().controller_notice_failure(state, index)
        if noticed is None:
            return None
        state, controller = noticed, noticed.controller
        leader_index = controller.leader
        if leader_index in (NO_LEADER, index) or controller.isr == before.isr:
            return state
        epoch = controller.epoch + 1
        state = state._replace(controller=controller._replace(epoch=epoch, bumped=controller.bumped | 1 << epoch))
        leader = state.replicas[leader_index]
        if not leader.acts_as_leader:  # crashed, not yet noticed: the request is lost
            return state
        leader = leader._replace(epoch=epoch, epochs=self.protocol.epochs_on_become_leader(leader.epochs, epoch,
                                                                                             leader.leo))
        return self.with_replica(state, leader_index, leader)

    def become_follower(self, state: State, index: int) -> State | None:
        """Up to 2.0, a follower told of a bump of the leader it follows takes the epoch only."""
        replica = state.replicas[index]
        controller = state.controller
        if (self.skips == SAME_LEADER and replica.role in (FOLLOWER, TRUNCATING) and replica.alive
                and controller.leader not in (NO_LEADER, index) and replica.epoch < controller.epoch
                and not state.zk_cut >> index & 1
                and self._leadership_start(state, controller.epoch) <= replica.epoch):
            return self.with_replica(state, index, replica._replace(epoch=controller.epoch))
        return super().become_follower(state, index)
