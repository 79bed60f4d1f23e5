"""The replication model's transition relation as Z3 formulas, action by action.

Each method mirrors the action of the same name in `model/replication.py`: a guard over the
state before and the state after as terms over it. A replica index an action concerns is a
concrete number (one formula per action slot); an index the state decides (the leader a
follower fetches from, the controller's leader) is split into one case per replica and the
cases merged with `If`. `transition` conjoins the guard with a frame condition on every
variable of the next state, so the relation is exact: it admits one successor per enabled
slot, the one the explicit model computes, which the agreement tests check on every
reachable state of small configurations.

Where the two could differ only on unreachable states, the encoding says so: a log or epoch
cache that would grow past its capacity disables the transition (`overflow`; see `layout`),
an epoch cache is truncated as a prefix (starts rise along every reachable cache), and a leader
with an empty ISR keeps its HW (the explicit model never meets one: an ISR is empty only with
eligible leader replicas, and then the partition has no leader).

A replica told of a newer epoch of the leader it follows (`leader_id`, a number per replica in the
layout of the variants that keep it, `Shape.leader_ids`) skips the LeaderAndIsr as `follower_skips`
says (`ReplicationModel.become_follower`, `Protocol.skips_leader_and_isr`): it takes the epoch only,
up to 2.0.0 in any newer epoch, in 2.0.1 in the next only (KAFKA-7164); an election makes the new
leader follow itself and any other new follower the controller's leader, a crash forgets the leader.

Delayed requests (`Config.delays`; the layout keeps them only where a configuration has delays,
`Shape.delays`): the leader's AlterPartition in flight counts in its HW and acknowledgements
(`maximal_isr`), blocks every other ISR change of the leader's, and is dropped by any new partition
epoch (`isr_change`, the leader's loss) or handled by the controller as `isr_updates` says
(`controller_handle_alter_partition`); a delayed fetch is the follower's next fetch, stale after its
crash, handled late as `stale_fetch` says (`leader_handle_stale_fetch`, KAFKA-15221's race included),
and fenced by a new leader epoch (`fenced_fetches`).

A leader that reads the metadata late (`Config.metadata_lag`; the layout's `unseen` flags, `Shape.lag`): the
controller's own removals (`controller_removes`: a failure noticed, an unclean registration) join `unseen` while
the partition has a leader, whose ISR is the controller's and those (`leader_isr`, `isr_of`); an ISR change it
proposes meanwhile stays pending in `proposal` (a shrink as a proposal of the leader itself), and the controller
handles none until the leader reads the removals (`leader_apply_metadata`).

Two choices act on the controller's ISR changes: `hw_needs_min_isr` (KAFKA-15583: the HW stays
put while the leader's ISR is below min.insync.replicas, `advance_hw`) and `eligible_leaders`
(KIP-966: the ELR, one flag per replica in the layout, kept by every ISR change, `isr_change`; the
last ISR member leaves the ISR too and stays as the last known leader, `last_known_elr`; an ELR member
is elected while the ISR is empty, the last known leader while both are; a restarting ELR or ISR member
leaves both).

`SymbolicModel` is the replication model's `encoding.SymbolicEncoding`: with the invariants'
formulas and well-formedness of `properties.py` and the layout's decoding, bounded model
checking (`bmc.py`) runs it as it runs every model's encoding.

With `bumps` it is the encoding of the bump model instead (`model/epoch_bumps.py`
`EpochBumpModel`, the model `control.epoch_bumps.EpochBumpSystem`, whose docstrings cite the Kafka
code of each rule): the ZooKeeper controller bumps the leader epoch when it removes a dead
follower from the ISR (`controller_notice_failure`), and the leader takes the bump at once
(`take_bump`) or, cut off from ZooKeeper, when it reconnects (`zk_reconnect`); a follower of that
leader skips the bump as it skips a re-election (`become_follower`, up to 2.0.1), and a request,
carrying no epoch up to 2.0.1, reaches the leader whose leadership includes its epoch
(`acting_leaders`). The controller's `bumped` flags mark the epochs bumps made: a leadership starts
at the last epoch no bump made (`leadership_start`), and the elections bound counts elections, not
epochs (`elections`). The replication model's states have no flags (`Shape.epochs` 0), and every
formula is then the one it was before the bump was encoded.
"""

from __future__ import annotations

from functools import partial
from typing import Callable

import z3

from kafka_mc.control.epoch_bumps import EpochBumpSystem
from kafka_mc.control.replication import ReplicationSystem
from kafka_mc.model import PROTOCOLS, Action, Config, State
from kafka_mc.model.epoch_bumps import bounding_config, greatest_epoch
from kafka_mc.model.interface import ALWAYS, Property
from kafka_mc.model.protocols import SKIP_NEXT_EPOCH, UnencodedChoice
from kafka_mc.properties.lowering import NotLowered, lower
from kafka_mc.model.state import (
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
)

from .encoding import Formula
from .layout import Shape, SymReplica, SymState, as_int, constant, decode, equal, fresh, leaves, merge, replace
from .properties import SYMBOLIC_INVARIANTS, well_formed
from .terms import acts_as_leader, alive, count, pick, put, smax, smin, with_replica
from .truncation import SymbolicProtocol
from .user_properties import user_formula

UNBOUNDED = "any"


class EncodingError(ValueError):
    """A configuration the Z3 encoding does not cover; the message names it."""


