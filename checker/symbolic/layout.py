"""The symbolic state: one Z3 constant per leaf of a `State`, in arrays of fixed size.

The layout follows the packed state: per replica its log (length, then the message number
and epoch at each offset), its page-cache count, HW, epoch cache (length, then epoch and start
offset per entry), status, role, in-memory epoch, the fetch response in flight, the stale ISR
of a deposed leader and the leader's view of every replica's LEO; then the controller, the
counters and the histories. Bitmasks of replicas and sets of (offset, msg) become one Bool per
member. Arrays are padded with zeros past their length, so a State has exactly one encoding
and every solver model decodes into a State.

Sizes: a log holds at most `messages` records (every record sits at the offset it was written
at, so a log never holds one twice), a response at most as many, and an epoch cache at most
`elections + 1` entries (its epochs rise strictly); `prove`, where elections are unbounded,
takes the cache's capacity as a bound of its own.

The controller's `bumped` (the epochs its epoch bumps made, `model/epoch_bumps.py`) is one Bool
per epoch, 0 to `greatest_epoch`, where the encoding runs the bump model (`Shape.epochs`; the
epochs, and so the cache, then run to elections + crashes + network failures,
`epoch_bumps.bounding_config`); the replication model's states have none (it is 0 there), so its
layout, and the proofs over it, are unchanged.

The controller's `elr` (the eligible leader replicas, KIP-966) is one Bool per replica where the
protocol has `eligible_leaders` (`Shape.elr`), and none otherwise: the other variants' states have
an empty ELR, so their layout, and the proofs over it, are unchanged too. So is `last_known_elr` (the
last known leader, KAFKA-15584).

A replica's `leader_id` (the leader it follows, `Replica.leader_id`: NO_LEADER or a replica index)
is one number per replica where the protocol remembers it (`Protocol.remembers_leader`,
`follower_skips` before 2.1; `Shape.leader_ids`), and none otherwise: there it is always NO_LEADER.

Delayed requests (`Config.delays`; `Shape.delays`) add the controller's AlterPartition in flight
(`proposal`, `reregistered`: one Bool per replica each), the counter of delayed requests (`delays`: one
number) and, per replica, its delayed fetch (`delayed_fetch`: one number, its offset + 1, and
`delayed_fetch_stale`: one Bool); without delays these are empty lists, as in every state of such a
configuration, so the layout, and the proofs over it, are unchanged.

A leader that reads the metadata late (`Config.metadata_lag`; `Shape.lag`) adds the controller's `unseen`
removals (one Bool per replica) and, with or without delays, the `proposal` and `reregistered` flags its
pending ISR changes live in (the counter and the delayed fetches stay with `Shape.delays`).
"""

from __future__ import annotations

import ctypes
from dataclasses import dataclass, fields, replace
from typing import Any, Sequence

import z3
from z3 import z3core

from kafka_mc.model import PROTOCOLS, Config, State
from kafka_mc.model.epoch_bumps import bounding_config
from kafka_mc.model.state import NO_LEADER, Controller, FetchResponse, Record, Replica

__all__ = ["Shape", "SymReplica", "SymState", "replace"]


