"""The Z3 encoding of the KRaft controller model (`control/kraft.py`), which `bmc.bounded_check` runs.

A state is the model's, plus the views the model folds from the metadata log, kept as variables:
the controller's (the whole log) and each broker's (the prefix it replayed). The log only grows
and a broker's prefix changes only when it replays to the log's end, so a broker's view is the
controller's view of the moment it last replayed; each view is updated as records are appended,
never folded from the log. The log itself is five arrays from offset to number (each record's
kind, then its fields) and a length, so that a solver model decodes into the model's state; an
append is a store at the length. What the arrays hold past the length is never read.

Each action is a guard and the whole next state (`ControlEncoding`), one formula per action
instance (a broker, or a leader and a follower); the records a heartbeat writes depend on the
broker's state, so each case of `KRaftModel._heartbeat` is built and the cases merged with `If`.
"""

from __future__ import annotations

from dataclasses import dataclass, replace

import z3

from kafka_mc.control.kraft import (CONTROLLED_SHUTDOWN, FENCE, NONE, PARTITION, REGISTER, UNFENCE, KRaftModel,
                                    KRaftState, view)
from kafka_mc.control.system import ControlAction, put

from .control import ControlEncoding
from .layout import model_values

FIELDS = ("kind", "a", "b", "c", "d")  # a record: its kind, then (broker, broker epoch) or (leader, ISR, epochs)


@dataclass(frozen=True)
class SymView:
    """A fold of a log prefix (`control.kraft.View`): each broker's registration (every broker is
    registered from the initial log on) and the partition, as Z3 terms or Python values."""

    epoch: tuple  # per broker: its registration's broker epoch
    fenced: tuple  # per broker
    in_shutdown: tuple  # per broker: a ControlledShutdown record of its registration
    leader: z3.ArithRef
    isr: tuple  # per broker: a member
    leader_epoch: z3.ArithRef
    partition_epoch: z3.ArithRef

    def terms(self) -> list:
        return [*self.epoch, *self.fenced, *self.in_shutdown, self.leader, *self.isr, self.leader_epoch,
                self.partition_epoch]


@dataclass(frozen=True)
class SymKRaft:
    """One step's state: the model's variables and the views, as Z3 terms (or as Python values,
    `KRaftEncoding.values_of`, where the log is its records)."""

    length: z3.ArithRef
    log: tuple  # one array (offset to number) per FIELDS, read below `length` only
    alive: tuple
    epoch: tuple
    replayed: tuple
    shutting: tuple
    reported: tuple
    shutdown_offset: tuple
    fetched: tuple  # per broker: (leader, leader epoch, broker epoch)
    pending: z3.BoolRef  # an AlterPartition in flight
    request: tuple  # its (leader, broker epoch, leader epoch, partition epoch, follower, broker epoch)
    failures: z3.ArithRef
    fencings: z3.ArithRef
    shutdowns: z3.ArithRef
    early_registrations: z3.ArithRef
    controller: SymView
    views: tuple  # per broker

    def variables(self) -> list:
        return [self.length, *self.log, *self.scalars()]

    def scalars(self) -> list:
        """Every variable but the log's."""
        return [*self.alive, *self.epoch, *self.replayed, *self.shutting, *self.reported, *self.shutdown_offset,
                *(value for fetch in self.fetched for value in fetch), self.pending, *self.request, self.failures,
                self.fencings, self.shutdowns, self.early_registrations, *self.controller.terms(),
                *(term for seen in self.views for term in seen.terms())]


def _if(condition, then, otherwise):
    """Leafwise `If` of two equal-shaped values (terms, tuples of them, SymViews, SymKRafts)."""
    if z3.is_true(condition) or then is otherwise:
        return then
    if z3.is_false(condition):
        return otherwise
    if isinstance(then, tuple):
        return tuple(_if(condition, a, b) for a, b in zip(then, otherwise))
    if isinstance(then, (SymView, SymKRaft)):
        return type(then)(**{name: _if(condition, getattr(then, name), getattr(otherwise, name))
                             for name in then.__dataclass_fields__})
    if then.eq(otherwise):
        return then
    return z3.If(condition, then, otherwise)


