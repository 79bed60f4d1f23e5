"""One partition's replication as a pure transition system.

What is modelled (SCENARIOS.md sections 2 to 4): producer writes to the leader, the
two-step fetch (the leader handles a FetchRequest, the follower handles the
FetchResponse later), HW and LEO bookkeeping on both sides, ISR shrink and
expansion by the leader, replica crashes and restarts, the controller noticing a
crash later than it happens, leader election by the controller, the LeaderAndIsr
that makes a replica a follower, and truncation as a pluggable protocol.

What is simplified, and why:
- A FetchRequest is sent and handled in one event, with the follower's LEO at that
  moment as fetch offset: the follower cannot change its log while it waits, and a
  crash drops the request just as it drops the response. The response, which
  carries every record from the fetch offset on, is a separate event.
- OffsetsForLeaderEpoch request and response are one event (`FollowerTruncateByLeaderEpoch`).
- The ISR lives in one place, the controller's partition state: a leader's ISR
  changes are written through at once, as `KafkaReplication.tla` assumes.
- The HW checkpoint is written on every HW change and every append is flushed:
  both documented cases assume the checkpoint holds the HW of the moment before the
  crash. Periodic checkpoints and unflushed data are left to the failure catalogue.
- Time is abstract: a follower whose LEO, as the leader last saw it, is behind the
  leader's LEO may be dropped from the ISR at any moment (`replica.lag.time.max.ms`).
  A follower rejoins the ISR while the leader handles its fetch, as in Kafka, never
  later on a stale view of its LEO.
- The response carries the HW the leader computed while handling the request, as the
  documents describe (figure 8-7); Kafka 0.10 reads the HW for a response that carries
  records just before raising it, so its followers can lag one HW update more.
- The controller never fails and elects only after noticing the leader's crash
  (no preferred-leader or controlled-shutdown elections); removing a dead follower
  from the ISR does not bump the leader epoch; the last ISR member is never removed.
- A crashed leader restarts only once the controller has noticed its crash, as a
  bounced broker is handled as a failure followed by a start-up.
- Clean election picks any live ISR member (Kafka takes the first in assignment
  order; any order is explored). Unclean election, when enabled and no ISR member
  is live, picks any live replica and makes it the only ISR member.
"""

from __future__ import annotations

from typing import Callable, Iterator

from .actions import Action
from .config import Config
from .protocols import PROTOCOLS, Transition, truncate
from .state import (
    CRASHED,
    FOLLOWER,
    LEADER,
    NO_LEADER,
    NO_ROLE,
    OFFLINE,
    UNKNOWN,
    UP,
    Controller,
    FetchResponse,
    Record,
    Replica,
    State,
    isr_members,
)


def _put(values: tuple, index: int, value) -> tuple:
    return values[:index] + (value,) + values[index + 1 :]