@dataclass(frozen=True)
class Shape:
    """The array sizes of one configuration: replicas, log capacity and epoch-cache capacity;
    the numbers' sort: signed bit-vectors of `bits` bits (bounded runs: the solver
    bit-blasts them), or unbounded integers when `bits` is None (proofs over any epoch); and
    `epochs`, the epochs the controller's `bumped` flags cover (0: no epoch bumps, the
    replication model; `greatest_epoch + 1` for the bump model); `elr`: the controller keeps
    eligible leader replicas, one flag per replica (the protocol's `eligible_leaders`, KIP-966);
    `leader_ids`: each replica keeps the leader it follows (the protocol's `remembers_leader`);
    `delays`: requests may be delayed (`Config.delays`), so the layout keeps them; `disk_failures`: the
    states count their disk failures (`Config.counts_disk_failures`); `lag`: the leader reads the controller's
    own ISR removals late (`Config.metadata_lag`), so the layout keeps them and the pending ISR changes."""

    replicas: int
    log: int
    cache: int
    bits: int | None = None
    epochs: int = 0
    elr: bool = False
    leader_ids: bool = False
    delays: bool = False
    disk_failures: bool = False
    lag: bool = False

    @staticmethod
    def of(config: Config, cache: int | None = None, integers: bool = False, bumps: bool = False) -> "Shape":
        """`bumps`: the shape of the bump model (`model/epoch_bumps.py`), whose epochs, and epoch
        caches, run to elections + crashes + network failures (`bounding_config`)."""
        epochs = 0
        if bumps:
            config = bounding_config(config)
            epochs = config.elections + 1
        if cache is None:
            cache = config.elections + 1 if PROTOCOLS[config.protocol].epoch_cache else 0
        largest = max(config.messages + 1, config.elections + 1, config.crashes + 1, config.partitions + 1, cache + 1,
                      config.replicas, config.delays + 1)
        protocol = PROTOCOLS[config.protocol]
        return Shape(config.replicas, config.messages, cache, None if integers else largest.bit_length() + 2, epochs,
                     protocol.eligible_leaders, protocol.remembers_leader, config.delays > 0,
                     config.counts_disk_failures, config.metadata_lag)

    @property
    def pending(self) -> bool:
        """The layout keeps an ISR change in flight or pending (`proposal`, `reregistered`)."""
        return self.delays or self.lag

    def num(self, value: int) -> z3.ExprRef:
        return z3.IntVal(value) if self.bits is None else z3.BitVecVal(value, self.bits)

    def variable(self, name: str) -> z3.ExprRef:
        return z3.Int(name) if self.bits is None else z3.BitVec(name, self.bits)


# Fields whose leaves are Bools; every other leaf is an Int.
BOOLS = {"has_response", "resp_oor", "stale_isr", "leading", "isr", "bumped", "elr", "last_known_elr", "committed",
         "consumed", "acked",
         "zk_cut", "peer_cut", "proposal", "reregistered", "delayed_fetch_stale", "unseen"}


@dataclass(frozen=True)
class SymReplica:
    log_len: Any
    log_msg: list
    log_epoch: list
    unflushed: Any
    hw: Any
    cache_len: Any
    cache_epoch: list
    cache_start: list
    status: Any
    role: Any
    epoch: Any
    has_response: Any
    resp_offset: Any
    resp_hw: Any
    resp_len: Any
    resp_msg: list
    resp_epoch: list
    resp_oor: Any
    stale_isr: list  # one per replica
    leading: Any  # the replica keeps a view of the others' LEOs (it was made leader)
    remote_leo: list  # one per replica
    leader_id: list  # the leader it follows (`Replica.leader_id`): one where `Shape.leader_ids`, none otherwise
    delayed_fetch: list  # its delayed fetch's offset + 1 (0: none): one where `Shape.delays`, none otherwise
    delayed_fetch_stale: list  # that fetch is of an earlier incarnation: one where `Shape.delays`, none otherwise


@dataclass(frozen=True)
class SymState:
    replicas: list  # of SymReplica
    leader: Any
    epoch: Any
    isr: list  # one per replica
    bumped: list  # one per epoch, `Shape.epochs` of them: the controller's epoch bumps made it (none: no bumps)
    elr: list  # one per replica where `Shape.elr` (KIP-966's eligible leader replicas), none otherwise
    last_known_elr: list  # one per replica where `Shape.elr` (the last known leader, KAFKA-15584), none otherwise
    written: Any
    crashes: Any
    committed: list  # offset * log + (msg - 1)
    consumed: list
    acked: list  # msg - 1
    zk_cut: list
    peer_cut: list
    cuts: Any
    proposal: list  # one per replica where `Shape.pending`: the ISR change in flight or pending adds it (a shrink
    # kept pending: the leader itself, `Shape.lag`); none otherwise
    reregistered: list  # one per replica where `Shape.pending`: registered again since that request; none otherwise
    delays: list  # one where `Shape.delays`: the requests delayed so far; none otherwise
    disk_failures: list  # one where `Shape.disk_failures`: the crashes so far that lost the disk; none otherwise
    unseen: list  # one per replica where `Shape.lag`: removed by the controller, not yet read by its leader


def _sizes(shape: Shape) -> dict[str, int]:
    n, m = shape.replicas, shape.log
    return {"log_msg": m, "log_epoch": m, "cache_epoch": shape.cache, "cache_start": shape.cache, "resp_msg": m,
            "resp_epoch": m, "stale_isr": n, "remote_leo": n, "isr": n, "committed": m * m, "consumed": m * m,
            "acked": m, "zk_cut": n, "peer_cut": n, "bumped": shape.epochs,
            "elr": n if shape.elr else 0, "last_known_elr": n if shape.elr else 0,
            "leader_id": 1 if shape.leader_ids else 0,
            "proposal": n if shape.pending else 0, "reregistered": n if shape.pending else 0,
            "delays": 1 if shape.delays else 0, "delayed_fetch": 1 if shape.delays else 0,
            "delayed_fetch_stale": 1 if shape.delays else 0, "disk_failures": 1 if shape.disk_failures else 0,
            "unseen": n if shape.lag else 0}