def _mask(flags: tuple) -> z3.ArithRef:
    """An ISR's bit mask, as a PartitionChange record holds it."""
    return z3.Sum([z3.If(flag, z3.IntVal(1 << b), z3.IntVal(0)) for b, flag in enumerate(flags)])


class KRaftEncoding(ControlEncoding):
    """The KRaft model's initial state, actions and properties as Z3 formulas."""

    model: KRaftModel

    def __init__(self, model: KRaftModel):
        self.model = model
        config = model.config
        self.brokers = range(config.brokers)
        self.release = model.release  # 0: 3.2, 1: 3.3, 2: 3.5
        pairs = [(leader, f) for leader in self.brokers for f in self.brokers if leader != f]
        self.action_instances: list[ControlAction] = [
            *(ControlAction(name, (b,)) for name in ("BrokerStart", "BrokerStartBeforeFence", "BrokerReplay",
                                                     "BrokerHeartbeat", "BrokerBeginShutdown", "BrokerCrash",
                                                     "SessionTimeout", "FollowerFetch") for b in self.brokers),
            *(ControlAction(name, pair) for name in ("LeaderProposeIsr", "ControllerHandleAlterPartition")
              for pair in pairs),
        ]
        self.formulas = {
            "IsrMembersEligible": lambda s, action, n: self.isr_members_eligible(n),
            "LeaderIsActive": lambda s, action, n: self.leader_is_active(n),
            "IsrJoinedByRegisteredIncarnation": self.isr_joined_by_registered_incarnation,
            "ShutdownAfterLeadershipMoved": self.shutdown_after_leadership_moved,
            "StaleLeaderView": lambda s, action, n: self.stale_leader_view(n),
            "BrokerRejoins": lambda s, action, n: self.broker_rejoins(n),
            "ControlledShutdownCompletes": lambda s, action, n: z3.Or(
                [granted for _, granted in self._granted(s, action, n)]),
            "PartitionOffline": lambda s, action, n: n.controller.leader == NONE,
            "IsrExpanded": lambda s, action, n: z3.Or([added for _, added in self._added(s, action, n)]),
        }
        self._selections: dict[int, tuple[SymKRaft, list[tuple]]] = {}  # `_records`

    # ------------------------------------------------------------------ states

    def fresh(self, name: str) -> SymKRaft:
        ints = lambda label, count: tuple(z3.Int(f"{name}_{label}_{i}") for i in range(count))  # noqa: E731
        bools = lambda label, count: tuple(z3.Bool(f"{name}_{label}_{i}") for i in range(count))  # noqa: E731
        n = len(self.brokers)

        def fresh_view(label: str) -> SymView:
            return SymView(ints(f"{label}_epoch", n), bools(f"{label}_fenced", n), bools(f"{label}_shutdown", n),
                           z3.Int(f"{name}_{label}_leader"), bools(f"{label}_isr", n),
                           z3.Int(f"{name}_{label}_leader_epoch"), z3.Int(f"{name}_{label}_partition_epoch"))

        return SymKRaft(
            z3.Int(f"{name}_length"),
            tuple(z3.Array(f"{name}_log_{field}", z3.IntSort(), z3.IntSort()) for field in FIELDS),
            bools("alive", n), ints("epoch", n), ints("replayed", n), bools("shutting", n), ints("reported", n),
            ints("shutdown_offset", n), tuple(ints(f"fetched_{b}", 3) for b in self.brokers),
            z3.Bool(f"{name}_pending"), ints("request", 6), z3.Int(f"{name}_failures"), z3.Int(f"{name}_fencings"),
            z3.Int(f"{name}_shutdowns"), z3.Int(f"{name}_early_registrations"), fresh_view("controller"),
            tuple(fresh_view(f"view_{b}") for b in self.brokers))

    def values_of(self, state: KRaftState) -> SymKRaft:
        """The explicit `state` as Python values in the encoding's layout, with its views folded from its log
        (its log as a list of records)."""
        n = len(self.brokers)

        def folded(log: tuple) -> SymView:
            known = view(log, n)
            registrations = [r for r in known.registrations if r is not None]  # every broker, from the initial log
            assert len(registrations) == n
            return SymView(tuple(r.epoch for r in registrations), tuple(r.fenced for r in registrations),
                           tuple(r.in_shutdown for r in registrations), known.leader,
                           tuple(bool(known.isr >> b & 1) for b in self.brokers), known.leader_epoch,
                           known.partition_epoch)

        records = tuple(record + (0,) * (len(FIELDS) - len(record)) for record in state.log)
        return SymKRaft(len(state.log), records, state.alive, state.epoch, state.replayed, state.shutting,
                        state.reported, state.shutdown_offset, state.fetched, bool(state.pending),
                        state.pending or (0,) * 6, state.failures, state.fencings, state.shutdowns,
                        state.early_registrations, folded(state.log),
                        tuple(folded(state.log[:state.replayed[b]]) for b in self.brokers))

    def _records(self, s: SymKRaft, count: int) -> list[tuple]:
        """The terms of the first `count` records of `s`'s log, made once per state variables."""
        made = self._selections.setdefault(id(s), (s, []))[1]
        while len(made) < count:
            made.append(tuple(z3.Select(array, len(made)) for array in s.log))
        return made[:count]

    def initial(self, s: SymKRaft) -> z3.BoolRef:
        return self.concrete(self.model.initial_states()[0], s)

    def concrete(self, state: KRaftState, s: SymKRaft) -> z3.BoolRef:
        """`s` is the explicit `state` (its views included; its log arrays below its length)."""
        values = self.values_of(state)
        fixed = [s.length == values.length]
        fixed += [term == value for record, terms in zip(values.log, self._records(s, values.length))
                  for term, value in zip(terms, record)]
        fixed += [term == value for term, value in zip(s.scalars(), values.scalars())]
        return z3.And(fixed)

    def decode(self, model: z3.ModelRef, s: SymKRaft) -> KRaftState:
        number = truth = lambda term: model_values(model, [term])[0]  # noqa: E731
        log = []
        for terms in self._records(s, number(s.length)):
            kind, *fields = (number(term) for term in terms)
            log.append((kind, fields[0]) if kind == REGISTER else (kind, *fields[:2]) if kind != PARTITION
                       else (kind, *fields))
        return KRaftState(tuple(log), tuple(truth(v) for v in s.alive), tuple(number(v) for v in s.epoch),
                          tuple(number(v) for v in s.replayed), tuple(truth(v) for v in s.shutting),
                          tuple(number(v) for v in s.reported), tuple(number(v) for v in s.shutdown_offset),
                          tuple(tuple(number(v) for v in fetch) for fetch in s.fetched),
                          tuple(number(v) for v in s.request) if truth(s.pending) else (),
                          number(s.failures), number(s.fencings), number(s.shutdowns), number(s.early_registrations))

    def check_decoded(self, model: z3.ModelRef, n: SymKRaft, state: KRaftState) -> None:
        """The views the encoding kept are the folds of the decoded log (`control.kraft.view`)."""
        expected = self.values_of(state)
        for kept, folded in zip([n.controller, *n.views], [expected.controller, *expected.views]):
            if model_values(model, kept.terms()) != list(folded.terms()):
                raise AssertionError(f"the encoding's views of {state} are not its log's")

    # ------------------------------------------------------------------ the log and the views

    def append(self, s: SymKRaft, when, record: tuple, known: SymView) -> SymKRaft:
        """`s` with `record` (its kind and fields, Z3 numbers) at the log's end and `known` as the
        controller's view where `when` holds."""
        record = (*record, *(z3.IntVal(0),) * (len(FIELDS) - len(record)))
        log = tuple(_if(when, z3.Store(array, s.length, value), array) for array, value in zip(s.log, record))
        return replace(s, length=_if(when, s.length + 1, s.length), log=log, controller=_if(when, known, s.controller))

    def register(self, s: SymKRaft, b: int) -> SymKRaft:
        """A RegisterBroker record: its offset is the broker epoch, and the broker is fenced."""
        known = s.controller
        return self.append(s, z3.BoolVal(True), (z3.IntVal(REGISTER), z3.IntVal(b)),
                           replace(known, epoch=put(known.epoch, b, s.length),
                                   fenced=put(known.fenced, b, z3.BoolVal(True)),
                                   in_shutdown=put(known.in_shutdown, b, z3.BoolVal(False))))

    def change(self, s: SymKRaft, when, kind: int, b: int) -> SymKRaft:
        """An Unfence, Fence or ControlledShutdown record of the broker's registration."""
        known = s.controller
        if kind == CONTROLLED_SHUTDOWN:
            updated = replace(known, in_shutdown=put(known.in_shutdown, b, z3.BoolVal(True)))
        else:
            updated = replace(known, fenced=put(known.fenced, b, z3.BoolVal(kind == FENCE)))
        return self.append(s, when, (z3.IntVal(kind), z3.IntVal(b), known.epoch[b]), updated)

    def active(self, known: SymView, b: int) -> z3.BoolRef:
        """`KRaftModel.active`: unfenced, and from 3.3 not in controlled shutdown."""
        return z3.And(z3.Not(known.fenced[b]), *([z3.Not(known.in_shutdown[b])] if self.release else []))

    def eligible(self, known: SymView, b: int) -> z3.BoolRef:
        """`KRaftModel.eligible` (KIP-841 from 3.3)."""
        return self.active(known, b) if self.release else z3.BoolVal(True)

    def partition(self, s: SymKRaft, when, leader, isr: tuple, leader_epoch, partition_epoch) -> SymKRaft:
        """A PartitionChange record where `when` holds."""
        record = (z3.IntVal(PARTITION), leader, _mask(isr), leader_epoch, partition_epoch)
        return self.append(s, when, record, replace(s.controller, leader=leader, isr=isr, leader_epoch=leader_epoch,
                                                    partition_epoch=partition_epoch))

    def partition_change(self, s: SymKRaft, when, remove: int = NONE, add: int = NONE) -> SymKRaft:
        """`KRaftModel.partition_change` of the controller's view, written where `when` holds and it
        changes the partition."""
        known = s.controller
        target = tuple(z3.And(member, z3.BoolVal(b != remove)) for b, member in enumerate(known.isr))

        def valid(b: int) -> z3.BoolRef:
            return z3.And(target[b], z3.BoolVal(True) if b == add else self.active(known, b))

        keeps = z3.Or([z3.And(known.leader == b, valid(b)) for b in self.brokers])
        first = z3.IntVal(NONE)
        for b in reversed(self.brokers):
            first = z3.If(valid(b), z3.IntVal(b), first)
        leader = z3.If(keeps, known.leader, first)
        emptied = z3.Not(z3.Or(target))
        isr = tuple(z3.If(emptied, old, new) for old, new in zip(known.isr, target))
        shrinks = z3.Or([z3.And(old, z3.Not(new)) for old, new in zip(known.isr, isr)])
        moves = leader != known.leader
        changed = z3.Or(moves, shrinks)  # the ISR can only lose members here; either bumps the leader epoch
        return self.partition(s, z3.And(when, changed), leader, isr, known.leader_epoch + z3.If(changed, 1, 0),
                              known.partition_epoch + 1)

    def fence(self, s: SymKRaft, b: int) -> SymKRaft:
        """`KRaftModel.fence`: the partition change without `b`, then its Fence record."""
        return self.change(self.partition_change(s, z3.BoolVal(True), remove=b), z3.BoolVal(True), FENCE, b)

    # ------------------------------------------------------------------ the model's helpers

    def start(self, s: SymKRaft, b: int) -> SymKRaft:
        """`KRaftModel._start`."""
        offset = s.length
        s = self.register(s, b)
        return replace(s, alive=put(s.alive, b, z3.BoolVal(True)), epoch=put(s.epoch, b, offset),
                       reported=put(s.reported, b, z3.IntVal(NONE)),
                       shutdown_offset=put(s.shutdown_offset, b, z3.IntVal(NONE)))

    @staticmethod
    def stop(s: SymKRaft, b: int) -> SymKRaft:
        """`KRaftModel._stop`."""
        return replace(s, alive=put(s.alive, b, z3.BoolVal(False)), epoch=put(s.epoch, b, z3.IntVal(NONE)),
                       shutting=put(s.shutting, b, z3.BoolVal(False)))

    @staticmethod
    def forget_offsets(s: SymKRaft) -> SymKRaft:
        """`control.kraft._forget_offsets`."""
        none = z3.And([offset == NONE for offset in s.shutdown_offset])
        return replace(s, reported=tuple(z3.If(none, z3.IntVal(NONE), r) for r in s.reported))

    def heartbeat(self, s: SymKRaft, b: int) -> SymKRaft:
        """`KRaftModel._heartbeat`: each of its cases built, then merged in its order."""
        known = s.controller
        replayed, offset = s.replayed[b], s.shutdown_offset[b]
        caught_up = replayed > known.epoch[b]  # it replayed its own registration; 3.2: the whole log
        if self.release == 0:
            caught_up = z3.And(caught_up, replayed >= s.length)
        leads = known.leader == b
        lowest = z3.And([z3.Implies(z3.And(z3.Not(known.fenced[o]), s.shutdown_offset[o] == NONE),
                                    offset <= s.reported[o]) for o in self.brokers if o != b])

        def settled(case: SymKRaft, stop: bool = False, offset_gone: bool = False) -> SymKRaft:
            """The heartbeat's offset remembered, the controlled-shutdown offset gone where the broker is
            let go or stays fenced, the offsets forgotten, and the broker let go (`stop`)."""
            built = replace(case, reported=put(case.reported, b, replayed))
            if stop or offset_gone:
                built = replace(built, shutdown_offset=put(built.shutdown_offset, b, z3.IntVal(NONE)))
            built = self.forget_offsets(built)
            return self.stop(built, b) if stop else built

        let_go = settled(self.fence(s, b), stop=True)
        unfenced = self.change(s, z3.BoolVal(True), UNFENCE, b)
        unfenced = self.partition_change(unfenced, known.leader == NONE, add=b)  # elected where none leads
        moving = self.change(s, z3.BoolVal(True), CONTROLLED_SHUTDOWN, b) if self.release else s
        moving = self.partition_change(moving, z3.BoolVal(True), remove=b)  # the leadership moves
        moving = replace(moving, shutdown_offset=put(moving.shutdown_offset, b, moving.length))
        cases = [
            (z3.And(known.fenced[b], s.shutting[b]), let_go),
            (z3.And(known.fenced[b], caught_up), settled(unfenced)),
            (known.fenced[b], settled(s, offset_gone=True)),
            (z3.And(offset == NONE, s.shutting[b], leads), settled(moving)),
            (z3.And(offset == NONE, s.shutting[b]), let_go),
            (z3.And(offset != NONE, z3.Not(leads), lowest), let_go),
        ]
        after = settled(s)
        for condition, built in reversed(cases):
            after = _if(condition, built, after)
        return after

    def fetch(self, s: SymKRaft, f: int) -> tuple[z3.BoolRef, tuple]:
        """`KRaftModel._fetch`: whether `f` can send a fetch its leader accepts, and its (leader,
        leader epoch, broker epoch)."""
        seen = s.views[f]
        can = []
        for leader in self.brokers:
            if leader == f:
                continue
            theirs = s.views[leader]
            can.append(z3.And(seen.leader == leader, s.alive[leader], theirs.leader == leader,
                              theirs.leader_epoch == seen.leader_epoch, z3.Not(theirs.isr[f])))
        sent = z3.And(s.alive[f], s.epoch[f] != NONE, z3.Or(can))
        return sent, (seen.leader, seen.leader_epoch, s.epoch[f])

    # ------------------------------------------------------------------ actions

    def instance_step(self, instance: ControlAction, s: SymKRaft, n: SymKRaft) -> list:
        """The guard and the whole next state of one action instance."""
        guard, after = self._action(instance, s)
        return [*guard, *(a == b for a, b in zip(n.variables(), after.variables()))]

    def _action(self, instance: ControlAction, s: SymKRaft) -> tuple[list, SymKRaft]:
        config, known = self.model.config, s.controller
        name, args = instance
        if name in ("BrokerStart", "BrokerStartBeforeFence"):
            (b,) = args
            if name == "BrokerStart":
                return [z3.Not(s.alive[b]), known.fenced[b]], self.start(s, b)
            started = self.start(s, b)
            return ([z3.Not(s.alive[b]), z3.Not(known.fenced[b]), s.early_registrations < config.early_registrations],
                    self.forget_offsets(replace(started, early_registrations=s.early_registrations + 1)))
        if name == "BrokerReplay":
            (b,) = args
            return ([s.alive[b], s.replayed[b] < s.length],
                    replace(s, replayed=put(s.replayed, b, s.length), views=put(s.views, b, known)))
        if name == "BrokerHeartbeat":
            (b,) = args
            return [s.alive[b], known.epoch[b] == s.epoch[b]], self.heartbeat(s, b)
        if name == "BrokerBeginShutdown":
            (b,) = args
            return ([s.alive[b], z3.Not(s.shutting[b]), s.shutdowns < config.shutdowns],
                    replace(s, shutting=put(s.shutting, b, z3.BoolVal(True)), shutdowns=s.shutdowns + 1))
        if name == "BrokerCrash":
            (b,) = args
            return [s.alive[b], s.failures < config.failures], replace(self.stop(s, b), failures=s.failures + 1)
        if name == "SessionTimeout":
            (b,) = args
            fenced = self.fence(s, b)
            fenced = replace(fenced, reported=put(fenced.reported, b, z3.IntVal(NONE)),
                             shutdown_offset=put(fenced.shutdown_offset, b, z3.IntVal(NONE)),
                             fencings=s.fencings + z3.If(s.alive[b], 1, 0))
            return ([z3.Not(known.fenced[b]), z3.Or(z3.Not(s.alive[b]), s.fencings < config.fencings)],
                    self.forget_offsets(fenced))
        if name == "FollowerFetch":
            (f,) = args
            sent, fetch = self.fetch(s, f)
            fresh = z3.Or([new != old for new, old in zip(fetch, s.fetched[f])])
            return [sent, fresh], replace(s, fetched=put(s.fetched, f, fetch))
        if name == "LeaderProposeIsr":
            leader, f = args
            seen = s.views[leader]
            fetch_leader, fetch_epoch, broker_epoch = s.fetched[f]
            guard = [z3.Not(s.pending), s.alive[leader], seen.leader == leader, z3.Not(seen.isr[f]),
                     fetch_leader == leader, fetch_epoch == seen.leader_epoch, self.eligible(seen, f)]
            if self.release == 2:  # KIP-903 at the leader
                guard.append(seen.epoch[f] == broker_epoch)
            request = (z3.IntVal(leader), s.epoch[leader], seen.leader_epoch, seen.partition_epoch, z3.IntVal(f),
                       broker_epoch)
            return guard, replace(s, pending=z3.BoolVal(True), request=request)
        if name == "ControllerHandleAlterPartition":
            leader, f = args
            _, sender_epoch, leader_epoch, partition_epoch, _, broker_epoch = s.request
            accepted = [known.epoch[leader] == sender_epoch, known.leader == leader,
                        known.leader_epoch == leader_epoch, known.partition_epoch == partition_epoch,
                        self.eligible(known, f)]
            if self.release == 2:  # KIP-903 at the controller
                accepted.append(known.epoch[f] == broker_epoch)
            after = self.partition(s, z3.And(accepted), z3.IntVal(leader), put(known.isr, f, z3.BoolVal(True)),
                                   leader_epoch, partition_epoch + 1)
            cleared = replace(after, pending=z3.BoolVal(False), request=(z3.IntVal(0),) * 6)
            return [s.pending, s.request[0] == leader, s.request[4] == f], cleared
        raise ValueError(f"no encoding for {instance}")  # pragma: no cover - action_instances lists only these

    # ------------------------------------------------------------------ properties

    def shutting_down(self, s: SymKRaft, b: int) -> z3.BoolRef:
        """`control.kraft._shutting_down`."""
        return z3.Or(s.shutdown_offset[b] != NONE, s.controller.in_shutdown[b])

    def isr_members_eligible(self, s: SymKRaft) -> z3.BoolRef:
        known = s.controller
        eligible = z3.And([z3.Implies(member, z3.And(z3.Not(known.fenced[b]), z3.Not(self.shutting_down(s, b))))
                           for b, member in enumerate(known.isr)])
        return z3.Or(z3.AtMost(*known.isr, 1), eligible)

    def leader_is_active(self, s: SymKRaft) -> z3.BoolRef:
        known = s.controller
        return z3.Or(known.leader == NONE, *(z3.And(known.leader == b, z3.Not(known.fenced[b]),
                                                    z3.Not(self.shutting_down(s, b))) for b in self.brokers))

    def _instances(self, name: str, action) -> list[tuple[ControlAction, z3.BoolRef]]:
        return [(instance, action == index) for index, instance in enumerate(self.action_instances)
                if instance.name == name]

    def _added(self, s: SymKRaft, action, n: SymKRaft) -> list[tuple[int, z3.BoolRef]]:
        """(follower, this step's AlterPartition added it to the ISR)."""
        return [(instance.args[1], z3.And(taken, n.length != s.length))
                for instance, taken in self._instances("ControllerHandleAlterPartition", action)]

    def isr_joined_by_registered_incarnation(self, s: SymKRaft, action, n: SymKRaft) -> z3.BoolRef:
        return z3.And([z3.Implies(added, s.controller.epoch[f] == s.request[5])
                       for f, added in self._added(s, action, n)])

    def _granted(self, s: SymKRaft, action, n: SymKRaft) -> list[tuple[int, z3.BoolRef]]:
        """(broker, this step let it go from controlled shutdown)."""
        return [(instance.args[0], z3.And(taken, s.shutdown_offset[instance.args[0]] != NONE,
                                          s.alive[instance.args[0]], z3.Not(n.alive[instance.args[0]])))
                for instance, taken in self._instances("BrokerHeartbeat", action)]

    def shutdown_after_leadership_moved(self, s: SymKRaft, action, n: SymKRaft) -> z3.BoolRef:
        known = s.controller
        clauses = []
        for b, granted in self._granted(s, action, n):
            believers = [z3.And(s.alive[o], z3.Not(known.fenced[o]), s.shutdown_offset[o] == NONE,
                                s.views[o].leader == b) for o in self.brokers if o != b]
            clauses.append(z3.Implies(granted, z3.Not(z3.Or(believers))))
        return z3.And(clauses)

    def stale_leader_view(self, s: SymKRaft) -> z3.BoolRef:
        return z3.Or([z3.And(s.alive[b], seen.leader == b, seen.leader_epoch < s.controller.leader_epoch)
                      for b, seen in enumerate(s.views)])

    def broker_rejoins(self, s: SymKRaft) -> z3.BoolRef:
        first = 2 * len(self.brokers)
        return z3.Or([z3.And(s.alive[b], s.epoch[b] > first, z3.Not(s.controller.fenced[b])) for b in self.brokers])
