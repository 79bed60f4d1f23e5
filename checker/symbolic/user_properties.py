"""Users' own properties in Z3: a lowered property (`properties.lowering`) as a formula over the
symbolic states of a step (`layout.SymState`), for the bounded model checker.

Every value is a number of one sort: 32-bit signed bit-vectors when the states are bit-vectors
(each leaf sign-extended, a truth value 0 or 1), unbounded integers in a proof. A field read at
an index known only in the state (a replica, a position) is a choice among the leaves it can
be; past an array's end it reads 0, as the layout pads every array. The formula is true where
the property holds and does not raise; where the solver finds it false, the engine evaluates
the user's Python function there (`bmc._check_claims`), so the verdict, or the error, is its own.
"""

from __future__ import annotations

from typing import Any, Sequence

import z3

from kafka_mc.model.replication import ACTION_NAMES
from kafka_mc.model.state import NO_LEADER
from kafka_mc.properties.expressions import Expr
from kafka_mc.properties.lowering import Lowered

from .encoding import Formula
from .layout import Shape, SymState

WIDTH = 32
_REPLICA_LEAVES = {"leo": "log_len", "unflushed": "unflushed", "hw": "hw", "status": "status", "role": "role",
                   "epoch": "epoch", "cache_count": "cache_len", "response": "has_response",
                   "response_offset": "resp_offset", "response_hw": "resp_hw",
                   "response_out_of_range": "resp_oor", "response_count": "resp_len", "has_remote": "leading"}
_REPLICA_ARRAYS = {"log_msg": "log_msg", "log_epoch": "log_epoch", "cache_epoch": "cache_epoch",
                   "cache_start": "cache_start", "response_msg": "resp_msg", "response_epoch": "resp_epoch",
                   "remote_leo": "remote_leo"}
_STATE_LEAVES = {"leader": "leader", "controller_epoch": "epoch", "written": "written", "crashes": "crashes",
                 "cuts": "cuts"}


class NotEncoded(ValueError):
    """An operation of a lowered property the chosen number sort cannot express."""


def user_formula(lowered: Lowered, shape: Shape, slots: Sequence) -> Formula:
    """The property's formula over a step (true where it holds and does not raise)."""
    def formula(before: SymState | None, action: Any, after: SymState) -> z3.BoolRef:
        if lowered.on_step and before is None:
            return z3.BoolVal(True)  # no step yet: a step property holds
        states = (before, after) if lowered.on_step else (after, after)
        terms = _Terms(shape, states, action, slots)
        return z3.And(terms.value(lowered.fails) == terms.num(0), terms.value(lowered.raises) == terms.num(0))
    return formula