def _build(cls, shape: Shape, leaf, path: str):
    """An instance of `cls` whose every leaf is `leaf(name, is_bool)`."""
    sizes, values = _sizes(shape), {}
    for f in fields(cls):
        is_bool = f.name in BOOLS
        if f.name == "replicas":
            values[f.name] = [_build(SymReplica, shape, leaf, f"{path}r{i}.") for i in range(shape.replicas)]
        elif f.name in sizes:
            values[f.name] = [leaf(f"{path}{f.name}{i}", is_bool) for i in range(sizes[f.name])]
        else:
            values[f.name] = leaf(f"{path}{f.name}", is_bool)
    return cls(**values)


def fresh(shape: Shape, prefix: str) -> SymState:
    """A state of fresh Z3 constants named after `prefix` (one copy of the variables per step)."""
    return _build(SymState, shape, lambda name, is_bool: z3.Bool(name) if is_bool else shape.variable(name), f"{prefix}.")


def leaves(value) -> list:
    """Every leaf of a SymState (or SymReplica), in layout order."""
    if isinstance(value, (SymState, SymReplica)):
        return [leaf for f in fields(value) for leaf in leaves(getattr(value, f.name))]
    if isinstance(value, list):
        return [leaf for item in value for leaf in leaves(item)]
    return [value]


def rebuild(shape: Shape, values: list, cls: type = SymState):
    """The SymState (or SymReplica) whose leaves, in layout order, are `values`."""
    items = iter(values)
    return _build(cls, shape, lambda name, is_bool: next(items), "")


def equal(a: SymState, b: SymState) -> z3.BoolRef:
    """Every leaf of `a` equals the same leaf of `b`: a full frame condition."""
    return z3.And([x == y for x, y in zip(leaves(a), leaves(b)) if not _same(x, y)])


def merge(condition, then, otherwise):
    """Leafwise `If(condition, then, otherwise)` of two SymStates (or two SymReplicas), sharing
    leaves that are the same term."""
    if z3.is_true(condition) or then is otherwise:
        return then
    if z3.is_false(condition):
        return otherwise
    merged = [x if _same(x, y) else z3.If(condition, x, y) for x, y in zip(leaves(then), leaves(otherwise))]
    return rebuild(shape_of(then), merged, type(then))


def _same(x, y) -> bool:
    return x is y or (z3.is_expr(x) and z3.is_expr(y) and x.eq(y))


def shape_of(s) -> Shape:
    """The Shape of a SymState or SymReplica of Z3 terms (a SymReplica's with no `bumped` or `elr` flags)."""
    replica = s.replicas[0] if isinstance(s, SymState) else s
    sort = replica.hw.sort()
    whole = isinstance(s, SymState)
    return Shape(len(replica.stale_isr), len(replica.log_msg), len(replica.cache_epoch),
                 sort.size() if z3.is_bv_sort(sort) else None, len(s.bumped) if whole else 0,
                 bool(s.elr) if whole else False, bool(replica.leader_id), bool(replica.delayed_fetch),
                 bool(s.disk_failures) if whole else False, bool(s.unseen) if whole else False)


# ------------------------------------------------------------------ concrete states


class CapacityError(ValueError):
    """A concrete state that does not fit the arrays of a Shape."""