class ReplicationModel:
    """The transition system for one configuration: initial states and enabled actions."""

    def __init__(self, config: Config):
        self.config = config
        self.protocol = PROTOCOLS[config.protocol]
        base: dict[str, Transition] = {
            "ProducerWrite": ReplicationModel.producer_write,
            "LeaderHandleFetchRequest": ReplicationModel.leader_handle_fetch_request,
            "FollowerHandleFetchResponse": ReplicationModel.follower_handle_fetch_response,
            "LeaderShrinkIsr": ReplicationModel.leader_shrink_isr,
            "BecomeFollower": ReplicationModel.become_follower,
        }
        tail: dict[str, Transition] = {
            "ReplicaCrash": ReplicationModel.replica_crash,
            "ReplicaRestart": ReplicationModel.replica_restart,
            "ControllerNoticeFailure": ReplicationModel.controller_notice_failure,
            "ControllerElectLeader": ReplicationModel.controller_elect_leader,
        }
        self.transitions: dict[str, Transition] = {**base, **self.protocol.extra_actions, **tail}
        self.action_names: tuple[str, ...] = tuple(self.transitions)
        self._table: tuple[tuple[Action, Callable], ...] = tuple(
            (Action(name, replica), transition)
            for name, transition in self.transitions.items()
            for replica in range(config.replicas)
        )

    # ----------------------------------------------------------------- exploration

    def initial_states(self) -> list[State]:
        """A new partition: empty logs, epoch 0, every replica in the ISR, any replica leading."""
        n = self.config.replicas
        return [self._initial_state(leader) for leader in range(n)]

    def _initial_state(self, leader: int) -> State:
        n = self.config.replicas
        follower = Replica((), 0, (), UP, FOLLOWER, 0, (), ())
        replicas = tuple(
            follower._replace(
                role=LEADER,
                epochs=self.protocol.epochs_on_become_leader((), 0, 0),
                remote_leos=(UNKNOWN,) * n,
            )
            if index == leader
            else follower
            for index in range(n)
        )
        return State(replicas, Controller(leader, 0, (1 << n) - 1), 0, 0, ())

    def successors(self, state: State) -> Iterator[tuple[Action, State]]:
        """Every enabled action with its successor, in a fixed order."""
        for action, transition in self._table:
            following = transition(self, state, action.replica)
            if following is not None:
                yield action, following

    def actions(self, state: State) -> list[Action]:
        return [action for action, _ in self.successors(state)]

    def next_state(self, state: State, action: Action) -> State | None:
        """The state after `action`, or None when it is not enabled."""
        transition = self.transitions.get(action.name)
        if transition is None or not 0 <= action.replica < self.config.replicas:
            return None
        return transition(self, state, action.replica)

    def action_index(self, action: Action) -> int:
        return self.action_names.index(action.name) * self.config.replicas + action.replica

    def action_at(self, index: int) -> Action:
        return self._table[index][0]

    # ------------------------------------------------------------------- helpers

    @staticmethod
    def with_replica(state: State, index: int, replica: Replica) -> State:
        return state._replace(replicas=_put(state.replicas, index, replica))

    @staticmethod
    def _current_leader(state: State) -> int:
        """The index of the live replica leading in the controller's epoch, or NO_LEADER."""
        index = state.controller.leader
        if index != NO_LEADER:
            leader = state.replicas[index]
            if leader.alive and leader.role == LEADER:
                return index
        return NO_LEADER

    def _advance_hw(self, state: State) -> State:
        """The leader's HW rises to the least LEO over the ISR as it knows them; it never falls.
        Every record then below it joins the `committed` history."""
        index = self._current_leader(state)
        if index == NO_LEADER:
            return state
        leader = state.replicas[index]
        isr_leos = (leader.leo if member == index else leader.remote_leos[member]
                    for member in isr_members(state.controller.isr))
        hw = max(leader.hw, min(isr_leos))
        if hw != leader.hw:
            state = self.with_replica(state, index, leader._replace(hw=hw))
        return self._note_committed(state, state.replicas[index])

    @staticmethod
    def _note_committed(state: State, leader: Replica) -> State:
        known = set(state.committed)
        fresh = [(offset, leader.log[offset].msg) for offset in range(leader.hw)
                 if (offset, leader.log[offset].msg) not in known]
        if not fresh:
            return state
        return state._replace(committed=tuple(sorted(known.union(fresh))))

    def _with_isr(self, state: State, isr: int) -> State:
        return self._advance_hw(state._replace(controller=state.controller._replace(isr=isr)))

    # ------------------------------------------------------------------- actions

    def producer_write(self, state: State, index: int) -> State | None:
        """The leader appends a producer record. With acks=all it refuses (NotEnoughReplicas)
        while the ISR is smaller than min.insync.replicas."""
        config = self.config
        if index != self._current_leader(state) or state.written >= config.messages:
            return None
        if config.acks == "all" and bin(state.controller.isr).count("1") < config.min_isr:
            return None
        leader = state.replicas[index]
        record = Record(state.written + 1, leader.epoch)
        leader = leader._replace(
            log=leader.log + (record,),
            epochs=self.protocol.epochs_after_append(leader.epochs, (record,), leader.leo),
        )
        state = self.with_replica(state, index, leader)._replace(written=state.written + 1)
        return self._advance_hw(state)

    def leader_handle_fetch_request(self, state: State, index: int) -> State | None:
        """The leader takes the follower's fetch offset as its LEO, adds the follower back to the
        ISR if that offset reached the leader's HW (`Partition.maybeExpandIsr`), recomputes its
        HW and builds a response with the records from that offset on and the new HW. A fetch
        beyond the leader's LEO gets OffsetOutOfRange."""
        follower = state.replicas[index]
        leader_index = self._current_leader(state)
        if leader_index in (NO_LEADER, index) or follower.response:
            return None
        if not (follower.alive and follower.role == FOLLOWER and follower.epoch == state.controller.epoch):
            return None
        leader = state.replicas[leader_index]
        offset = follower.leo
        if offset > leader.leo:
            response = FetchResponse(leader.leo, leader.hw, (), True)
        else:
            isr = state.controller.isr
            if not isr >> index & 1 and offset >= leader.hw:
                state = state._replace(controller=state.controller._replace(isr=isr | 1 << index))
            leader = leader._replace(remote_leos=_put(leader.remote_leos, index, offset))
            state = self._advance_hw(self.with_replica(state, leader_index, leader))
            leader = state.replicas[leader_index]
            response = FetchResponse(offset, leader.hw, leader.log[offset:], False)
        return self.with_replica(state, index, follower._replace(response=response))

    def follower_handle_fetch_response(self, state: State, index: int) -> State | None:
        """The follower appends the records and sets HW = min(its LEO, the response's HW);
        on OffsetOutOfRange it truncates to the leader's LEO."""
        follower = state.replicas[index]
        response = follower.response
        if not (follower.alive and response):
            return None
        follower = follower._replace(response=())
        if response.out_of_range:
            follower = truncate(follower, response.offset, self.protocol)
        else:
            log = follower.log + response.records
            follower = follower._replace(
                log=log,
                hw=min(len(log), response.hw),
                epochs=self.protocol.epochs_after_append(follower.epochs, response.records, follower.leo),
            )
        return self.with_replica(state, index, follower)

    def leader_shrink_isr(self, state: State, index: int) -> State | None:
        """The leader drops a follower it has not seen reach its LEO."""
        leader_index = self._current_leader(state)
        isr = state.controller.isr
        if leader_index in (NO_LEADER, index) or not isr >> index & 1:
            return None
        leader = state.replicas[leader_index]
        if leader.remote_leos[index] >= leader.leo:
            return None
        return self._with_isr(state, isr & ~(1 << index))

    def become_follower(self, state: State, index: int) -> State | None:
        """The replica acts on a LeaderAndIsr naming another leader in a newer epoch; the
        truncation protocol decides what it does to its log."""
        replica = state.replicas[index]
        controller = state.controller
        if not replica.alive or controller.leader in (NO_LEADER, index) or replica.epoch >= controller.epoch:
            return None
        replica = replica._replace(epoch=controller.epoch, response=(), remote_leos=())
        return self.with_replica(state, index, self.protocol.become_follower(replica))

    def replica_crash(self, state: State, index: int) -> State | None:
        """The broker dies: its log, HW checkpoint and epoch cache survive; in-memory state does not."""
        replica = state.replicas[index]
        if not replica.alive or state.crashes >= self.config.crashes:
            return None
        replica = replica._replace(status=CRASHED, role=NO_ROLE, epoch=UNKNOWN, response=(), remote_leos=())
        return self.with_replica(state, index, replica)._replace(crashes=state.crashes + 1)

    def replica_restart(self, state: State, index: int) -> State | None:
        """The broker starts again and registers; it waits for a LeaderAndIsr."""
        replica = state.replicas[index]
        if replica.alive or (replica.status == CRASHED and state.controller.leader == index):
            return None
        return self.with_replica(state, index, replica._replace(status=UP))

    def controller_notice_failure(self, state: State, index: int) -> State | None:
        """The controller sees the broker's ZooKeeper session expire: a dead leader leaves the
        partition leaderless; a dead member leaves the ISR unless it is the last one."""
        replica = state.replicas[index]
        if replica.status != CRASHED:
            return None
        state = self.with_replica(state, index, replica._replace(status=OFFLINE))
        controller = state.controller
        if controller.leader == index:
            state = state._replace(controller=controller._replace(leader=NO_LEADER))
        remaining = controller.isr & ~(1 << index)
        if controller.isr >> index & 1 and remaining:
            state = self._with_isr(state, remaining)
        return state

    def controller_elect_leader(self, state: State, index: int) -> State | None:
        """The controller elects a live ISR member (any live replica, as the only ISR member,
        when unclean election is enabled and no ISR member is live) in a new epoch."""
        controller = state.controller
        candidate = state.replicas[index]
        if controller.leader != NO_LEADER or controller.epoch >= self.config.elections or not candidate.alive:
            return None
        live_isr = [m for m in isr_members(controller.isr) if state.replicas[m].alive]
        if index in live_isr:
            isr = controller.isr
        elif self.config.unclean and not live_isr:
            isr = 1 << index
        else:
            return None
        epoch = controller.epoch + 1
        leader = candidate._replace(
            role=LEADER,
            epoch=epoch,
            response=(),
            remote_leos=(UNKNOWN,) * self.config.replicas,
            epochs=self.protocol.epochs_on_become_leader(candidate.epochs, epoch, candidate.leo),
        )
        state = self.with_replica(state, index, leader)._replace(controller=Controller(index, epoch, isr))
        return self._advance_hw(state)