class SymbolicModel:
    """The transition relation of one configuration. `unbounded` names the counters (`crashes`,
    `elections`) whose bound is lifted, as `prove` does; `shape` sets the array sizes; `bumps`:
    the bump model's relation (`model/epoch_bumps.py`, the module docstring), which `prove` does
    not take (with `unbounded`: EncodingError naming the model)."""

    def __init__(self, config: Config, shape: Shape | None = None, unbounded: frozenset[str] = frozenset(),
                 bumps: bool = False):
        if bumps and unbounded:
            raise EncodingError(f"the {EpochBumpSystem.name} model has no inductive proof: prove runs the "
                                f"{ReplicationSystem.name} model's encoding only")
        if unbounded and config.disk_failures:
            raise EncodingError(f"disk_failures {config.disk_failures}: a proof lifts the bound on crashes, of which "
                                "the disk failures are a part; prove takes no disk failures (disk_failures 0)")
        self.config = config
        self.bumps = bumps
        # the explicit model, whose traces the decoded paths are (EpochBumpModel refuses a variant it lacks)
        self.model: ReplicationSystem | EpochBumpSystem = \
            EpochBumpSystem(config) if bumps else ReplicationSystem(config)
        self.shape = shape or Shape.of(config, integers=bool(unbounded), bumps=bumps)
        if bumps and self.shape.epochs <= greatest_epoch(config):
            raise EncodingError(f"the {EpochBumpSystem.name} model needs a flag for each epoch up to "
                                f"{greatest_epoch(config)}; the shape has {self.shape.epochs}")
        if self.shape.leader_ids != PROTOCOLS[config.protocol].remembers_leader:
            raise EncodingError(f"protocol {config.protocol!r} {'does not keep' if self.shape.leader_ids else 'keeps'} "
                                "the leader each replica follows (`follower_skips`); the shape's `leader_ids` is "
                                f"{self.shape.leader_ids}")
        # `isr_removal_bump` under the bump model: whether the controller bumps (not KRaft from 3.6), and whether a
        # follower's requests carry no epoch, reaching the leader in any epoch of its leadership (up to 2.0.1)
        self.isr_bumps = bumps and PROTOCOLS[config.protocol].bumps_on_isr_removal
        self.unfenced_requests = bumps and PROTOCOLS[config.protocol].followers_skip_bumps
        self.unbounded = unbounded
        self.explicit = self.model.transitions
        try:
            self.protocol = SymbolicProtocol(PROTOCOLS[config.protocol])
        except UnencodedChoice as refused:
            raise EncodingError(str(refused)) from None
        missing = [name for name in self.explicit.action_names if not hasattr(self, _method_name(name))]
        if missing:
            raise EncodingError(f"action {missing[0]} has no Z3 encoding")
        self.slots: tuple[Action, ...] = tuple(
            self.explicit.action_at(slot) for slot in range(len(self.explicit.action_names) * config.replicas))
        self._overflows: list = []
        self.num = self.shape.num

    # ------------------------------------------------------------------ the relation

    def fresh(self, prefix: str) -> SymState:
        return fresh(self.shape, prefix)

    def action_variable(self, name: str) -> z3.ExprRef:
        """A step's action slot number (a byte when numbers are bit-vectors)."""
        return z3.Int(name) if self.shape.bits is None else z3.BitVec(name, 8)

    def initial(self, s: SymState) -> z3.BoolRef:
        """`s` is one of the explicit model's initial states."""
        return z3.Or([equal(s, constant(self.shape, state)) for state in self.explicit.initial_states()])

    def successor(self, s: SymState, slot: int) -> tuple[z3.BoolRef, SymState]:
        """The guard of action slot `slot` in `s` and the state it leads to."""
        action = self.slots[slot]
        self._overflows = []
        guard, after = getattr(self, _method_name(action.name))(s, action.replica)
        if self._overflows:
            guard = z3.And(guard, z3.Not(z3.Or(self._overflows)))
        return guard, after

    def transition(self, s: SymState, t: SymState, slot: int) -> z3.BoolRef:
        """Slot `slot` is enabled in `s` and `t` is its successor (every variable framed)."""
        guard, after = self.successor(s, slot)
        return z3.And(guard, equal(t, after))

    def step(self, s: SymState, t: SymState, action: z3.ArithRef) -> z3.BoolRef:
        """`t` follows `s` by the action slot numbered `action`: the slot's guard holds, and each
        variable of `t` takes the value that slot gives it, or keeps its value in `s` when the
        slot leaves it alone (the frame condition, stated once per variable for all slots)."""
        chosen = [action == slot for slot in range(len(self.slots))]
        guards, successors = zip(*(self.successor(s, slot) for slot in range(len(self.slots))))
        afters = [leaves(after) for after in successors]
        frames = []
        for position, (target, before) in enumerate(zip(leaves(t), leaves(s))):
            changes: dict[int, tuple] = {}  # term id -> (term, the slots that give it)
            for slot, after in enumerate(afters):
                term = after[position]
                if not term.eq(before):
                    changes.setdefault(term.get_id(), (term, []))[1].append(chosen[slot])
            value = before
            for term, slots in changes.values():
                value = z3.If(z3.Or(slots), term, value)
            frames.append(target == value)
        enabled = z3.Or([z3.And(pick, guard) for pick, guard in zip(chosen, guards)])
        return z3.And(action >= 0, action < len(self.slots), enabled, *frames)

    # ------------------------------------------------------------------ the rest of SymbolicEncoding

    def solver(self) -> z3.Solver:
        """QF_BV where the numbers are bit-vectors."""
        return z3.SolverFor("QF_BV") if self.shape.bits else z3.Solver()

    def well_formed(self, s: SymState) -> z3.BoolRef:
        return well_formed(s)

    def formula(self, prop: Property) -> Formula:
        """A state invariant's formula, `SYMBOLIC_INVARIANTS`; a user's property (`Property.predicate`)
        lowered (`properties.lowering`) and encoded (`user_properties.user_formula`)."""
        if prop.predicate is not None:
            # with the bumps, within the bounds of the epochs they reach (`model.epoch_bumps.bounding_config`)
            config = bounding_config(self.config) if self.bumps else self.config
            try:
                return user_formula(lower(prop.predicate, config, prop.name), self.shape, self.slots)
            except NotLowered as error:
                raise NotLowered(f"property {prop.name}: {error}") from None
        if prop.kind != ALWAYS or prop.on_step:
            raise EncodingError(f"{prop.name} has no Z3 encoding: only state invariants have one")
        if prop.name not in SYMBOLIC_INVARIANTS:
            raise EncodingError(f"invariant {prop.name} has no Z3 encoding")
        holds = SYMBOLIC_INVARIANTS[prop.name]
        return lambda before, action, after: holds(after)

    def decode(self, solver_model: z3.ModelRef, s: SymState) -> State:
        return decode(solver_model, s)

    def decode_action(self, solver_model: z3.ModelRef, action: z3.ExprRef) -> Action:
        return self.slots[as_int(solver_model.eval(action, model_completion=True))]

    def overflow(self, condition) -> None:
        """Record a condition under which the transition being built would overflow an array."""
        self._overflows.append(condition)

    def _only_when(self, condition, build: Callable[[], SymState]) -> SymState:
        """`build()`, a state the transition takes only where `condition` holds: the overflows it
        records count there only."""
        mark = len(self._overflows)
        built = build()
        self._overflows[mark:] = [z3.And(condition, overflow) for overflow in self._overflows[mark:]]
        return built

    def _bounded(self, counter: str, value, bound: int) -> z3.BoolRef:
        return z3.BoolVal(True) if counter in self.unbounded else value < bound

    # ------------------------------------------------------------------ helpers

    def leadership_start(self, s: SymState, epoch):
        """`ReplicationModel._leadership_start`: the first epoch of the leadership whose epoch is
        `epoch`, going down past the epochs the controller's bumps made; `epoch` itself without
        bump flags (the replication model) and outside the epochs the flags cover."""
        if not s.bumped:
            return epoch
        starts = [self.num(0)]  # of each epoch the flags cover: epoch 0 starts the first leadership
        for value, bumped in enumerate(s.bumped[1:], start=1):
            starts.append(z3.If(bumped, starts[-1], self.num(value)))
        start = epoch
        for value in reversed(range(len(starts))):
            start = z3.If(epoch == value, starts[value], start)
        return start

    def elections(self, s: SymState):
        """`ReplicationModel._elections`: the controller's epoch less the epochs its bumps made."""
        return s.epoch - count(s.bumped, s.epoch) if s.bumped else s.epoch

    def current_leader(self, s: SymState, index: int) -> z3.BoolRef:
        """Replica `index` is the live replica leading in the controller's epoch (in its
        leadership: with the bump, one that has not yet taken a bump still leads)."""
        replica = s.replicas[index]
        if not s.bumped:
            return z3.And(s.leader == index, acts_as_leader(replica), replica.epoch == s.epoch)
        return z3.And(s.leader == index, acts_as_leader(replica), self.leadership_start(s, s.epoch) <= replica.epoch,
                      replica.epoch <= s.epoch)

    def acting_leaders(self, s: SymState, epoch) -> list[z3.BoolRef]:
        """Per replica: it is the live replica acting as leader in `epoch` (the controller's
        leader first, else the first such replica), as `ReplicationModel._acting_leader`. Up to
        2.0 with the bump (`EpochBumpModel._acting_leader`): the first replica acting as leader
        whose leadership includes `epoch`, the controller's leader leading up to the controller's
        epoch (bumps it has not yet taken included)."""
        if self.unfenced_requests:
            reaches = [z3.And(acts_as_leader(r), self.leadership_start(s, r.epoch) <= epoch,
                              epoch <= z3.If(self.current_leader(s, j), s.epoch, r.epoch))
                       for j, r in enumerate(s.replicas)]
            return [z3.And(reaches[j], *[z3.Not(earlier) for earlier in reaches[:j]]) for j in range(len(reaches))]
        acting = [z3.And(r.epoch == epoch, acts_as_leader(r)) for r in s.replicas]
        by_controller = [z3.And(s.leader == j, acting[j]) for j in range(len(acting))]
        controller_acts = z3.Or(by_controller)
        return [z3.Or(by_controller[j],
                      z3.And(z3.Not(controller_acts), acting[j], *[z3.Not(a) for a in acting[:j]]))
                for j in range(len(acting))]

    def reachable_leaders(self, s: SymState, index: int) -> list[tuple[int, z3.BoolRef]]:
        """(leader, condition): the leader a live follower talks to, as `reachable_leader`."""
        follower = s.replicas[index]
        acting = self.acting_leaders(s, follower.epoch)
        base = z3.And(alive(follower), z3.Not(s.peer_cut[index]))
        return [(j, z3.And(base, acting[j], z3.Not(s.peer_cut[j]))) for j in range(len(acting)) if j != index]

    def isr_of(self, s: SymState, index: int) -> list:
        """`ReplicationModel._isr_of`: the controller's ISR with the removals its leader has not read
        (`unseen`, `Shape.lag`) for the controller's leader; a deposed leader's own."""
        stale = s.replicas[index].stale_isr
        return [z3.If(s.leader == index, member, old) for member, old in zip(self.leader_isr(s), stale)]

    def leader_isr(self, s: SymState) -> list:
        """The ISR the controller's leader works with: the controller's and the removals it has not read."""
        return [z3.Or(member, unseen) for member, unseen in zip(s.isr, s.unseen)] if s.unseen else s.isr

    def maximal_isr(self, s: SymState, index: int) -> list:
        """`ReplicationModel._maximal_isr`: the ISR of the leader at `index` and the member its AlterPartition
        in flight adds (`PendingExpandIsr.maximalIsr`, KIP-497)."""
        isr = self.isr_of(s, index)
        if not s.proposal:
            return isr
        return [z3.Or(member, z3.And(s.leader == index, added)) for member, added in zip(isr, s.proposal)]

    def joins_isr(self, s: SymState, j: int, i: int, offset) -> z3.BoolRef:
        """`ReplicationModel._joins_isr`: the leader `j` proposes to add follower `i`, fetching at `offset`, to
        the ISR: it is outside it and may join (`isr_join`), the leader can write ISR changes and has none in
        flight, and, where the controller takes only live brokers (KIP-841), the follower is one."""
        joins = z3.And(z3.Not(self.leader_isr(s)[i]), self.protocol.may_join_isr(s.replicas[j], offset),
                       self.can_write_isr(s, j), z3.Not(z3.Or(s.proposal)))
        if self.protocol.declaration.joins_live_members_only:
            joins = z3.And(joins, s.replicas[i].status == UP)
        return joins

    def dropped_proposal(self, s: SymState, when=True) -> SymState:
        """`replication.dropped_proposal` where `when` holds: no AlterPartition in flight."""
        if not s.proposal:
            return s
        return replace(s, proposal=[z3.And(z3.Not(when), flag) for flag in s.proposal],
                       reregistered=[z3.And(z3.Not(when), flag) for flag in s.reregistered])

    def fenced_fetches(self, s: SymState) -> SymState:
        """`replication.fenced_fetches`: a new leader epoch fences every delayed fetch."""
        if not s.delays:
            return s
        return replace(s, replicas=[replace(r, delayed_fetch=[self.num(0)], delayed_fetch_stale=[z3.BoolVal(False)])
                                    for r in s.replicas])

    def can_write_isr(self, s: SymState, index: int) -> z3.BoolRef:
        return z3.And(s.leader == index, z3.Not(s.zk_cut[index]))

    def truncate(self, replica: SymReplica, offset, log_load: bool = False) -> SymReplica:
        """`model.protocols.truncate`: cut the log at `offset` when it is shorter than the log; at or
        past the end, drop the cache entries starting there after a log load or under
        `truncate_at_end`."""
        leo = replica.log_len
        cut = replace(
            replica,
            log_len=offset,
            log_msg=[z3.If(i < offset, msg, 0) for i, msg in enumerate(replica.log_msg)],
            log_epoch=[z3.If(i < offset, epoch, 0) for i, epoch in enumerate(replica.log_epoch)],
            unflushed=smax(0, replica.unflushed - (leo - offset)),
            hw=smin(replica.hw, offset),
        )
        at_end = self.protocol.after_truncate(replica, leo) \
            if log_load or self.protocol.declaration.truncate_at_end else replica
        return merge(offset < leo, self.protocol.after_truncate(cut, offset), at_end)

    def appended(self, replica: SymReplica, msgs: list, epochs: list, count_) -> SymReplica:
        """The replica with the first `count_` of the records (`msgs`, `epochs`) after its log."""
        leo, end = replica.log_len, replica.log_len + count_
        self.overflow(end > self.shape.log)
        grown = replace(
            replica,
            log_len=end,
            log_msg=[z3.If(i < leo, m, z3.If(i < end, pick(msgs, i - leo), 0)) for i, m in enumerate(replica.log_msg)],
            log_epoch=[z3.If(i < leo, e, z3.If(i < end, pick(epochs, i - leo), 0))
                       for i, e in enumerate(replica.log_epoch)],
            unflushed=self.num(0) if self.config.flush else replica.unflushed + count_,
        )
        return self.protocol.after_append(self, grown, epochs, count_, leo)

    def _no_response(self, replica: SymReplica) -> SymReplica:
        zeros = [self.num(0)] * len(replica.resp_msg)
        return replace(replica, has_response=z3.BoolVal(False), resp_offset=self.num(0), resp_hw=self.num(0),
                       resp_len=self.num(0), resp_msg=zeros, resp_epoch=zeros, resp_oor=z3.BoolVal(False))

    def _forget_leadership(self, replica: SymReplica) -> SymReplica:
        """No response in flight, no stale ISR, no view of the others' LEOs."""
        n = self.shape.replicas
        return replace(self._no_response(replica), stale_isr=[z3.BoolVal(False)] * n, leading=z3.BoolVal(False),
                       remote_leo=[self.num(0)] * n)

    def advance_hw(self, s: SymState, index: int) -> SymState:
        """`ReplicationModel._advance_hw` for the leader at `index`."""
        m = self.shape.log
        leader = s.replicas[index]
        isr, maximal = self.isr_of(s, index), self.maximal_isr(s, index)
        leos = [leader.log_len if q == index else leader.remote_leo[q] for q in range(self.shape.replicas)]
        lowest = self.num(m + 1)
        for member, leo in zip(maximal, leos):
            lowest = z3.If(z3.And(member, leo < lowest), leo, lowest)
        hw = z3.If(z3.Or(maximal), smax(leader.hw, lowest), leader.hw)
        if self.protocol.declaration.hw_needs_min_isr:  # KAFKA-15583: not while `isUnderMinIsr`
            hw = z3.If(count(isr, hw) < self.config.min_isr, leader.hw, hw)
        s = with_replica(s, index, replace(leader, hw=hw))
        below = [z3.And(o < hw, o < leader.log_len) for o in range(m)]

        def holds(o: int, msg: int):
            return z3.And(below[o], leader.log_msg[o] == msg)

        acked = s.acked
        if self.config.acks == "all":
            completes = z3.And(hw > leader.hw, count(maximal, hw) >= self.config.min_isr)
            # the records of the leader's leadership: its epoch's, and with the bump the epochs since its election
            start = self.leadership_start(s, leader.epoch)
            ours = [leader.log_epoch[o] == leader.epoch if not s.bumped
                    else z3.And(start <= leader.log_epoch[o], leader.log_epoch[o] <= leader.epoch) for o in range(m)]
            acked = [z3.Or(flag, *[z3.And(completes, o >= leader.hw, ours[o], holds(o, k + 1)) for o in range(m)])
                     for k, flag in enumerate(s.acked)]
        current = self.current_leader(s, index)
        consumed = [z3.Or(flag, holds(i // m, i % m + 1)) for i, flag in enumerate(s.consumed)]
        committed = [z3.Or(flag, z3.And(current, holds(i // m, i % m + 1))) for i, flag in enumerate(s.committed)]
        return replace(s, acked=acked, consumed=consumed, committed=committed)

    def isr_change(self, s: SymState, isr: list, unclean: int | None = None) -> SymState:
        """`ReplicationModel._isr_change`: the controller's ISR set to `isr`, in a new partition epoch that drops
        an AlterPartition in flight, and with eligible leader
        replicas (KIP-966) its ELR: empty with `isr` at min.insync.replicas or more, else the old ELR
        and ISR less `isr` and the replica `unclean` (one back from an unclean shutdown)."""
        s = self.dropped_proposal(s)  # a new partition epoch
        if not s.elr:
            return replace(s, isr=isr)
        small = count(isr, s.epoch) < self.config.min_isr
        elr = [z3.And(small, z3.Or(flag, old), z3.Not(new), z3.BoolVal(q != unclean))
               for q, (flag, old, new) in enumerate(zip(s.elr, s.isr, isr))]
        # an ISR that becomes empty keeps the leader, or where there is none its last member, as the last known
        # leader (KAFKA-15584)
        emptied = z3.And(z3.Or(s.isr), z3.Not(z3.Or(isr)))
        last_known = [z3.If(emptied, z3.If(s.leader == NO_LEADER, old, s.leader == q), flag)
                      for q, (old, flag) in enumerate(zip(s.isr, s.last_known_elr))]
        return replace(s, isr=isr, elr=elr, last_known_elr=last_known)

    def with_isr(self, s: SymState, isr: list, unclean: int | None = None) -> SymState:
        """The controller's ISR set to `isr` (`isr_change`); the current leader's HW advances."""
        return self.current_leader_advanced(self.isr_change(s, isr, unclean))

    def current_leader_advanced(self, s: SymState) -> SymState:
        """`s` with the current leader's HW advanced (`ReplicationModel._with_isr`'s second half)."""
        after = s
        for j in range(self.shape.replicas):
            after = merge(self.current_leader(s, j), self.advance_hw(s, j), after)
        return after

    def controller_removes(self, s: SymState, isr: list, unclean: int | None = None) -> SymState:
        """`ReplicationModel._controller_removes`: the controller takes members out of the ISR on its own,
        leaving `isr` (`with_isr`); with the metadata lag (`Shape.lag`) a leader reads it later: the removed
        members join `unseen`, its ISR change in flight or pending stays, and its HW stays. A change that leaves
        the ISR as it was reaches a leader that has read every earlier one at once."""
        changed = self.isr_change(s, isr, unclean)
        at_once = self.current_leader_advanced(changed)
        if not s.unseen:
            return at_once
        lagging = replace(changed, proposal=s.proposal, reregistered=s.reregistered,
                          unseen=[z3.Or(unseen, z3.And(old, z3.Not(new)))
                                  for unseen, old, new in zip(s.unseen, s.isr, isr)])
        unchanged = z3.And([old == new for old, new in zip(s.isr, isr)])
        return merge(z3.Or(s.leader == NO_LEADER, z3.And(unchanged, z3.Not(z3.Or(s.unseen)))), at_once, lagging)

    def _by_leader(self, cases: list[tuple[int, z3.BoolRef]], build: Callable[[int], SymState], s: SymState):
        """(any case holds, the state `build` gives for the case that holds)."""
        after = s
        for j, condition in cases:
            after = merge(condition, build(j), after)
        return z3.Or([condition for _, condition in cases]), after

    # ------------------------------------------------------------------ actions

    def producer_write(self, s: SymState, i: int):
        config = self.config
        leader = s.replicas[i]
        lost_on_wire = (z3.And(s.leader == i, leader.status == CRASHED) if config.acks == "0"
                        else z3.BoolVal(False))
        guard = [s.written < config.messages, z3.Or(lost_on_wire, z3.And(leader.role == LEADER, alive(leader)))]
        if config.acks == "all":
            guard.append(count(self.isr_of(s, i), s.written) >= config.min_isr)
        msg = s.written + 1
        sent = replace(s, written=msg)
        if config.acks != "all":
            sent = replace(sent, acked=[z3.Or(flag, msg == k + 1) for k, flag in enumerate(s.acked)])
        wrote = self.advance_hw(with_replica(sent, i, self.appended(leader, [msg], [leader.epoch], 1)), i)
        return z3.And(guard), merge(lost_on_wire, sent, wrote)

    def leader_handle_fetch_request(self, s: SymState, i: int, delay: bool = False):
        """`ReplicationModel.leader_handle_fetch_request`; with `delay`, the AlterPartition adding the
        follower stays in flight (`leader_send_alter_partition`)."""
        follower = s.replicas[i]
        offset = follower.log_len
        if s.delays:  # this is the delayed fetch the follower waits for, unless that one is stale
            waited = z3.If(follower.delayed_fetch_stale[0], follower.delayed_fetch[0], self.num(0))
            follower = replace(follower, delayed_fetch=[waited])

        def handled_by(j: int) -> SymState:
            leader = s.replicas[j]
            out_of_range = replace(self._no_response(follower), has_response=z3.BoolVal(True),
                                   resp_offset=leader.log_len, resp_hw=leader.hw, resp_oor=z3.BoolVal(True))
            diverges, target = self.protocol.fetch_divergence(leader, follower)
            fetched = self.record_fetch(s, j, i, offset, delay)
            recorded = fetched if self.protocol.declaration.diverging_fetch_updates_leader else s
            diverging = replace(self._no_response(follower), has_response=z3.BoolVal(True), resp_offset=target,
                                resp_hw=recorded.replicas[j].hw, resp_oor=z3.BoolVal(True))
            leader = fetched.replicas[j]
            response = replace(follower, has_response=z3.BoolVal(True), resp_offset=offset, resp_hw=leader.hw,
                               resp_len=leader.log_len - offset, resp_oor=z3.BoolVal(False),
                               resp_msg=[pick(leader.log_msg, offset + k) for k in range(self.shape.log)],
                               resp_epoch=[pick(leader.log_epoch, offset + k) for k in range(self.shape.log)])
            plain = merge(offset > leader.log_len, with_replica(s, i, out_of_range), with_replica(fetched, i, response))
            return merge(diverges, with_replica(recorded, i, diverging), plain)

        reachable, after = self._by_leader(self.reachable_leaders(s, i), handled_by, s)
        return z3.And(z3.Not(follower.has_response), follower.role == FOLLOWER, reachable), after

    def record_fetch(self, s: SymState, j: int, i: int, offset, delay: bool = False, join: bool = True) -> SymState:
        """`ReplicationModel._record_fetch`: the leader `j` takes `offset` as follower `i`'s LEO, adds it to the
        ISR when the protocol lets it join (and `join`), and advances its HW; with `delay` the AlterPartition
        that adds it stays in flight instead, one more delayed request."""
        fetched = s
        if join:
            expand = self.joins_isr(s, j, i, offset)
            lagging = z3.Or(s.unseen)  # the controller refuses it at an older partition epoch: pending
            if delay or s.unseen:  # the AlterPartition adding it kept, in flight or pending
                kept = replace(s, proposal=[z3.If(expand, z3.BoolVal(q == i), flag)
                                            for q, flag in enumerate(s.proposal)],
                               reregistered=[z3.And(z3.Not(expand), flag) for flag in s.reregistered])
            if delay:  # in flight, one more delayed request; or pending, none spent
                fetched = replace(kept, delays=[z3.If(z3.And(expand, z3.Not(lagging)), delayed + 1, delayed)
                                                for delayed in s.delays])
            elif s.elr or s.proposal:
                fetched = merge(expand, self.isr_change(s, put(s.isr, i, z3.BoolVal(True))), s)
                fetched = merge(lagging, kept, fetched) if s.unseen else fetched
            else:
                fetched = replace(s, isr=put(s.isr, i, z3.Or(s.isr[i], expand)))
        leader = fetched.replicas[j]
        fetched = with_replica(fetched, j, replace(leader, remote_leo=put(leader.remote_leo, i, offset)))
        return self.advance_hw(fetched, j)

    def leader_send_alter_partition(self, s: SymState, i: int):
        """`ReplicationModel.leader_send_alter_partition`: enabled where the fetch adds the follower."""
        guard, after = self.leader_handle_fetch_request(s, i, delay=True)
        return z3.And(s.delays[0] < self.config.delays, guard, after.delays[0] > s.delays[0]), after

    def controller_handle_alter_partition(self, s: SymState, i: int):
        """`ReplicationModel.controller_handle_alter_partition`: the controller adds replica `i` unless it
        refuses it (`isr_updates`): a broker not live (KIP-841), one registered again since (KIP-903)."""
        # with a removal the leader has not read (`unseen`), refused at an older partition epoch: it stays pending
        proposed = z3.And(*[flag if q == i else z3.Not(flag) for q, flag in enumerate(s.proposal)],
                          z3.Not(z3.Or(s.unseen)))
        status = s.replicas[i].status
        refused = z3.BoolVal(False)
        if self.protocol.declaration.joins_live_members_only:
            refused = z3.Or(status == OFFLINE, status == EXPIRED)
        if self.protocol.declaration.checks_broker_epochs:
            refused = z3.Or(refused, s.reregistered[i])
        return proposed, merge(refused, self.dropped_proposal(s), self.with_isr(s, put(s.isr, i, z3.BoolVal(True))))

    def follower_send_delayed_fetch(self, s: SymState, i: int):
        """`ReplicationModel.follower_send_delayed_fetch`: a fetch at the follower's LEO the leader handles late."""
        follower = s.replicas[i]
        reachable = z3.Or([condition for _, condition in self.reachable_leaders(s, i)])
        guard = z3.And(s.delays[0] < self.config.delays, follower.delayed_fetch[0] == 0,
                       z3.Not(follower.has_response), follower.role == FOLLOWER, reachable)
        sent = with_replica(s, i, replace(follower, delayed_fetch=[follower.log_len + 1]))
        return guard, replace(sent, delays=[s.delays[0] + 1])

    def leader_handle_stale_fetch(self, s: SymState, i: int):
        """`ReplicationModel.leader_handle_stale_fetch`: the current leader handles the fetch replica `i` sent
        before it crashed (`stale_fetch`): refused from a live follower where stale fetches are fenced
        (KAFKA-15221); otherwise its offset is the follower's LEO in the leader's view (none past the leader's
        LEO), and the follower joins the ISR on it, where AlterPartition carries broker epochs (KIP-903) only
        through KAFKA-15221's race with a fetch of its new incarnation."""
        follower = s.replicas[i]
        offset = follower.delayed_fetch[0] - 1
        cleared = with_replica(s, i, replace(follower, delayed_fetch=[self.num(0)],
                                             delayed_fetch_stale=[z3.BoolVal(False)]))
        declaration = self.protocol.declaration
        reaching = dict(self.reachable_leaders(cleared, i))

        def handled_by(j: int) -> SymState:
            refused = offset > cleared.replicas[j].log_len  # OffsetOutOfRange
            if declaration.fences_stale_fetches:
                refused = z3.Or(refused, alive(follower))  # NOT_LEADER_OR_FOLLOWER
            if not declaration.checks_broker_epochs:
                return merge(refused, cleared, self.record_fetch(cleared, j, i, offset))
            taken = self.record_fetch(cleared, j, i, offset, join=False)
            if not declaration.fences_stale_fetches:
                joined = self.isr_change(cleared, put(cleared.isr, i, z3.BoolVal(True)))
                raced_guard, raced = self.leader_handle_fetch_request(joined, i)
                race = z3.And(z3.Not(z3.Or(cleared.unseen)), self.joins_isr(cleared, j, i, offset), reaching[j],
                              raced_guard)
                taken = merge(race, raced, taken)
            return merge(refused, cleared, taken)

        cases = [(j, self.current_leader(s, j)) for j in range(self.shape.replicas) if j != i]
        leads, after = self._by_leader(cases, handled_by, s)
        return z3.And(follower.delayed_fetch_stale[0], leads), after

    def follower_handle_fetch_response(self, s: SymState, i: int):
        follower = s.replicas[i]
        cleared = self._no_response(follower)
        truncated = self.protocol.handle_out_of_range(self, cleared, follower.resp_offset, follower.resp_hw)
        appended = self.appended(cleared, follower.resp_msg, follower.resp_epoch, follower.resp_len)
        appended = replace(appended, hw=smin(appended.log_len, follower.resp_hw))
        guard = z3.And(alive(follower), follower.has_response, z3.Not(s.peer_cut[i]))
        return guard, with_replica(s, i, merge(follower.resp_oor, truncated, appended))

    def out_of_sync(self, leader: SymReplica, i: int):
        """Whether `leader` may drop follower `i` from its ISR (`isr_shrink`)."""
        if self.protocol.declaration.drops_caught_up_followers:
            return z3.BoolVal(True)
        return leader.remote_leo[i] < leader.log_len

    def leader_shrink_isr(self, s: SymState, i: int):
        dropping = [z3.And(self.current_leader(s, j), self.can_write_isr(s, j), self.out_of_sync(s.replicas[j], i))
                    for j in range(self.shape.replicas) if j != i]
        # not while an AlterPartition is in flight
        guard = z3.And(self.leader_isr(s)[i], z3.Not(z3.Or(s.proposal)), z3.Or(dropping))
        shrunk = self.with_isr(s, put(s.isr, i, z3.BoolVal(False)))
        if not s.unseen:
            return guard, shrunk
        # with a removal it has not read the controller refuses it and the leader keeps it pending (`PendingShrinkIsr`)
        pending = replace(s, proposal=[s.leader == q for q in range(self.shape.replicas)])
        return guard, merge(z3.Or(s.unseen), pending, shrunk)

    def leader_shrink_isr_fails(self, s: SymState, i: int):
        leader = s.replicas[i]
        out_of_sync = [z3.And(member, self.out_of_sync(leader, q))
                       for q, member in enumerate(self.isr_of(s, i)) if q != i]
        guard = z3.And(leader.role == LEADER, alive(leader), z3.Not(self.can_write_isr(s, i)), z3.Or(out_of_sync),
                       z3.Not(z3.And(s.leader == i, z3.Or(s.proposal))))
        return guard, with_replica(s, i, replace(leader, role=self.num(FENCED)))

    def become_follower(self, s: SymState, i: int):
        """`ReplicationModel.become_follower`: a replica that skips the LeaderAndIsr (`skips_leader_and_isr`)
        takes the epoch only; any other forgets its leadership, follows the controller's leader and
        truncates as the protocol says."""
        replica = s.replicas[i]
        guard = z3.And(alive(replica), s.leader != NO_LEADER, s.leader != i, replica.epoch < s.epoch,
                       z3.Not(s.zk_cut[i]))
        follower = self.remembering(replace(self._forget_leadership(replica), epoch=s.epoch), s.leader)
        after = with_replica(s, i, self.protocol.become_follower(self, follower))
        skips = self.skips_leader_and_isr(replica, s.leader, s.epoch)
        return guard, merge(skips, with_replica(s, i, replace(replica, epoch=s.epoch)), after)

    def skips_leader_and_isr(self, replica: SymReplica, leader, epoch) -> z3.BoolRef:
        """`Protocol.skips_leader_and_isr` (`follower_skips`): `Partition.makeFollower` returns false for a
        LeaderAndIsr naming the leader the replica follows (to 2.0.0), and in 2.0.1 only for the next epoch;
        never from 2.1 on, where the layout keeps no leader (`Shape.leader_ids`)."""
        if not replica.leader_id:
            return z3.BoolVal(False)
        same = replica.leader_id[0] == leader
        if self.protocol.declaration.follower_skips == SKIP_NEXT_EPOCH:
            return z3.And(same, epoch == replica.epoch + 1)
        return same

    def remembering(self, replica: SymReplica, leader) -> SymReplica:
        """The replica acting on a LeaderAndIsr naming `leader` (`ReplicationModel._remembered`): it
        follows `leader` where the layout keeps the leader (`Shape.leader_ids`)."""
        return replace(replica, leader_id=[leader for _ in replica.leader_id])

    def replica_flush(self, s: SymState, i: int):
        replica = s.replicas[i]
        return (z3.And(replica.unflushed != 0, alive(replica)),
                with_replica(s, i, replace(replica, unflushed=self.num(0))))

    def replica_crash(self, s: SymState, i: int):
        replica = s.replicas[i]
        guard = z3.And(alive(replica), self._bounded("crashes", s.crashes, self.config.crashes))
        crashed = self.truncate(replica, replica.log_len - replica.unflushed, log_load=True)
        crashed = replace(self.remembering(self._forget_leadership(crashed), self.num(NO_LEADER)),
                          status=z3.If(replica.status == EXPIRED, self.num(OFFLINE), self.num(CRASHED)),
                          role=self.num(NO_ROLE), epoch=self.num(UNKNOWN),
                          delayed_fetch_stale=[fetch > 0 for fetch in replica.delayed_fetch])  # it stays at the leader
        return guard, replace(with_replica(s, i, crashed), crashes=s.crashes + 1)

    def replica_disk_failure(self, s: SymState, i: int):
        """`ReplicationModel.replica_disk_failure`: a crash that leaves an empty log, HW 0 and no cache;
        one of the disk failures, counted where the layout counts them (`Shape.disk_failures`)."""
        guard, crashed = self.replica_crash(s, i)
        crashed = with_replica(crashed, i, self.truncate(crashed.replicas[i], 0, log_load=True))
        if not s.disk_failures:
            return guard, crashed
        count = s.disk_failures[0]
        return (z3.And(guard, count < self.config.disk_failures),
                replace(crashed, disk_failures=[count + 1]))

    def replica_restart(self, s: SymState, i: int):
        replica = s.replicas[i]
        waits = s.leader == i if not self.protocol.declaration.bounce_noticed else z3.BoolVal(True)  # KIP-380
        guard = z3.And(z3.Not(alive(replica)), z3.Not(z3.And(replica.status == CRASHED, waits)),
                       z3.Not(s.zk_cut[i]))
        after = with_replica(s, i, replace(replica, status=self.num(UP)))
        if s.proposal:  # a new broker epoch, which an AlterPartition in flight predates
            after = replace(after, reregistered=put(s.reregistered, i, z3.Or(s.reregistered[i], s.proposal[i])))
        if not self.protocol.declaration.eligible_leaders:
            return guard, after
        # KIP-966: a new incarnation leaves the ISR and the ELR (`handleBrokerUncleanShutdown`)
        member = z3.Or(s.isr[i], s.elr[i])
        return guard, merge(member, self.controller_removes(after, put(s.isr, i, z3.BoolVal(False)), unclean=i), after)

    def controller_notice_failure(self, s: SymState, i: int):
        replica = s.replicas[i]
        crashed = replica.status == CRASHED
        expired = z3.And(replica.status == UP, s.zk_cut[i])
        noticed = merge(crashed, replace(replica, status=self.num(OFFLINE)),
                        replace(replica, status=self.num(EXPIRED), stale_isr=self.isr_of(s, i)))
        after = replace(with_replica(s, i, noticed), leader=z3.If(s.leader == i, NO_LEADER, s.leader),
                        unseen=[z3.And(s.leader != i, unseen) for unseen in s.unseen])
        after = self.dropped_proposal(after, s.leader == i)  # a lost leader: a new partition epoch
        remaining = put(s.isr, i, z3.BoolVal(False))
        # with eligible leader replicas the last member leaves too, and the ISR is empty (KIP-966)
        shrinks = s.isr[i] if self.protocol.declaration.eligible_leaders else z3.And(s.isr[i], z3.Or(remaining))
        after = merge(shrinks, self.controller_removes(after, remaining), after)
        if not self.isr_bumps:
            return z3.Or(crashed, expired), after
        # `EpochBumpModel.controller_notice_failure`: removing a follower from the ISR of a leader bumps
        # the epoch; the leader takes it at once, or once reconnected when cut off from ZooKeeper
        bump = z3.And(shrinks, s.leader != NO_LEADER, s.leader != i)
        epoch = after.epoch + 1
        self.overflow(z3.And(bump, epoch >= len(after.bumped)))  # past greatest_epoch: never reached
        bumped = replace(self.fenced_fetches(after), epoch=epoch,
                         bumped=[z3.Or(flag, epoch == value) for value, flag in enumerate(after.bumped)])
        taken = bumped
        for j in range(self.shape.replicas):
            if j != i:
                takes = z3.And(bump, s.leader == j, z3.Not(s.zk_cut[j]))
                taken = merge(takes, self._only_when(takes, partial(self.take_bump, bumped, j)), taken)
        return z3.Or(crashed, expired), merge(bump, taken, after)

    def take_bump(self, s: SymState, j: int) -> SymState:
        """`EpochBumpModel._take_bump`: the controller's leader `j` acts on the LeaderAndIsr of a
        bump as a leader already (`Partition.makeLeader`): the controller's epoch for its next
        appends, in its epoch cache at once from 2.0.1 (`epoch_on_election`), and its HW; unless
        it crashed and the request is lost."""
        leader = s.replicas[j]
        acts = acts_as_leader(leader)

        def taken() -> SymState:
            replica = self.protocol.on_become_leader(self, replace(leader, epoch=s.epoch), s.epoch)
            return self.advance_hw(with_replica(s, j, replica), j)

        return merge(acts, self._only_when(acts, taken), s)

    def controller_elect_leader(self, s: SymState, i: int):
        n = self.shape.replicas
        candidate = s.replicas[i]
        # KIP-966: while the ISR is empty an ELR member is as good (`isValidNewLeader`); without an ELR
        # in the layout (a protocol without eligible leaders) the ELR is empty
        isr_empty = z3.Not(z3.Or(s.isr))
        eligible = [z3.If(isr_empty, flag, member) for member, flag in zip(s.isr, s.elr)] if s.elr else s.isr
        live = [z3.And(member, r.status == UP) for member, r in zip(eligible, s.replicas)]
        unclean = z3.Not(z3.Or(live)) if self.config.unclean else z3.BoolVal(False)
        if s.elr:
            # KAFKA-15584: while the ISR and the ELR are empty, the last known leader, before any unclean election
            by_last_known = z3.And(isr_empty, z3.Not(z3.Or(s.elr)), z3.PbEq([(f, 1) for f in s.last_known_elr], 1))
            unclean = z3.If(by_last_known, s.last_known_elr[i], unclean)
        guard = z3.And(s.leader == NO_LEADER, self._bounded("elections", self.elections(s), self.config.elections),
                       candidate.status == UP, z3.Not(s.zk_cut[i]), z3.Or(live[i], unclean))
        epoch = s.epoch + 1
        fenced = self.fenced_fetches(s)  # a new epoch
        leader = replace(self.remembering(self._forget_leadership(fenced.replicas[i]), self.num(i)),
                         role=self.num(LEADER),
                         epoch=epoch, leading=z3.BoolVal(True), remote_leo=[self.num(UNKNOWN)] * n)
        leader = self.protocol.on_become_leader(self, leader, epoch)
        # an ELR member becomes the only ISR member and leaves the ELR (`tryElection`); an unclean
        # election clears the ELR (`maybeUpdateRecordElr`)
        isr = [z3.If(z3.And(live[i], z3.Not(isr_empty)) if s.elr else live[i], member, z3.BoolVal(q == i))
               for q, member in enumerate(s.isr)]
        elr = [z3.And(live[i], flag) if q != i else z3.BoolVal(False) for q, flag in enumerate(s.elr)]
        after = replace(with_replica(fenced, i, leader), leader=self.num(i), epoch=epoch, isr=isr, elr=elr,
                        last_known_elr=[z3.BoolVal(False)] * len(s.last_known_elr))
        return guard, self.advance_hw(after, i)

    def leader_apply_metadata(self, s: SymState, i: int):
        """`ReplicationModel.leader_apply_metadata`: the current leader, reaching the controller, reads the
        removals it had not (`unseen`); its pending ISR change is dropped and its HW advances."""
        guard = z3.And(z3.Or(s.unseen), self.current_leader(s, i), z3.Not(s.zk_cut[i]))
        read = replace(self.dropped_proposal(s), unseen=[z3.BoolVal(False)] * len(s.unseen))
        return guard, self.advance_hw(read, i)

    def zk_disconnect(self, s: SymState, i: int):
        guard = z3.And(s.cuts < self.config.partitions, s.replicas[i].status == UP, z3.Not(s.zk_cut[i]))
        return guard, replace(s, zk_cut=put(s.zk_cut, i, z3.BoolVal(True)), cuts=s.cuts + 1)

    def zk_reconnect(self, s: SymState, i: int):
        replica = s.replicas[i]
        replica = replace(replica, status=z3.If(replica.status == EXPIRED, UP, replica.status),
                          role=z3.If(z3.And(replica.role == FENCED, s.leader == i), LEADER, replica.role))
        after = with_replica(replace(s, zk_cut=put(s.zk_cut, i, z3.BoolVal(False))), i, replica)
        if not self.isr_bumps:
            return s.zk_cut[i], after
        # `EpochBumpModel.zk_reconnect`: the controller's leader takes the bump it missed while cut off
        late = z3.And(s.leader == i, replica.epoch != s.epoch)
        return s.zk_cut[i], merge(late, self._only_when(late, lambda: self.take_bump(after, i)), after)

    def peer_disconnect(self, s: SymState, i: int):
        guard = z3.And(s.cuts < self.config.partitions, alive(s.replicas[i]), z3.Not(s.peer_cut[i]))
        return guard, replace(s, peer_cut=put(s.peer_cut, i, z3.BoolVal(True)), cuts=s.cuts + 1)

    def peer_reconnect(self, s: SymState, i: int):
        return s.peer_cut[i], replace(s, peer_cut=put(s.peer_cut, i, z3.BoolVal(False)))

    def follower_truncate_by_leader_epoch(self, s: SymState, i: int):
        follower = s.replicas[i]

        def exchange_with(j: int) -> SymState:
            offset, complete = self.protocol.truncation_point(s.replicas[j], follower)
            truncated = self.truncate(follower, offset)
            return with_replica(s, i, replace(truncated, role=z3.If(complete, self.num(FOLLOWER), truncated.role)))

        reachable, after = self._by_leader(self.reachable_leaders(s, i), exchange_with, s)
        return z3.And(follower.role == TRUNCATING, reachable), after


def _method_name(action_name: str) -> str:
    """`LeaderHandleFetchRequest` -> `leader_handle_fetch_request`."""
    return "".join(f"_{c.lower()}" if c.isupper() else c for c in action_name).lstrip("_")