def values_of(shape: Shape, state: State) -> SymState:
    """The leaves of `state` as Python ints and bools, in the symbolic layout."""
    n, m = shape.replicas, shape.log

    def padded(items: list, size: int, what: str) -> list:
        if len(items) > size:
            raise CapacityError(f"{what} has {len(items)} entries, more than the encoding's {size}")
        return list(items) + [0] * (size - len(items))

    def bits(mask: int) -> list[bool]:
        return [bool(mask >> i & 1) for i in range(n)]

    def history(entries) -> list[bool]:
        flags = [False] * (m * m)
        for offset, msg in entries:
            flags[offset * m + msg - 1] = True
        return flags

    bumped = state.controller.bumped
    if bumped >> shape.epochs:
        raise CapacityError(f"the controller's bumped epochs {bumped:#b} reach past the encoding's {shape.epochs} "
                            "epochs" if shape.epochs else "the controller bumped an epoch; the encoding has no bumps")
    elr, last_known_elr = state.controller.elr, state.controller.last_known_elr
    if (elr or last_known_elr) and not shape.elr:
        raise CapacityError(f"the controller's ELR {elr:#b} or last known leader {last_known_elr:#b} is not empty; "
                            "the encoding of a protocol without eligible_leaders has none")

    controller = state.controller
    if state.delays and not shape.delays:
        raise CapacityError("the state has delayed requests; the encoding of a configuration without delays has none")
    if (controller.proposal or controller.reregistered) and not shape.pending:
        raise CapacityError("the state has an ISR change in flight or pending; the encoding of a configuration "
                            "without delays or the metadata lag has none")
    if controller.unseen and not shape.lag:
        raise CapacityError("the state has ISR removals its leader has not read; the encoding of a configuration "
                            "without the metadata lag has none")
    if state.disk_failures and not shape.disk_failures:
        raise CapacityError("the state counts disk failures; the encoding of a configuration that does not count "
                            "them has none")

    replicas = []
    for replica in state.replicas:
        if replica.delayed_fetch and not shape.delays:
            raise CapacityError("a replica has a delayed fetch; the encoding of a configuration without delays has "
                                "none")
        if replica.leader_id != NO_LEADER and not shape.leader_ids:
            raise CapacityError(f"a replica follows leader {replica.leader_id}; the encoding of a protocol that does "
                                "not remember the leader has none")
        response = replica.response or FetchResponse(0, 0, (), False)
        replicas.append(SymReplica(
            log_len=replica.leo,
            log_msg=padded([r.msg for r in replica.log], m, "a log"),
            log_epoch=padded([r.epoch for r in replica.log], m, "a log"),
            unflushed=replica.unflushed,
            hw=replica.hw,
            cache_len=len(replica.epochs),
            cache_epoch=padded([e for e, _ in replica.epochs], shape.cache, "an epoch cache"),
            cache_start=padded([s for _, s in replica.epochs], shape.cache, "an epoch cache"),
            status=replica.status,
            role=replica.role,
            epoch=replica.epoch,
            has_response=bool(replica.response),
            resp_offset=response.offset,
            resp_hw=response.hw,
            resp_len=len(response.records),
            resp_msg=padded([r.msg for r in response.records], m, "a fetch response"),
            resp_epoch=padded([r.epoch for r in response.records], m, "a fetch response"),
            resp_oor=response.out_of_range,
            stale_isr=bits(replica.stale_isr),
            leading=bool(replica.remote_leos),
            remote_leo=padded(list(replica.remote_leos), n, "a leader's view of LEOs"),
            leader_id=[replica.leader_id] if shape.leader_ids else [],
            delayed_fetch=[replica.delayed_fetch] if shape.delays else [],
            delayed_fetch_stale=[replica.delayed_fetch_stale] if shape.delays else [],
        ))
    return SymState(
        replicas=replicas,
        leader=state.controller.leader,
        epoch=state.controller.epoch,
        isr=bits(state.controller.isr),
        bumped=[bool(bumped >> epoch & 1) for epoch in range(shape.epochs)],
        elr=bits(elr) if shape.elr else [],
        last_known_elr=bits(last_known_elr) if shape.elr else [],
        written=state.written,
        crashes=state.crashes,
        committed=history(state.committed),
        consumed=history(state.consumed),
        acked=[bool(state.acked >> msg & 1) for msg in range(1, m + 1)],
        zk_cut=bits(state.zk_cut),
        peer_cut=bits(state.peer_cut),
        cuts=state.cuts,
        proposal=bits(controller.proposal) if shape.pending else [],
        reregistered=bits(controller.reregistered) if shape.pending else [],
        delays=[state.delays] if shape.delays else [],
        disk_failures=[state.disk_failures] if shape.disk_failures else [],
        unseen=bits(controller.unseen) if shape.lag else [],
    )


def constant(shape: Shape, state: State) -> SymState:
    """`state` as a SymState of Z3 values."""
    return rebuild(shape, [z3.BoolVal(v) if isinstance(v, bool) else shape.num(v)
                           for v in leaves(values_of(shape, state))])


