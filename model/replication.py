"""One partition's replication as a pure transition system.

What is modelled (the cases of the reliability article and the ISR high-watermark
article, README "Sources"): producer writes to the leader, the two-step fetch (the
leader handles a FetchRequest, the follower handles the FetchResponse later), HW and
LEO bookkeeping on both sides, ISR shrink and expansion by the leader, replica crashes
and restarts, the controller noticing a crash later than it happens, leader election
by the controller, the LeaderAndIsr that makes a replica a follower, and what each
Kafka release does differently as a declared protocol variant (`model/protocols.py`).

What is simplified, and why:
- A FetchRequest is sent and handled in one event, with the follower's LEO at that
  moment as fetch offset: the follower cannot change its log while it waits, and a
  crash drops the request just as it drops the response. The response, which
  carries every record from the fetch offset on, is a separate event.
- OffsetsForLeaderEpoch request and response are one event (`FollowerTruncateByLeaderEpoch`).
- What differs between Kafka releases is a protocol variant's declaration of choices
  (`model/protocols.py`), a layer this model calls and which knows nothing of it.
- The ISR lives in one place, the controller's partition state: a leader's ISR
  changes are written through at once, as `KafkaReplication.tla` assumes, except an
  expansion the leader sends as a delayed AlterPartition (`Config.delays`, variants from
  2.7 on): it stays in flight (`Controller.proposal`) until the controller handles it. Only
  expansions are delayed (a delayed shrink only keeps a lagging follower in the ISR a while
  longer, which the model's free timing of shrinks already covers). Any other change of the
  partition drops the request, which the controller would refuse by its partition epoch, and the
  leader learns of that change at once; a leader deposed while its request is in flight
  forgets the proposal. With `Config.metadata_lag` (KRaft variants) the leader learns of the
  controller's own ISR changes late instead, when it reads them in the metadata log
  (`leader_apply_metadata`); until then it works with the ISR it knew (`Controller.unseen`), and
  every ISR change it proposes is at an older partition epoch, which the controller refuses.
- The HW checkpoint is written on every HW change: both documented cases assume the
  checkpoint holds the HW of the moment before the crash. Appends are flushed at once
  unless `flush` is off; then they wait in the page cache for a `ReplicaFlush`, and
  every crash is a machine failure that loses them (a process crash would not).
- Time is abstract: a follower whose LEO, as the leader last saw it, is behind the
  leader's LEO may be dropped from the ISR at any moment (`replica.lag.time.max.ms`).
  A follower rejoins the ISR while the leader handles its fetch, as in Kafka, never
  later on a stale view of its LEO.
- The response carries the HW the leader computed while handling the request, as the
  documents describe (figure 8-7); Kafka 0.10 reads the HW for a response that carries
  records just before raising it, so its followers can lag one HW update more.
- The controller never fails and elects only after noticing that the leader's
  ZooKeeper session expired, by a crash or a cut (no preferred-leader or
  controlled-shutdown elections); removing a dead follower from the ISR does not bump
  the leader epoch (the ZooKeeper controller's `ReplicaStateMachine` does, through
  `LeaderAndIsr.newLeaderAndIsr`: `model/epoch_bumps.py` models it; leaving it out changes no
  verdict and no shortest length of the history table, docs/model.md); the last ISR member
  is never removed but with eligible leader replicas (KIP-966). The controller's own
  failure is `control/failover.py`, a wrapper of this model (`check --controller-failures N`).
- A replica told of a new epoch acts on it as a new follower (`BecomeFollower`), but where
  `Partition.makeFollower` skips the LeaderAndIsr (`follower_skips`): up to 2.0.0 one naming
  the leader the replica already follows (`Replica.leader_id`, forgotten in a crash), in 2.0.1
  only if it is also the next epoch (KAFKA-7164). Then the replica takes the epoch and goes on
  fetching as it was, without truncating. Without the controller's epoch bumps this happens when
  a leader is elected again while a follower of its earlier leadership has not yet acted on a
  newer epoch. Until it acts on the new epoch, such a follower's fetches find no leader (the
  model's leader answers its own epoch only), as though they waited.
- Network failures cut one broker off from ZooKeeper and the controller together
  (`ZkDisconnect`), or from every other broker (`PeerDisconnect`); a full isolation is
  both. Clients always reach every broker. A leader cut off from ZooKeeper keeps its
  role; once deposed it keeps the ISR it believed in (`stale_isr`) and serves the
  followers that have not yet heard of the new epoch. An ISR change it cannot write
  (cut off, or deposed: the conditional ZooKeeper update fails) does not happen; a
  failed shrink makes it refuse writes from then on (Vanlightly's fault-tolerance article,
  partition scenario 4), a failed expansion only leaves the follower out.
- Producers: an acks=all write is acknowledged when the HW of the replica that took
  it passes it, in the epoch it took it in, while that leader's ISR has at least
  min.insync.replicas members (otherwise the producer gets NotEnoughReplicasAfterAppend);
  a leader that crashes or moves to another epoch first answers with an error (Kafka's
  purgatory also survives a re-election of the same live broker; here it does not).
  Retries are not modelled. acks=1 and acks=0 writes are acknowledged once sent; an acks=0 send to a
  leader that crashed unnoticed is lost on the wire.
- A crashed leader restarts only once the controller has noticed its crash, as a
  bounced broker is handled as a failure followed by a start-up.
- Clean election picks any live ISR member (Kafka takes the first in assignment
  order; any order is explored). Unclean election, when enabled and no ISR member
  is live, picks any live replica and makes it the only ISR member.
- The controller is ZooKeeper's or KRaft's alike: noticing a failure is a session expiry or
  missed heartbeats (fencing), a restart a new registration. With eligible leader replicas
  (`kip-966`) every restart after a crash is an unclean shutdown (no controlled shutdown is
  modelled); the last known leader is elected once it is up (Kafka elects it even while it is down).
"""

