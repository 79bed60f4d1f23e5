"""The invariants of `properties/invariants.py` as formulas over a symbolic state, by name, and the
well-formedness of a state in the layout (what every decoded state satisfies)."""

from __future__ import annotations

from itertools import combinations
from typing import Callable, Sequence

import z3

from kafka_mc.model.state import NO_LEADER, UNKNOWN

from kafka_mc.model import Config
from kafka_mc.model.interface import ALWAYS, Property
from kafka_mc.properties.lowering import NotLowered, lower

from .layout import Shape, SymState, fresh
from .terms import alive, pick
from .user_properties import user_formula


def _in_leader_log(s: SymState, history: list) -> z3.BoolRef:
    """Every (offset, msg) of a history is at that offset in the live controller's leader's log."""
    m = len(s.replicas[0].log_msg)
    cases = []
    for j, leader in enumerate(s.replicas):
        kept = [z3.Implies(flag, z3.And(i // m < leader.log_len, leader.log_msg[i // m] == i % m + 1))
                for i, flag in enumerate(history)]
        cases.append(z3.Implies(z3.And(s.leader == j, alive(leader)), z3.And(kept)))
    return z3.And(cases)


def no_committed_data_loss(s: SymState) -> z3.BoolRef:
    return _in_leader_log(s, s.committed)


def no_consumed_record_lost(s: SymState) -> z3.BoolRef:
    return _in_leader_log(s, s.consumed)


def no_acked_data_loss(s: SymState) -> z3.BoolRef:
    cases = []
    for j, leader in enumerate(s.replicas):
        held = [z3.Implies(flag, z3.Or([z3.And(o < leader.log_len, leader.log_msg[o] == k + 1)
                                        for o in range(len(leader.log_msg))]))
                for k, flag in enumerate(s.acked)]
        cases.append(z3.Implies(z3.And(s.leader == j, alive(leader)), z3.And(held)))
    return z3.And(cases)


def no_log_divergence(s: SymState) -> z3.BoolRef:
    pairs = []
    for a, b in combinations(s.replicas, 2):
        common = z3.If(a.hw <= b.hw, a.hw, b.hw)
        pairs += [z3.Implies(o < common, z3.And((o < a.log_len) == (o < b.log_len), a.log_msg[o] == b.log_msg[o],
                                                 a.log_epoch[o] == b.log_epoch[o]))
                  for o in range(len(a.log_msg))]
    return z3.And(pairs)


def hw_below_leo(s: SymState) -> z3.BoolRef:
    return z3.And([r.hw <= r.log_len for r in s.replicas])


def leader_epoch_monotonic(s: SymState) -> z3.BoolRef:
    terms = []
    for r in s.replicas:
        terms.append(r.epoch <= s.epoch)
        m = len(r.log_epoch)
        terms += [z3.Implies(o + 1 < r.log_len, r.log_epoch[o] <= r.log_epoch[o + 1]) for o in range(m - 1)]
        if m:
            terms.append(z3.Implies(r.log_len > 0, pick(r.log_epoch, r.log_len - 1, UNKNOWN) <= s.epoch))
            terms.append(z3.Implies(r.log_len > 0, r.log_epoch[0] >= UNKNOWN))
        k = len(r.cache_epoch)
        terms += [z3.Implies(j + 1 < r.cache_len, z3.And(r.cache_epoch[j] < r.cache_epoch[j + 1],
                                                          r.cache_start[j] <= r.cache_start[j + 1]))
                  for j in range(k - 1)]
    return z3.And(terms)


def leader_in_isr(s: SymState) -> z3.BoolRef:
    """No leader, or the leader is in the ISR (the ISR may be empty while there is no leader: KIP-966)."""
    return z3.Or(s.leader == NO_LEADER, z3.Or([z3.And(s.leader == j, member) for j, member in enumerate(s.isr)]))


def crash_loses_memory(s: SymState) -> z3.BoolRef:
    return z3.And([z3.Or(alive(r), z3.And(r.epoch == UNKNOWN, z3.Not(r.has_response), z3.Not(r.leading),
                                          z3.Not(z3.Or(r.stale_isr))))
                   for r in s.replicas])


SYMBOLIC_INVARIANTS: dict[str, Callable[[SymState], z3.BoolRef]] = {
    "NoCommittedDataLoss": no_committed_data_loss,
    "NoLogDivergence": no_log_divergence,
    "NoAckedDataLoss": no_acked_data_loss,
    "NoConsumedRecordLost": no_consumed_record_lost,
    "HwBelowLeo": hw_below_leo,
    "LeaderEpochMonotonic": leader_epoch_monotonic,
    "LeaderInIsr": leader_in_isr,
    "CrashLosesMemory": crash_loses_memory,
}


StateFormula = Callable[[SymState], z3.BoolRef]


def property_name(prop: str | Property) -> str:
    return prop if isinstance(prop, str) else prop.name


def state_formulas(properties: Sequence[str | Property], config: Config, shape: Shape) -> dict[str, StateFormula]:
    """Each property's formula over a symbolic state of `shape`: a shipped invariant by its name
    (`SYMBOLIC_INVARIANTS`), or a user's state invariant (`Property.predicate`) lowered
    (`properties.lowering`, `user_properties.user_formula`). ValueError naming a property that has none."""
    formulas: dict[str, StateFormula] = {}
    for prop in properties:
        if isinstance(prop, str):
            if prop not in SYMBOLIC_INVARIANTS:
                raise ValueError(f"property {prop!r} has no formula; allowed: {', '.join(SYMBOLIC_INVARIANTS)}, "
                                 "or a user's state invariant")
            formulas[prop] = SYMBOLIC_INVARIANTS[prop]
            continue
        if prop.predicate is None or prop.on_step or prop.kind != ALWAYS:
            raise ValueError(f"property {prop.name} has no formula: only a user's state invariant (a Python "
                             "function of a state) is lowered")
        try:
            step_formula = user_formula(lower(prop.predicate, config, prop.name), shape, [])
            step_formula(None, None, fresh(shape, "lowered"))  # an operation the numbers cannot express: now
        except NotLowered as error:
            raise ValueError(f"property {prop.name}: {error}") from None
        formulas[prop.name] = _state_formula(step_formula)
    return formulas


def _state_formula(step_formula: Callable) -> StateFormula:
    return lambda s: step_formula(None, None, s)


def well_formed(s: SymState) -> z3.BoolRef:
    """The leaves are in their domains and every array is zero past its length: the states the
    layout can decode, and the only ones a proof needs to consider."""
    n, m, k = len(s.replicas), len(s.replicas[0].log_msg), len(s.replicas[0].cache_epoch)
    terms = [s.leader >= NO_LEADER, s.leader < n, s.epoch >= 0, s.written >= 0, s.written <= m, s.crashes >= 0,
             s.cuts >= 0]
    # the epochs the controller's bumps made (`model/epoch_bumps.py`): never the first, none past its epoch
    terms += [z3.Not(flag) if epoch == 0 else z3.Implies(flag, s.epoch >= epoch) for epoch, flag in enumerate(s.bumped)]
    for r in s.replicas:
        terms += [r.log_len >= 0, r.log_len <= m, r.unflushed >= 0, r.unflushed <= r.log_len, r.hw >= 0,
                  r.cache_len >= 0, r.cache_len <= k, r.status >= 0, r.status <= 3, r.role >= 0, r.role <= 4,
                  r.epoch >= UNKNOWN, r.resp_offset >= 0, r.resp_hw >= 0, r.resp_len >= 0, r.resp_len <= m]
        for o in range(m):
            terms += [z3.If(o < r.log_len, z3.And(r.log_msg[o] >= 1, r.log_msg[o] <= m, r.log_epoch[o] >= 0),
                            z3.And(r.log_msg[o] == 0, r.log_epoch[o] == 0)),
                      z3.If(o < r.resp_len, z3.And(r.resp_msg[o] >= 1, r.resp_msg[o] <= m, r.resp_epoch[o] >= 0),
                            z3.And(r.resp_msg[o] == 0, r.resp_epoch[o] == 0))]
        for j in range(k):
            terms.append(z3.If(j < r.cache_len, z3.And(r.cache_epoch[j] >= 0, r.cache_start[j] >= 0),
                               z3.And(r.cache_epoch[j] == 0, r.cache_start[j] == 0)))
        terms.append(z3.Implies(z3.Not(r.has_response),
                                z3.And(r.resp_offset == 0, r.resp_hw == 0, r.resp_len == 0, z3.Not(r.resp_oor))))
        terms.append(z3.Implies(z3.Not(r.leading), z3.And([leo == 0 for leo in r.remote_leo])))
        terms += [z3.Implies(r.leading, z3.And(leo >= UNKNOWN, leo <= m)) for leo in r.remote_leo]
        terms += [z3.And(leader >= NO_LEADER, leader < n) for leader in r.leader_id]
        # a delayed fetch (`Shape.delays`): its offset + 1, at most past a full log; stale only while there is one
        terms += [z3.And(fetch >= 0, fetch <= m + 1) for fetch in r.delayed_fetch]
        terms += [z3.Implies(stale, fetch > 0) for fetch, stale in zip(r.delayed_fetch, r.delayed_fetch_stale)]
    # an AlterPartition in flight adds one replica, registered again since or not (`Shape.delays`)
    terms += [z3.AtMost(*s.proposal, 1)] if s.proposal else []
    terms += [z3.Implies(again, member) for again, member in zip(s.reregistered, s.proposal)]
    terms += [delays >= 0 for delays in s.delays]
    terms += [z3.And(count >= 0, count <= s.crashes) for count in s.disk_failures]
    return z3.And(terms)
