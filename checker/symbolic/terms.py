"""Small term builders shared by the symbolic transitions, protocols and properties."""

from __future__ import annotations

import z3

from kafka_mc.model.state import EXPIRED, FENCED, LEADER, UP

from .layout import SymReplica, SymState, replace


def alive(replica: SymReplica) -> z3.BoolRef:
    return z3.Or(replica.status == UP, replica.status == EXPIRED)


def acts_as_leader(replica: SymReplica) -> z3.BoolRef:
    return z3.And(z3.Or(replica.role == LEADER, replica.role == FENCED), alive(replica))


def numeral(value: int, like: z3.ExprRef) -> z3.ExprRef:
    """The number `value` in the sort of `like` (an integer or a bit-vector)."""
    sort = like.sort()
    return z3.BitVecVal(value, sort.size()) if z3.is_bv_sort(sort) else z3.IntVal(value)


def pick(values: list, index, default: int = 0):
    """`values[index]` for a symbolic index; `default` when the index is outside the list."""
    if isinstance(index, int):
        return values[index] if 0 <= index < len(values) else numeral(default, values[0] if values else index)
    result = numeral(default, index)
    for position in reversed(range(len(values))):
        result = z3.If(index == position, values[position], result)
    return result


def put(values: list, index: int, value) -> list:
    """A copy of `values` with `value` at the (concrete) `index`."""
    return values[:index] + [value] + values[index + 1 :]


def smax(a, b):
    return z3.If(a >= b, a, b)


def smin(a, b):
    return z3.If(a <= b, a, b)


def count(flags: list, like: z3.ExprRef) -> z3.ExprRef:
    """How many of `flags` hold, in the sort of `like`."""
    one, zero = numeral(1, like), numeral(0, like)
    return z3.Sum([z3.If(flag, one, zero) for flag in flags]) if flags else zero


def with_replica(state: SymState, index: int, replica: SymReplica) -> SymState:
    return replace(state, replicas=put(state.replicas, index, replica))


def latest_epoch(replica: SymReplica):
    """The epoch of the last epoch-cache entry, or UNKNOWN (-1) for an empty cache."""
    return z3.If(replica.cache_len == 0, -1, pick(replica.cache_epoch, replica.cache_len - 1))