from __future__ import annotations

from typing import Callable, Iterator

from .actions import Action
from .config import Config
from .protocols import PROTOCOLS, truncate
from .state import (
    CRASHED,
    EXPIRED,
    FENCED,
    FOLLOWER,
    LEADER,
    NO_LEADER,
    NO_ROLE,
    OFFLINE,
    TRUNCATING,
    UNKNOWN,
    UP,
    Controller,
    FetchResponse,
    Record,
    Replica,
    State,
    isr_members,
)


Transition = Callable[["ReplicationModel", State, int], "State | None"]

# every action of the model; a configuration offers those its settings enable (`action_names`)
ACTION_NAMES = (
    "ProducerWrite", "LeaderHandleFetchRequest", "FollowerHandleFetchResponse", "LeaderShrinkIsr", "BecomeFollower",
    "LeaderShrinkIsrFails", "ReplicaFlush", "FollowerTruncateByLeaderEpoch", "ReplicaCrash", "ReplicaRestart",
    "ControllerNoticeFailure", "ControllerElectLeader", "ZkDisconnect", "ZkReconnect", "PeerDisconnect",
    "PeerReconnect", "ReplicaDiskFailure", "LeaderSendAlterPartition", "ControllerHandleAlterPartition",
    "FollowerSendDelayedFetch", "LeaderHandleStaleFetch", "LeaderApplyMetadata",
)


def _put(values: tuple, index: int, value) -> tuple:
    return values[:index] + (value,) + values[index + 1 :]