def to_state(shape: Shape, values: SymState) -> State:
    """The State whose leaves, in the symbolic layout, are the Python values in `values`."""
    m = shape.log

    def mask(flags: list) -> int:
        return sum(1 << i for i, flag in enumerate(flags) if flag)

    def history(flags: list) -> tuple:
        return tuple((i // m, i % m + 1) for i, flag in enumerate(flags) if flag)

    replicas = []
    for r in values.replicas:
        response: FetchResponse | tuple[()] = ()
        if r.has_response:
            records = tuple(Record(r.resp_msg[k], r.resp_epoch[k]) for k in range(r.resp_len))
            response = FetchResponse(r.resp_offset, r.resp_hw, records, r.resp_oor)
        replicas.append(Replica(
            log=tuple(Record(r.log_msg[i], r.log_epoch[i]) for i in range(r.log_len)),
            unflushed=r.unflushed,
            hw=r.hw,
            epochs=tuple((r.cache_epoch[j], r.cache_start[j]) for j in range(r.cache_len)),
            status=r.status,
            role=r.role,
            epoch=r.epoch,
            response=response,
            stale_isr=mask(r.stale_isr),
            remote_leos=tuple(r.remote_leo) if r.leading else (),
            leader_id=r.leader_id[0] if r.leader_id else NO_LEADER,
            delayed_fetch=r.delayed_fetch[0] if r.delayed_fetch else 0,
            delayed_fetch_stale=bool(r.delayed_fetch_stale[0]) if r.delayed_fetch_stale else False,
        ))
    return State(
        replicas=tuple(replicas),
        controller=Controller(values.leader, values.epoch, mask(values.isr), mask(values.bumped), mask(values.elr),
                              mask(values.proposal), mask(values.reregistered), mask(values.last_known_elr),
                              mask(values.unseen)),
        written=values.written,
        crashes=values.crashes,
        committed=history(values.committed),
        consumed=history(values.consumed),
        acked=sum(1 << (i + 1) for i, flag in enumerate(values.acked) if flag),
        zk_cut=mask(values.zk_cut),
        peer_cut=mask(values.peer_cut),
        cuts=values.cuts,
        delays=values.delays[0] if values.delays else 0,
        disk_failures=values.disk_failures[0] if values.disk_failures else 0,
    )


def evaluate(model: z3.ModelRef, s: SymState) -> SymState:
    """The Python values a solver model gives the leaves of `s`."""
    return rebuild(shape_of(s), model_values(model, leaves(s)))


def model_values(model: z3.ModelRef, terms: Sequence) -> list:
    """The Python value (bool, or int: a bit-vector's signed) a solver model gives each of
    `terms`, by Z3's C API (`z3core`): `model.eval` wraps every answer in a Python object, which
    cost more than the solving where every successor of a state is decoded (the agreement tests).
    Each answer is read before the next call that makes a term (Z3 keeps the last one alive)."""
    context, native = model.ctx.ref(), model.model
    answer, number = (z3.Ast * 1)(), ctypes.c_int64()
    values: list = []
    for term in terms:
        term_ast = term.as_ast()
        sort = z3core.Z3_get_sort(context, term_ast)
        kind = z3core.Z3_get_sort_kind(context, sort)
        size = z3core.Z3_get_bv_sort_size(context, sort) if kind == z3.Z3_BV_SORT else 0
        if not z3core.Z3_model_eval(context, native, term_ast, True, answer):
            raise z3.Z3Exception(f"the model does not evaluate {term}")
        if kind == z3.Z3_BOOL_SORT:
            truth = z3core.Z3_get_bool_value(context, answer[0])
            if truth == z3.Z3_L_UNDEF:
                raise z3.Z3Exception(f"the model leaves {term} undecided")
            values.append(truth == z3.Z3_L_TRUE)
        elif kind in (z3.Z3_BV_SORT, z3.Z3_INT_SORT) and size <= 63 and \
                z3core.Z3_get_numeral_int64(context, answer[0], ctypes.byref(number)):
            value = number.value
            values.append(value - (1 << size) if size and value >> (size - 1) else value)
        else:  # a number past 64 bits
            values.append(as_int(model.eval(term, model_completion=True)))
    return values


def as_int(term: z3.ExprRef) -> int:
    """The Python int of an integer or (signed) bit-vector numeral."""
    return term.as_signed_long() if z3.is_bv(term) else term.as_long()


def decode(model: z3.ModelRef, s: SymState) -> State:
    """The State a solver model gives `s`."""
    return to_state(shape_of(s), evaluate(model, s))