class _Terms:
    def __init__(self, shape: Shape, states: tuple, action: Any, slots: Sequence):
        self.shape, self.states, self.action, self.slots = shape, states, action, slots
        self.integers = shape.bits is None
        self.cache: dict[int, Any] = {}
        self.keep: list[Expr] = []

    def num(self, value: int) -> Any:
        return z3.IntVal(value) if self.integers else z3.BitVecVal(value, WIDTH)

    def leaf(self, term: Any) -> Any:
        """A leaf of the layout as a number of the common sort."""
        if z3.is_bool(term):
            return z3.If(term, self.num(1), self.num(0))
        if self.integers:
            return term
        return z3.SignExt(WIDTH - term.size(), term) if term.size() < WIDTH else term

    def mask(self, flags: list) -> Any:
        total = self.num(0)
        for index, flag in enumerate(flags):
            total = total + z3.If(flag, self.num(1 << index), self.num(0))
        return total

    def choose(self, index: Any, options: list) -> Any:
        """options[index], 0 past either end; `index` a number of the common sort."""
        if z3.is_const(index) and (z3.is_int_value(index) or z3.is_bv_value(index)):
            position = index.as_long() if self.integers else index.as_signed_long()
            return options[position] if 0 <= position < len(options) else self.num(0)
        result = self.num(0)
        for position in reversed(range(len(options))):
            result = z3.If(index == self.num(position), options[position], result)
        return result

    def field(self, which: int, name: str, arguments: list) -> Any:
        state: SymState = self.states[which]
        if name in _STATE_LEAVES:
            return self.leaf(getattr(state, _STATE_LEAVES[name]))
        if name in ("isr", "elr", "last_known_elr", "unseen", "zk_cut", "peer_cut", "proposal", "reregistered",
                    "bumped"):
            # elr, last_known_elr: no flags (0) without eligible leaders; unseen: none (0) without the metadata lag;
            # proposal, reregistered: none (0) without delays or the lag (`Shape.pending`); bumped: one flag per
            # epoch with the controller's epoch bumps, none (0) without
            return self.mask(getattr(state, name))
        if name in ("delays", "disk_failures"):  # one number where the shape keeps it, else none (0)
            kept = getattr(state, name)
            return self.leaf(kept[0]) if kept else self.num(0)
        if name == "acked":  # acked[k] is message k + 1
            return self.mask([z3.BoolVal(False)] + list(state.acked))
        if name in ("committed", "consumed"):
            flags, log = getattr(state, name), self.shape.log
            offset, msg = arguments
            options = [self.choose(msg, [self.num(0)] + [self.leaf(flags[o * log + k]) for k in range(log)])
                       for o in range(log)]
            return self.choose(offset, options)
        replica = arguments[0]
        if name in _REPLICA_LEAVES:
            leaves = [self.leaf(getattr(r, _REPLICA_LEAVES[name])) for r in state.replicas]
        elif name == "stale_isr":
            leaves = [self.mask(r.stale_isr) for r in state.replicas]
        elif name in ("delayed_fetch", "delayed_fetch_stale"):  # one where `Shape.delays`, else none (0)
            leaves = [self.leaf(getattr(r, name)[0]) if getattr(r, name) else self.num(0) for r in state.replicas]
        elif name == "leader_id":  # one where `Shape.leader_ids`, else always NO_LEADER
            leaves = [self.leaf(r.leader_id[0]) if r.leader_id else self.num(NO_LEADER) for r in state.replicas]
        else:
            position = arguments[1]
            leaves = [self.choose(position, [self.leaf(x) for x in getattr(r, _REPLICA_ARRAYS[name])])
                      for r in state.replicas]
        return self.choose(replica, leaves)

    def action_part(self, part: str) -> Any:
        if self.action is None:
            return self.num(0)
        values = [ACTION_NAMES.index(a.name) if part == "name" else a.replica for a in self.slots]
        result = self.num(0)
        for slot in reversed(range(len(values))):
            slot_value = z3.IntVal(slot) if z3.is_int(self.action) else z3.BitVecVal(slot, self.action.size())
            result = z3.If(self.action == slot_value, self.num(values[slot]), result)
        return result

    def value(self, node: Expr) -> Any:
        known = self.cache.get(id(node))
        if known is not None:
            return known
        self.keep.append(node)
        kind = node[0]
        if kind == "const":
            result = self.num(node[1])
        elif kind == "field":
            result = self.field(node[1], node[2], [self.value(a) for a in node[3:]])
        elif kind == "action":
            result = self.action_part(node[1])
        else:
            result = self.operation(kind, [self.value(x) for x in node[1:]])
        self.cache[id(node)] = result
        return result

    def operation(self, kind: str, x: list) -> Any:
        one, zero = self.num(1), self.num(0)

        def flag(condition: Any) -> Any:
            return z3.If(condition, one, zero)

        if kind == "add":
            return x[0] + x[1]
        if kind == "sub":
            return x[0] - x[1]
        if kind == "mul":
            return x[0] * x[1]
        if kind == "neg":
            return -x[0]
        if kind == "eq":
            return flag(x[0] == x[1])
        if kind == "ne":
            return flag(x[0] != x[1])
        if kind == "lt":
            return flag(x[0] < x[1])
        if kind == "le":
            return flag(x[0] <= x[1])
        if kind == "and":
            return flag(z3.And(x[0] != zero, x[1] != zero))
        if kind == "or":
            return flag(z3.Or(x[0] != zero, x[1] != zero))
        if kind == "not":
            return flag(x[0] == zero)
        if kind == "ite":
            return z3.If(x[0] != zero, x[1], x[2])
        if kind == "min":
            return z3.If(x[0] <= x[1], x[0], x[1])
        if kind == "max":
            return z3.If(x[0] >= x[1], x[0], x[1])
        if self.integers:
            return self.integer_bits(kind, x)
        if kind == "bit_and":
            return x[0] & x[1]
        if kind == "bit_or":
            return x[0] | x[1]
        if kind == "bit_xor":
            return x[0] ^ x[1]
        if kind == "bit_not":
            return ~x[0]
        in_range = z3.And(x[1] >= zero, x[1] < self.num(WIDTH - 1))
        if kind == "shl":
            return z3.If(in_range, x[0] << x[1], zero)
        return z3.If(in_range, x[0] >> x[1], z3.If(x[0] >= zero, zero, self.num(-1)))

    def integer_bits(self, kind: str, x: list) -> Any:
        """Shifts by 0 to 30 places, and `&` with a constant 2**j - 1, over integers (floor division and
        remainder agree with Python's shifts and masks, negative numbers included); other bit operations
        have no encoding there."""
        zero = self.num(0)
        if kind in ("shl", "shr"):
            result = zero if kind == "shl" else z3.If(x[0] >= zero, zero, self.num(-1))
            for places in reversed(range(WIDTH - 1)):
                moved = x[0] * (1 << places) if kind == "shl" else x[0] / (1 << places)
                result = z3.If(x[1] == places, moved, result)
            return result
        mask = x[1] if z3.is_int_value(x[1]) else x[0] if z3.is_int_value(x[0]) else None
        if kind == "bit_and" and mask is not None and mask.as_long() >= 0 and \
                (mask.as_long() + 1) & mask.as_long() == 0:
            other = x[0] if mask is x[1] else x[1]
            return other % (mask.as_long() + 1)
        raise NotEncoded(f"the bit operation {kind} has no encoding over unbounded integers (a proof); "
                         "only shifts and & with 2**j - 1 have")