def dropped_proposal(controller: Controller) -> Controller:
    """The controller with no AlterPartition in flight: a new partition epoch (an ISR change, a leader
    lost) or the controller's refusal drops it."""
    return controller._replace(proposal=0, reregistered=0)


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
        if config.partitions:
            base["LeaderShrinkIsrFails"] = ReplicationModel.leader_shrink_isr_fails
        if not config.flush:
            base["ReplicaFlush"] = ReplicationModel.replica_flush
        tail: dict[str, Transition] = {
            "ReplicaCrash": ReplicationModel.replica_crash,
            **({"ReplicaDiskFailure": ReplicationModel.replica_disk_failure} if config.disk_failures else {}),
            "ReplicaRestart": ReplicationModel.replica_restart,
            "ControllerNoticeFailure": ReplicationModel.controller_notice_failure,
            "ControllerElectLeader": ReplicationModel.controller_elect_leader,
        }
        if config.partitions:
            tail |= {
                "ZkDisconnect": ReplicationModel.zk_disconnect,
                "ZkReconnect": ReplicationModel.zk_reconnect,
                "PeerDisconnect": ReplicationModel.peer_disconnect,
                "PeerReconnect": ReplicationModel.peer_reconnect,
            }
        if config.delays:
            tail |= {
                "LeaderSendAlterPartition": ReplicationModel.leader_send_alter_partition,
                "ControllerHandleAlterPartition": ReplicationModel.controller_handle_alter_partition,
                "FollowerSendDelayedFetch": ReplicationModel.follower_send_delayed_fetch,
                "LeaderHandleStaleFetch": ReplicationModel.leader_handle_stale_fetch,
            }
        if config.metadata_lag:
            tail["LeaderApplyMetadata"] = ReplicationModel.leader_apply_metadata
        if self.protocol.exchanges_epochs:
            base["FollowerTruncateByLeaderEpoch"] = ReplicationModel.follower_truncate_by_leader_epoch
        # a subclass's method of the same name takes over (`model/epoch_bumps.py`)
        self.transitions: dict[str, Transition] = {name: getattr(type(self), transition.__name__)
                                                   for name, transition in {**base, **tail}.items()}
        self.action_names: tuple[str, ...] = tuple(self.transitions)
        self._histories: dict[tuple, tuple] = {}  # see _history_with
        self._slots: tuple[tuple[Action, Callable, int], ...] = tuple(
            (Action(name, replica), transition, replica)
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
        follower = Replica((), 0, 0, (), UP, FOLLOWER, 0, (), 0, (), self._remembered(leader))
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
        return State(replicas, Controller(leader, 0, (1 << n) - 1), 0, 0, (), (), 0, 0, 0, 0)

    def _remembered(self, leader: int) -> int:
        """The `Replica.leader_id` of a replica acting on a LeaderAndIsr naming `leader`."""
        return leader if self.protocol.remembers_leader else NO_LEADER

    def indexed_successors(self, state: State) -> Iterator[tuple[int, State]]:
        """Every enabled action, as its slot index (`action_index`), with its successor, in a
        fixed order: the checker's hot path."""
        for slot, (_, transition, replica) in enumerate(self._slots):
            following = transition(self, state, replica)
            if following is not None:
                yield slot, following

    def successors(self, state: State) -> Iterator[tuple[Action, State]]:
        """Every enabled action with its successor, in a fixed order."""
        for slot, following in self.indexed_successors(state):
            yield self._slots[slot][0], following

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
        return self._slots[index][0]

    # ------------------------------------------------------------------- helpers

    @staticmethod
    def with_replica(state: State, index: int, replica: Replica) -> State:
        return state._replace(replicas=_put(state.replicas, index, replica))

    def _current_leader(self, state: State) -> int:
        """The index of the live replica leading in the controller's epoch (in its leadership: one
        that has not yet taken an epoch bump still leads, `model/epoch_bumps.py`), or NO_LEADER."""
        index = state.controller.leader
        if index != NO_LEADER:
            leader = state.replicas[index]
            epoch = state.controller.epoch
            if leader.acts_as_leader and self._leadership_start(state, epoch) <= leader.epoch <= epoch:
                return index
        return NO_LEADER

    def _acting_leader(self, state: State, epoch: int) -> int:
        """The live replica acting as leader in `epoch`, or NO_LEADER: the controller's leader,
        or a deposed one that has not yet heard of a newer epoch."""
        index = state.controller.leader
        if index != NO_LEADER and state.replicas[index].epoch == epoch and state.replicas[index].acts_as_leader:
            return index
        for index, replica in enumerate(state.replicas):
            if replica.epoch == epoch and replica.acts_as_leader:
                return index
        return NO_LEADER

    def reachable_leader(self, state: State, index: int) -> int:
        """The leader a live follower talks to: the one acting in the follower's epoch, when
        neither is cut off from the other brokers; NO_LEADER otherwise."""
        follower = state.replicas[index]
        if not follower.alive or state.peer_cut >> index & 1:
            return NO_LEADER
        leader = self._acting_leader(state, follower.epoch)
        if leader == index or leader == NO_LEADER or state.peer_cut >> leader & 1:
            return NO_LEADER
        return leader

    @staticmethod
    def _isr_of(state: State, index: int) -> int:
        """The ISR the replica acting as leader at `index` works with: the controller's, with the members the
        controller removed that it has not yet read (`Controller.unseen`); a deposed leader's own."""
        controller = state.controller
        return controller.isr | controller.unseen if index == controller.leader else state.replicas[index].stale_isr

    @staticmethod
    def _maximal_isr(state: State, index: int) -> int:
        """The ISR the leader at `index` counts its HW and acknowledgements over: its ISR and the member its
        AlterPartition in flight adds (`PendingExpandIsr.maximalIsr`, KIP-497)."""
        proposal = state.controller.proposal if index == state.controller.leader else 0
        return ReplicationModel._isr_of(state, index) | proposal

    @staticmethod
    def _can_write_isr(state: State, index: int) -> bool:
        """A leader's ISR change reaches ZooKeeper only from the controller's leader, connected."""
        return index == state.controller.leader and not state.zk_cut >> index & 1

    def _advance_hw(self, state: State, index: int) -> State:
        """The HW of the leader at `index` rises to the least LEO over its ISR as it knows them;
        it never falls. Every record then below it becomes readable (`consumed`) and, on the
        controller's leader, joins the `committed` history."""
        if index == NO_LEADER:
            return state
        leader = state.replicas[index]
        isr = self._isr_of(state, index)
        maximal = self._maximal_isr(state, index)
        remote_leos = leader.remote_leos
        isr_leos = [leader.leo if member == index else remote_leos[member] for member in isr_members(maximal)]
        old_hw, hw = leader.hw, max(leader.hw, min(isr_leos))
        if self.protocol.hw_needs_min_isr and bin(isr).count("1") < self.config.min_isr:
            hw = old_hw  # KAFKA-15583: `maybeIncrementLeaderHW` returns while `isUnderMinIsr`
        if hw != old_hw:
            leader = leader._replace(hw=hw)
            state = self.with_replica(state, index, leader)
            if self.config.acks == "all" and bin(maximal).count("1") >= self.config.min_isr:
                # the delayed produce completes (Partition.checkEnoughReplicasReachOffset); with
                # too small an ISR the producer gets NotEnoughReplicasAfterAppend instead
                # only the leader that took the write holds it in purgatory: its own records carry
                # its epoch; a crash or a new epoch ends the wait without an acknowledgement
                start = self._leadership_start(state, leader.epoch)
                acked = state.acked
                for record in leader.log[old_hw:hw]:
                    if start <= record.epoch <= leader.epoch:
                        acked |= 1 << record.msg  # a set of messages, as the Z3 encoding's flags
                state = state._replace(acked=acked)
        if not hw:
            return state
        consumed = self._history_with(state.consumed, leader.log, hw)
        if consumed is not state.consumed:
            state = state._replace(consumed=consumed)
        if index == self._current_leader(state):
            committed = self._history_with(state.committed, leader.log, hw)
            if committed is not state.committed:
                state = state._replace(committed=committed)
        return state

    @staticmethod
    def _leadership_start(state: State, epoch: int) -> int:
        """The first epoch of the leadership whose epoch is `epoch`: the records a leader holds in
        its purgatory carry these epochs. Every epoch starts one (an election) but those the
        controller's epoch bumps made (`model/epoch_bumps.py`; none here)."""
        bumped = state.controller.bumped
        while epoch > 0 and bumped >> epoch & 1:
            epoch -= 1
        return epoch

    @staticmethod
    def _elections(controller: Controller) -> int:
        """How many elections the controller has held: every epoch after the first, but bumps."""
        return controller.epoch - bin(controller.bumped).count("1")

    def elections_spent(self, state: State) -> bool:
        """The controller has held as many elections as the bound allows (`Config.elections`)."""
        return self._elections(state.controller) >= self.config.elections

    def _history_with(self, history: tuple[tuple[int, int], ...], log: tuple[Record, ...], hw: int) -> tuple:
        """`history` with every (offset, msg) below `hw` in `log` added; the same tuple when none
        is new. Memoized: few histories and logs recur across millions of states."""
        key = (history, log, hw)
        result = self._histories.get(key)
        if result is None:
            result = self._histories[key] = _union(history, [(offset, log[offset].msg) for offset in range(hw)])
        return result

    def _with_isr(self, state: State, isr: int, unclean: int = 0) -> State:
        """The controller's ISR changed to `isr` (`unclean`: a broker back from an unclean shutdown), and the
        leader's HW advanced to it."""
        state = state._replace(controller=self._isr_change(state.controller, isr, unclean))
        return self._advance_hw(state, self._current_leader(state))

    def _isr_change(self, controller: Controller, isr: int, unclean: int = 0) -> Controller:
        """The controller's partition state with the ISR `isr`; a new partition epoch, which drops an
        AlterPartition in flight (`controller_handle_alter_partition`). With eligible leader replicas (KIP-966,
        `PartitionChangeBuilder.maybePopulateTargetElr`): an ISR of min.insync.replicas members or more
        empties the ELR; a smaller one adds the old ISR's members to it, less the new ISR's and `unclean`. An ISR
        that becomes empty keeps the leader as the last known leader (KAFKA-15584, `maybeUpdateLastKnownLeader`:
        `partition.leader`), or, where the partition has none, its last member: the leader Kafka has there,
        since Kafka elects in the record that fences a leader (`controller_elect_leader`)."""
        elr, last_known_elr = controller.elr, controller.last_known_elr
        if self.protocol.eligible_leaders:
            if bin(isr).count("1") >= self.config.min_isr:
                elr = 0
            else:
                elr = (elr | controller.isr) & ~isr & ~unclean
            if controller.isr and not isr:
                last_known_elr = controller.isr if controller.leader == NO_LEADER else 1 << controller.leader
        return dropped_proposal(controller._replace(isr=isr, elr=elr, last_known_elr=last_known_elr))

    def _controller_removes(self, state: State, isr: int, unclean: int = 0) -> State:
        """The controller takes members out of the ISR on its own, leaving `isr` (`_with_isr`). With
        `Config.metadata_lag` its leader reads the change later (`leader_apply_metadata`): until then it works
        with the ISR it knew (`Controller.unseen`) and keeps an ISR change of its own pending, which the controller
        refuses (INVALID_UPDATE_VERSION, `Partition.handleAlterPartitionError`: "awaiting new the latest
        metadata"); its HW has nothing new to advance on. A change that leaves the ISR as it was (an ELR member's
        unclean registration) reaches a leader that has read every earlier one at once, as without the lag: the
        model has no partition epoch to tell it is behind by that change only."""
        controller = state.controller
        if not self.config.metadata_lag or controller.leader == NO_LEADER or (isr == controller.isr
                                                                                and not controller.unseen):
            return self._with_isr(state, isr, unclean)
        changed = self._isr_change(controller, isr, unclean)
        return state._replace(controller=changed._replace(proposal=controller.proposal,
                                                          reregistered=controller.reregistered,
                                                          unseen=controller.unseen | controller.isr & ~isr))

    def _appended(self, replica: Replica, records: tuple[Record, ...]) -> Replica:
        """The replica with `records` at the end of its log, in the page cache unless flushed."""
        return replica._replace(
            log=replica.log + records,
            unflushed=0 if self.config.flush else replica.unflushed + len(records),
            epochs=self.protocol.epochs_after_append(replica.epochs, records, replica.leo),
        )

    # ------------------------------------------------------------------- actions

    def producer_write(self, state: State, index: int) -> State | None:
        """The leader appends a producer record. With acks=all it refuses (NotEnoughReplicas)
        while its ISR is smaller than min.insync.replicas; a fenced leader refuses every write.
        A producer's stale metadata may send to a deposed leader that still acts; an acks=0 send
        to a leader that crashed unnoticed counts as written and reaches no log."""
        config = self.config
        if state.written >= config.messages:
            return None
        leader = state.replicas[index]
        lost_on_wire = config.acks == "0" and index == state.controller.leader and leader.status == CRASHED
        if not (lost_on_wire or leader.role == LEADER and leader.alive):
            return None
        if config.acks == "all" and bin(self._isr_of(state, index)).count("1") < config.min_isr:
            return None
        sent = state._replace(written=state.written + 1)
        if config.acks != "all":
            sent = sent._replace(acked=state.acked | 1 << sent.written)
        if lost_on_wire:
            return sent
        leader = self._appended(leader, (Record(sent.written, leader.epoch),))
        return self._advance_hw(self.with_replica(sent, index, leader), index)

    def leader_handle_fetch_request(self, state: State, index: int, delay: bool = False) -> State | None:
        """The leader takes the follower's fetch offset as its LEO, adds the follower back to the
        ISR if the protocol lets it join (`Partition.maybeExpandIsr`: the offset reached the
        leader's HW), recomputes its HW and builds a response with the records from that offset
        on and the new HW. A fetch beyond the leader's LEO gets OffsetOutOfRange; a fetch the
        protocol finds diverging gets no records and the offset to truncate to."""
        follower = state.replicas[index]
        if follower.response or follower.role != FOLLOWER:
            return None
        leader_index = self.reachable_leader(state, index)
        if leader_index == NO_LEADER:
            return None
        leader = state.replicas[leader_index]
        offset = follower.leo
        if follower.delayed_fetch and not follower.delayed_fetch_stale:
            follower = follower._replace(delayed_fetch=0)  # this is the delayed fetch it waits for
        diverging = self.protocol.fetch_divergence(leader, follower)
        if diverging is None and offset > leader.leo:
            response = FetchResponse(leader.leo, leader.hw, (), True)
        else:
            if diverging is None or self.protocol.diverging_fetch_updates_leader:
                state = self._record_fetch(state, leader_index, index, offset, delay)
                leader = state.replicas[leader_index]
            if diverging is None:
                response = FetchResponse(offset, leader.hw, leader.log[offset:], False)
            else:
                response = FetchResponse(diverging, leader.hw, (), True)
        return self.with_replica(state, index, follower._replace(response=response))

    def leader_send_alter_partition(self, state: State, index: int) -> State | None:
        """The leader handles the follower's fetch as `leader_handle_fetch_request` does, and the
        AlterPartition adding the follower to the ISR stays in flight: the controller handles it
        later (`controller_handle_alter_partition`). Enabled only where the fetch adds the follower,
        while delays are left (`Config.delays`)."""
        if state.delays >= self.config.delays:
            return None
        following = self.leader_handle_fetch_request(state, index, delay=True)
        return following if following is not None and following.delays > state.delays else None

    def controller_handle_alter_partition(self, state: State, index: int) -> State | None:
        """The controller handles the AlterPartition in flight that adds the replica at `index` to the ISR.
        It is still of the current leader and partition epochs: any other change of the partition drops it
        (FENCED_LEADER_EPOCH, INVALID_UPDATE_VERSION), and the leader, told of that change, stops waiting.
        The controller adds the replica unless it refuses it (`isr_updates`): a broker not live, where
        KIP-841 applies; a broker registered again since its fetch, where KIP-903 applies (INELIGIBLE_REPLICA:
        the leader goes back to its committed ISR, `Partition.handleAlterPartitionError`). With
        `Config.metadata_lag` a change of the controller's own that the leader has not read leaves the proposal
        at an older partition epoch: refused (INVALID_UPDATE_VERSION), it stays pending until the leader reads
        the change (`leader_apply_metadata`)."""
        controller = state.controller
        if controller.proposal != 1 << index or controller.unseen:
            return None  # with a change the leader has not read, the proposal is refused and stays pending
        status = state.replicas[index].status
        refused = ((self.protocol.joins_live_members_only and status in (OFFLINE, EXPIRED))
                   or (self.protocol.checks_broker_epochs and controller.reregistered >> index & 1))
        if refused:
            return state._replace(controller=dropped_proposal(controller))  # INELIGIBLE_REPLICA
        return self._with_isr(state, controller.isr | 1 << index)

    def follower_send_delayed_fetch(self, state: State, index: int) -> State | None:
        """The follower sends a fetch at its LEO that the leader handles late, while delays are left
        (`Config.delays`). It waits for it: its next `LeaderHandleFetchRequest` is this fetch. If it crashes
        first, the request stays at the leader, from an earlier incarnation (`leader_handle_stale_fetch`).
        Any new leader epoch fences it (the fetch carries the follower's epoch, KIP-320)."""
        follower = state.replicas[index]
        if state.delays >= self.config.delays or follower.delayed_fetch or follower.response \
                or follower.role != FOLLOWER or self.reachable_leader(state, index) == NO_LEADER:
            return None
        follower = follower._replace(delayed_fetch=follower.leo + 1)
        return self.with_replica(state, index, follower)._replace(delays=state.delays + 1)

    def leader_handle_stale_fetch(self, state: State, index: int) -> State | None:
        """The leader in the partition's epoch handles the fetch the replica at `index` sent before it
        crashed, so with the broker epoch of an earlier incarnation (`stale_fetch`):
        - a live follower's (registered again) is refused where the leader fences stale fetches (KAFKA-15221);
        - otherwise its offset becomes the follower's LEO in the leader's view (none beyond the leader's
          LEO: OffsetOutOfRange), which an ISR member's HW counts, and the follower joins the ISR on it as on
          any fetch; where AlterPartition carries broker epochs (KIP-903) the leader's check refuses that join
          unless the follower's new incarnation fetches while the leader decides, and then the AlterPartition
          carries the new broker epoch and the controller accepts it (KAFKA-15221's race, taken wherever it is
          possible: the other order only leaves the leader's view of a follower outside the ISR changed, which
          no rule reads before that follower's next fetch replaces it). The ISR change reaches the controller
          at once; the response goes to a connection that is gone."""
        follower = state.replicas[index]
        leader_index = self._current_leader(state)
        if not follower.delayed_fetch_stale or leader_index in (NO_LEADER, index):
            return None
        offset = follower.delayed_fetch - 1
        state = self.with_replica(state, index, follower._replace(delayed_fetch=0, delayed_fetch_stale=False))
        if self.protocol.fences_stale_fetches and follower.alive:
            return state  # NOT_LEADER_OR_FOLLOWER
        if offset > state.replicas[leader_index].leo:
            return state  # OffsetOutOfRange
        if not self.protocol.checks_broker_epochs:
            return self._record_fetch(state, leader_index, index, offset)
        if not self.protocol.fences_stale_fetches and not state.controller.unseen \
                and self._joins_isr(state, leader_index, index, offset) \
                and self.reachable_leader(state, index) == leader_index:
            joined = state._replace(controller=self._isr_change(state.controller, state.controller.isr | 1 << index))
            raced = self.leader_handle_fetch_request(joined, index)
            if raced is not None:
                return raced
        return self._record_fetch(state, leader_index, index, offset, join=False)

    def _record_fetch(self, state: State, leader_index: int, index: int, offset: int, delay: bool = False,
                      join: bool = True) -> State:
        """The leader takes `offset` as the follower's LEO, adds it to the ISR when the protocol
        lets it join (and `join`), and advances its HW. With `delay` the AlterPartition that adds it stays in
        flight (`leader_send_alter_partition`). At an older partition epoch than the controller's
        (`Controller.unseen`) the controller refuses it, and the leader keeps it pending (`PendingExpandIsr`,
        whose maximal ISR counts the follower) until it reads the controller's change."""
        leader = state.replicas[leader_index]
        controller = state.controller
        if join and self._joins_isr(state, leader_index, index, offset):
            if delay or controller.unseen:  # in flight; or refused at once, pending: no delay spent
                state = state._replace(controller=controller._replace(proposal=1 << index, reregistered=0),
                                       delays=state.delays + (0 if controller.unseen else 1))
            else:
                state = state._replace(controller=self._isr_change(controller, controller.isr | 1 << index))
        leader = leader._replace(remote_leos=_put(leader.remote_leos, index, offset))
        return self._advance_hw(self.with_replica(state, leader_index, leader), leader_index)

    def _joins_isr(self, state: State, leader_index: int, index: int, offset: int) -> bool:
        """The leader proposes to add the follower at `index`, fetching at `offset`, to the ISR: it is outside
        it and may join (`isr_join`), the leader can write ISR changes and has none in flight
        (`Partition.canAddReplicaToIsr`: `!isInflight`), and, where the controller takes only live brokers
        (KIP-841), the follower is one (`Partition.isReplicaIsrEligible`)."""
        controller = state.controller
        return (not self._isr_of(state, leader_index) >> index & 1 and not controller.proposal
                and self.protocol.may_join_isr(state.replicas[leader_index], offset)
                and self._can_write_isr(state, leader_index)
                and (not self.protocol.joins_live_members_only or state.replicas[index].status == UP))

    def follower_handle_fetch_response(self, state: State, index: int) -> State | None:
        """The follower appends the records and sets HW = min(its LEO, the response's HW);
        on OffsetOutOfRange it truncates to the leader's LEO (on a diverging epoch, as the
        protocol says)."""
        follower = state.replicas[index]
        response = follower.response
        if not (follower.alive and response) or state.peer_cut >> index & 1:
            return None
        follower = follower._replace(response=())
        if response.out_of_range:
            follower = self.protocol.handle_out_of_range(follower, response)
        else:
            follower = self._appended(follower, response.records)
            follower = follower._replace(hw=min(follower.leo, response.hw))
        return self.with_replica(state, index, follower)

    def leader_shrink_isr(self, state: State, index: int) -> State | None:
        """The leader drops a follower out of sync (`isr_shrink`: any follower before KAFKA-7152, one it
        has not seen reach its LEO after); not while an AlterPartition of its is in flight
        (`Partition.maybeShrinkIsr`: `!isInflight`). At an older partition epoch than the controller's
        (`Controller.unseen`) the controller refuses it and the leader keeps it pending (`PendingShrinkIsr`, whose
        maximal ISR is the ISR it knew) until it reads the controller's change: a proposal of the leader itself."""
        controller = state.controller
        leader_index = self._current_leader(state)
        if leader_index in (NO_LEADER, index) or controller.proposal:
            return None
        if not self._isr_of(state, leader_index) >> index & 1 or not self._can_write_isr(state, leader_index):
            return None
        leader = state.replicas[leader_index]
        if leader.remote_leos[index] >= leader.leo and not self.protocol.drops_caught_up_followers:
            return None
        if controller.unseen:
            return state._replace(controller=controller._replace(proposal=1 << leader_index))
        return self._with_isr(state, controller.isr & ~(1 << index))

    def leader_shrink_isr_fails(self, state: State, index: int) -> State | None:
        """A leader that cannot write to ZooKeeper (cut off, or deposed) tries to drop a follower out
        of sync (`isr_shrink`), fails, and refuses writes from then on (Vanlightly's fault-tolerance
        article, partition scenario 4)."""
        leader = state.replicas[index]
        if not (leader.role == LEADER and leader.alive) or self._can_write_isr(state, index):
            return None
        if index == state.controller.leader and state.controller.proposal:
            return None  # no shrink begins while an AlterPartition is in flight
        drops_any = self.protocol.drops_caught_up_followers
        if not any(member != index and (drops_any or leader.remote_leos[member] < leader.leo)
                   for member in isr_members(self._isr_of(state, index))):
            return None
        return self.with_replica(state, index, leader._replace(role=FENCED))

    def become_follower(self, state: State, index: int) -> State | None:
        """The replica acts on a LeaderAndIsr naming another leader in a newer epoch; the
        truncation protocol decides what it does to its log, unless the replica skips it
        (`follower_skips`: `Partition.makeFollower` returns false) and only takes the epoch."""
        replica = state.replicas[index]
        controller = state.controller
        if not replica.alive or controller.leader in (NO_LEADER, index) or replica.epoch >= controller.epoch:
            return None
        if state.zk_cut >> index & 1:
            return None
        if self.protocol.skips_leader_and_isr(replica, controller.leader, controller.epoch):
            return self.with_replica(state, index, replica._replace(epoch=controller.epoch))
        replica = replica._replace(epoch=controller.epoch, response=(), stale_isr=0, remote_leos=(),
                                   leader_id=self._remembered(controller.leader))
        return self.with_replica(state, index, self.protocol.become_follower(replica))

    def replica_flush(self, state: State, index: int) -> State | None:
        """The broker's page cache reaches the disk (log.flush.interval, or the OS writing back)."""
        replica = state.replicas[index]
        if not replica.unflushed or not replica.alive:
            return None
        return self.with_replica(state, index, replica._replace(unflushed=0))

    def replica_crash(self, state: State, index: int) -> State | None:
        """The broker dies: its log, HW checkpoint and epoch cache survive, except records not yet
        flushed and the cache entries that start at or past the recovered log end (dropped when the
        log is loaded); in-memory state does not. A broker whose session had already expired is
        offline."""
        replica = state.replicas[index]
        if not replica.alive or state.crashes >= self.config.crashes:
            return None
        replica = truncate(replica, replica.leo - replica.unflushed, self.protocol, log_load=True)
        replica = replica._replace(status=OFFLINE if replica.status == EXPIRED else CRASHED, role=NO_ROLE,
                                   epoch=UNKNOWN, response=(), stale_isr=0, remote_leos=(), leader_id=NO_LEADER,
                                   delayed_fetch_stale=replica.delayed_fetch > 0)  # its fetch stays at the leader
        return self.with_replica(state, index, replica)._replace(crashes=state.crashes + 1)

    def replica_disk_failure(self, state: State, index: int) -> State | None:
        """The broker dies and its disk with it: replaced, it holds no log, HW checkpoint
        (replication-offset-checkpoint) or epoch cache (leader-epoch-checkpoint) when it starts
        again, as a broker does on a new, empty log directory (`LogManager.loadLogs` finds no log;
        the partition's log is created empty when its LeaderAndIsr arrives:
        `Partition.getOrCreateReplica` to 2.3, `Partition.createLogIfNotExists` from 2.4.0). One of
        the crashes and of the disk failures (`Config.disk_failures`); the controller does with it
        what it does after any crash."""
        if state.disk_failures >= self.config.disk_failures:
            return None
        crashed = self.replica_crash(state, index)
        if crashed is None:
            return None
        crashed = self.with_replica(crashed, index, truncate(crashed.replicas[index], 0, self.protocol, log_load=True))
        if self.config.counts_disk_failures:
            crashed = crashed._replace(disk_failures=state.disk_failures + 1)
        return crashed

    def replica_restart(self, state: State, index: int) -> State | None:
        """The broker starts again and registers, with a new broker epoch; it waits for a LeaderAndIsr. A crashed leader
        starts only once the controller has noticed the crash, and so does any crashed replica where
        the controller sees every bounce (`bounce_noticed`, KIP-380). With eligible leader replicas the
        controller takes the new incarnation as an unclean shutdown and removes the broker from the ISR and
        the ELR (KIP-966)."""
        replica = state.replicas[index]
        if replica.alive or (replica.status == CRASHED and (state.controller.leader == index
                                                            or self.protocol.bounce_noticed)):
            return None
        if state.zk_cut >> index & 1:
            return None
        state = self.with_replica(state, index, replica._replace(status=UP))
        controller = state.controller
        if controller.proposal >> index & 1:  # a new broker epoch, which an AlterPartition in flight predates
            controller = controller._replace(reregistered=controller.reregistered | 1 << index)
            state = state._replace(controller=controller)
        if self.protocol.eligible_leaders and (controller.isr | controller.elr) >> index & 1:
            # a new incarnation: `ReplicationControlManager.handleBrokerUncleanShutdown`
            state = self._controller_removes(state, controller.isr & ~(1 << index), unclean=1 << index)
        return state

    def controller_notice_failure(self, state: State, index: int) -> State | None:
        """The controller sees the broker's ZooKeeper session expire, after a crash or a cut: a lost
        leader leaves the partition leaderless (a live one keeps believing in its ISR); a lost
        member leaves the ISR unless it is the last one."""
        replica = state.replicas[index]
        if replica.status == CRASHED:
            replica = replica._replace(status=OFFLINE)
        elif replica.status == UP and state.zk_cut >> index & 1:
            replica = replica._replace(status=EXPIRED)
            if index == state.controller.leader:
                replica = replica._replace(stale_isr=self._isr_of(state, index))
        else:
            return None
        state = self.with_replica(state, index, replica)
        controller = state.controller
        if controller.leader == index:
            # a new partition epoch: an AlterPartition in flight is dropped
            state = state._replace(controller=dropped_proposal(controller._replace(leader=NO_LEADER, unseen=0)))
        remaining = controller.isr & ~(1 << index)
        if controller.isr >> index & 1 and (remaining or self.protocol.eligible_leaders):
            # with eligible leader replicas the ISR may become empty (`PartitionChangeBuilder.build`)
            state = self._controller_removes(state, remaining)
        return state

    def controller_elect_leader(self, state: State, index: int) -> State | None:
        """The controller elects a live ISR member (with eligible leader replicas, a live ELR member
        while the ISR is empty; while both are empty, the last known leader, uncleanly; any live replica, as
        the only ISR member, when unclean election is enabled and no such member is live) in a new epoch.
        It cannot make a broker it cannot reach the leader.

        The last known leader (KAFKA-15584, 3.7.0: `PartitionChangeBuilder.electAnyLeader` ->
        `canElectLastKnownLeader`, on wherever the ELR is, `useLastKnownLeaderInBalancedRecovery` being true
        unless a test sets it) comes before an unclean election of any other replica, and is an unclean
        election itself: the only ISR member, the ELR and the last known leader cleared (`tryElection`,
        `maybeUpdateRecordElr`, `maybeUpdateLastKnownLeader`). Kafka elects it even while it is down
        (`canElectLastKnownLeader` only logs that); here it is elected once it is up, which is where Kafka's
        leader that is down ends too: its registration leaves the ISR empty with it as the last known leader,
        and its unfencing elects it again."""
        controller = state.controller
        candidate = state.replicas[index]
        if controller.leader != NO_LEADER or self.elections_spent(state):
            return None
        if candidate.status != UP or state.zk_cut >> index & 1:
            return None
        # KIP-966: while the ISR is empty an ELR member is as good (`PartitionChangeBuilder.isValidNewLeader`)
        eligible = controller.isr or controller.elr
        live_eligible = [m for m in isr_members(eligible) if state.replicas[m].status == UP]
        elr, last_known = controller.elr, controller.last_known_elr
        if index in live_eligible:
            isr = controller.isr or 1 << index  # an ELR member becomes the only ISR member (`tryElection`)
            elr &= ~(1 << index)
        elif not eligible and bin(last_known).count("1") == 1:
            if last_known != 1 << index:
                return None  # KAFKA-15584: the last known leader, before any unclean election
            isr = 1 << index
        elif self.config.unclean and not live_eligible:
            isr, elr = 1 << index, 0  # an unclean election clears the ELR (`maybeUpdateRecordElr`)
        else:
            return None
        epoch = controller.epoch + 1
        state = fenced_fetches(state)  # a new epoch
        leader = state.replicas[index]._replace(
            role=LEADER,
            epoch=epoch,
            response=(),
            stale_isr=0,
            remote_leos=(UNKNOWN,) * self.config.replicas,
            epochs=self.protocol.epochs_on_become_leader(candidate.epochs, epoch, candidate.leo),
            leader_id=self._remembered(index),
        )
        controller = controller._replace(leader=index, epoch=epoch, isr=isr, elr=elr, last_known_elr=0)
        state = self.with_replica(state, index, leader)._replace(controller=controller)
        return self._advance_hw(state, index)

    def leader_apply_metadata(self, state: State, index: int) -> State | None:
        """KRaft (`Config.metadata_lag`): the leader reads the controller's ISR changes it had not read in the
        metadata log (`Partition.makeLeader` at a newer partition epoch, 3.9: `updateAssignmentAndIsr` replaces
        its ISR and any pending change, then `maybeIncrementLeaderHW`, "since ISR could be down to 1"). It
        needs to reach the controller."""
        controller = state.controller
        if not controller.unseen or index != self._current_leader(state) or state.zk_cut >> index & 1:
            return None
        state = state._replace(controller=dropped_proposal(controller)._replace(unseen=0))
        return self._advance_hw(state, index)

    def follower_truncate_by_leader_epoch(self, state: State, index: int) -> State | None:
        """One OffsetsForLeaderEpoch exchange: the follower sends its latest epoch, truncates to the
        point the protocol derives from the leader's answer, and fetches once truncation is complete."""
        follower = state.replicas[index]
        if follower.role != TRUNCATING:
            return None
        leader_index = self.reachable_leader(state, index)
        if leader_index == NO_LEADER:
            return None
        offset, complete = self.protocol.truncation_point(state.replicas[leader_index], follower)
        follower = truncate(follower, offset, self.protocol)
        return self.with_replica(state, index, follower._replace(role=FOLLOWER) if complete else follower)

    # ------------------------------------------------------------ network failures

    def zk_disconnect(self, state: State, index: int) -> State | None:
        """The broker loses ZooKeeper and the controller; it keeps running and serving."""
        if state.cuts >= self.config.partitions or state.replicas[index].status != UP or state.zk_cut >> index & 1:
            return None
        return state._replace(zk_cut=state.zk_cut | 1 << index, cuts=state.cuts + 1)

    def zk_reconnect(self, state: State, index: int) -> State | None:
        """The broker reaches ZooKeeper again: with an expired session it registers anew (and
        hears of a newer leader by LeaderAndIsr); a fenced leader still leading may write again."""
        if not state.zk_cut >> index & 1:
            return None
        state = state._replace(zk_cut=state.zk_cut & ~(1 << index))
        replica = state.replicas[index]
        if replica.status == EXPIRED:
            replica = replica._replace(status=UP)
        if replica.role == FENCED and self._can_write_isr(state, index):
            replica = replica._replace(role=LEADER)
        return self.with_replica(state, index, replica)

    def peer_disconnect(self, state: State, index: int) -> State | None:
        """The broker loses every other broker: no fetches to or from it."""
        if state.cuts >= self.config.partitions or not state.replicas[index].alive or state.peer_cut >> index & 1:
            return None
        return state._replace(peer_cut=state.peer_cut | 1 << index, cuts=state.cuts + 1)

    def peer_reconnect(self, state: State, index: int) -> State | None:
        if not state.peer_cut >> index & 1:
            return None
        return state._replace(peer_cut=state.peer_cut & ~(1 << index))


def fenced_fetches(state: State) -> State:
    """The state in a new leader epoch: every delayed fetch in flight is fenced (FENCED_LEADER_EPOCH:
    a fetch carries its sender's leader epoch, KIP-320, in every variant that delays one)."""
    if not any(replica.delayed_fetch for replica in state.replicas):
        return state
    return state._replace(replicas=tuple(replica._replace(delayed_fetch=0, delayed_fetch_stale=False)
                                         if replica.delayed_fetch else replica for replica in state.replicas))


def _union(history: tuple[tuple[int, int], ...], entries: list[tuple[int, int]]) -> tuple[tuple[int, int], ...]:
    """A sorted history with `entries` added; the same tuple when nothing is new."""
    known = set(history)
    if known.issuperset(entries):
        return history
    return tuple(sorted(known.union(entries)))
