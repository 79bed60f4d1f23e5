"""Expressions over one state, or one step, of the replication model: what a user's property
becomes when it is lowered (`properties.lowering`), and what each engine evaluates or encodes.

An expression is a nested tuple whose first item names it:

- `("const", value)`: an integer (a truth value is 0 or 1);
- `("field", which, name, *arguments)`: a field of the state before the step (`which` 0) or after
  it (1), from `FIELDS`; its arguments (a replica, a position, an offset and a message) are
  expressions. A position past the field's length reads 0, as the compiled kernel's wide form
  holds it;
- `("action", "name")` (the code of the step's action in `ACTION_NAMES`) and `("action", "replica")`;
- `(operator, *operands)` for an operator of `OPERATORS`.

`evaluate` gives an expression's value in a model state (the reference every engine's lowering is
held to); `bounds` the least and greatest value it can take under a configuration.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Callable

from kafka_mc.model import Action, Config, State
from kafka_mc.model.replication import ACTION_NAMES

Expr = tuple

# name -> (arguments, value in a state from them, least value, greatest value under a configuration)
_Getter = Callable[..., int]
_Bound = Callable[[Config], int]


def _at(values: tuple, position: int, part: Callable = lambda value: value) -> int:
    return part(values[position]) if 0 <= position < len(values) else 0


def _replica(state: State, replica: int):
    return state.replicas[replica] if 0 <= replica < len(state.replicas) else None


def _of_replica(get: Callable) -> _Getter:
    def value(state: State, replica: int, *rest: int) -> int:
        found = _replica(state, replica)
        return 0 if found is None else int(get(found, *rest))
    return value


def _response(part: Callable) -> Callable:
    return lambda replica: part(replica.response) if replica.response else 0


def _history(name: str) -> _Getter:
    return lambda state, offset, msg: int((offset, msg) in getattr(state, name))


_n = lambda config: config.replicas  # noqa: E731
_m = lambda config: config.messages  # noqa: E731
_e = lambda config: config.elections  # noqa: E731
_masks = lambda config: (1 << config.replicas) - 1  # noqa: E731
_zero = lambda config: 0  # noqa: E731
_one = lambda config: 1  # noqa: E731
_minus_one = lambda config: -1  # noqa: E731

FIELDS: dict[str, tuple[int, _Getter, _Bound, _Bound]] = {
    "leader": (0, lambda s: s.controller.leader, _minus_one, lambda c: c.replicas - 1),
    "controller_epoch": (0, lambda s: s.controller.epoch, _zero, _e),
    "isr": (0, lambda s: s.controller.isr, _zero, _masks),
    "elr": (0, lambda s: s.controller.elr, _zero, _masks),
    "last_known_elr": (0, lambda s: s.controller.last_known_elr, _zero, _masks),
    "unseen": (0, lambda s: s.controller.unseen, _zero, _masks),
    "proposal": (0, lambda s: s.controller.proposal, _zero, _masks),
    "reregistered": (0, lambda s: s.controller.reregistered, _zero, _masks),
    # epochs run to the elections bound of the configuration lowered within (with bumps: `bounding_config`)
    "bumped": (0, lambda s: s.controller.bumped, _zero, lambda c: (1 << (c.elections + 1)) - 1),
    "delays": (0, lambda s: s.delays, _zero, lambda c: c.delays),
    "disk_failures": (0, lambda s: s.disk_failures, _zero, lambda c: c.crashes),
    "written": (0, lambda s: s.written, _zero, _m),
    "crashes": (0, lambda s: s.crashes, _zero, lambda c: c.crashes),
    "acked": (0, lambda s: s.acked, _zero, lambda c: (1 << (c.messages + 1)) - 1),
    "zk_cut": (0, lambda s: s.zk_cut, _zero, _masks),
    "peer_cut": (0, lambda s: s.peer_cut, _zero, _masks),
    "cuts": (0, lambda s: s.cuts, _zero, lambda c: c.partitions),
    "committed": (2, _history("committed"), _zero, _one),
    "consumed": (2, _history("consumed"), _zero, _one),
    "leo": (1, _of_replica(lambda r: len(r.log)), _zero, _m),
    "unflushed": (1, _of_replica(lambda r: r.unflushed), _zero, _m),
    "hw": (1, _of_replica(lambda r: r.hw), _zero, _m),
    "status": (1, _of_replica(lambda r: r.status), _zero, lambda c: 3),
    "role": (1, _of_replica(lambda r: r.role), _zero, lambda c: 4),
    "epoch": (1, _of_replica(lambda r: r.epoch), _minus_one, _e),
    "stale_isr": (1, _of_replica(lambda r: r.stale_isr), _zero, _masks),
    "delayed_fetch": (1, _of_replica(lambda r: r.delayed_fetch), _zero, lambda c: c.messages + 1),
    "delayed_fetch_stale": (1, _of_replica(lambda r: int(r.delayed_fetch_stale)), _zero, _one),
    "leader_id": (1, _of_replica(lambda r: r.leader_id), _minus_one, lambda c: c.replicas - 1),
    "log_msg": (2, _of_replica(lambda r, p: _at(r.log, p, lambda record: record.msg)), _zero, _m),
    "log_epoch": (2, _of_replica(lambda r, p: _at(r.log, p, lambda record: record.epoch)), _zero, _e),
    "cache_count": (1, _of_replica(lambda r: len(r.epochs)), _zero, lambda c: c.elections + 1),
    "cache_epoch": (2, _of_replica(lambda r, p: _at(r.epochs, p, lambda entry: entry[0])), _zero, _e),
    "cache_start": (2, _of_replica(lambda r, p: _at(r.epochs, p, lambda entry: entry[1])), _zero, _m),
    "response": (1, _of_replica(lambda r: int(bool(r.response))), _zero, _one),
    "response_offset": (1, _of_replica(_response(lambda f: f.offset)), _zero, _m),
    "response_hw": (1, _of_replica(_response(lambda f: f.hw)), _zero, _m),
    "response_out_of_range": (1, _of_replica(_response(lambda f: int(f.out_of_range))), _zero, _one),
    "response_count": (1, _of_replica(_response(lambda f: len(f.records))), _zero, _m),
    "response_msg": (2, _of_replica(lambda r, p: _at(r.response.records, p, lambda x: x.msg) if r.response else 0),
                     _zero, _m),
    "response_epoch": (2, _of_replica(lambda r, p: _at(r.response.records, p, lambda x: x.epoch)
                                      if r.response else 0), _zero, _e),
    "has_remote": (1, _of_replica(lambda r: int(bool(r.remote_leos))), _zero, _one),
    "remote_leo": (2, _of_replica(lambda r, other: _at(r.remote_leos, other)), _minus_one, _m),
}

# operator -> (operands, its value from theirs)
OPERATORS: dict[str, tuple[int, Callable[..., int]]] = {
    "add": (2, lambda a, b: a + b),
    "sub": (2, lambda a, b: a - b),
    "mul": (2, lambda a, b: a * b),
    "neg": (1, lambda a: -a),
    "bit_and": (2, lambda a, b: a & b),
    "bit_or": (2, lambda a, b: a | b),
    "bit_xor": (2, lambda a, b: a ^ b),
    "bit_not": (1, lambda a: ~a),
    "shl": (2, lambda a, b: a << b if b >= 0 else 0),
    "shr": (2, lambda a, b: a >> b if b >= 0 else 0),
    "eq": (2, lambda a, b: int(a == b)),
    "ne": (2, lambda a, b: int(a != b)),
    "lt": (2, lambda a, b: int(a < b)),
    "le": (2, lambda a, b: int(a <= b)),
    "and": (2, lambda a, b: int(bool(a) and bool(b))),
    "or": (2, lambda a, b: int(bool(a) or bool(b))),
    "not": (1, lambda a: int(not a)),
    "ite": (3, lambda c, a, b: a if c else b),
    "min": (2, min),
    "max": (2, max),
}
BOOLEAN = frozenset({"eq", "ne", "lt", "le", "and", "or", "not"})

TRUE, FALSE = ("const", 1), ("const", 0)


def const(value: int) -> Expr:
    return ("const", int(value))


def is_const(expr: Expr) -> bool:
    return expr[0] == "const"


def field(which: int, name: str, *arguments: Expr) -> Expr:
    assert FIELDS[name][0] == len(arguments), name
    return ("field", which, name, *arguments)


def op(name: str, *operands: Expr) -> Expr:
    """`(name, *operands)`, folded where the operands decide it."""
    arity, compute = OPERATORS[name]
    assert arity == len(operands), name
    if all(is_const(x) for x in operands):
        return const(compute(*(x[1] for x in operands)))
    if name == "and":
        a, b = operands
        if a == FALSE or b == FALSE:
            return FALSE
        if a == TRUE:
            return truth(b)
        if b == TRUE:
            return truth(a)
        if a == b:
            return truth(a)
    if name == "or":
        a, b = operands
        if a == TRUE or b == TRUE:
            return TRUE
        if a == FALSE:
            return truth(b)
        if b == FALSE:
            return truth(a)
        if a == b:
            return truth(a)
    if name == "not" and operands[0][0] == "not":
        return truth(operands[0][1])
    if name == "ite":
        condition, then, otherwise = operands
        if is_const(condition):
            return then if condition[1] else otherwise
        if then == otherwise:
            return then
        if then == TRUE and otherwise == FALSE and is_boolean(condition):
            return condition
    if name in ("eq", "le") and operands[0] == operands[1]:
        return TRUE
    if name in ("ne", "lt") and operands[0] == operands[1]:
        return FALSE
    return (name, *operands)


def is_boolean(expr: Expr) -> bool:
    return expr[0] in BOOLEAN or (is_const(expr) and expr[1] in (0, 1)) or \
        (expr[0] == "field" and expr[2] in ("committed", "consumed", "response", "response_out_of_range",
                                            "has_remote"))


def choose(condition: Expr, then: Expr, otherwise: Expr) -> Expr:
    """`then` where the truth value `condition` holds, else `otherwise`: a truth value itself when
    both are (Python's `a and b`, `x if c else y` of two bools is a bool, which a property may
    return), else an `ite`."""
    if is_boolean(then) and is_boolean(otherwise):
        return disjunction(op("and", condition, then), op("and", op("not", condition), otherwise))
    return op("ite", condition, then, otherwise)


# Python's bit operators and min/max on two bools give a bool: the truth value operators they are then
BOOLEAN_OF = {"bit_and": "and", "bit_or": "or", "bit_xor": "ne", "min": "and", "max": "or"}


def combine(name: str, left: Expr, right: Expr) -> Expr:
    """The binary operator `name` of two expressions, a truth value when Python's gives a bool."""
    if name in BOOLEAN_OF and is_boolean(left) and is_boolean(right):
        return op(BOOLEAN_OF[name], left, right)
    return op(name, left, right)


def truth(expr: Expr) -> Expr:
    """The expression as a truth value (0 or 1)."""
    return expr if is_boolean(expr) else op("ne", expr, const(0))


def conjunction(*operands: Expr) -> Expr:
    result = TRUE
    for operand in operands:
        result = op("and", result, operand)
    return result


def disjunction(*operands: Expr) -> Expr:
    result = FALSE
    for operand in operands:
        result = op("or", result, operand)
    return result


@dataclass(frozen=True)
class Node:
    """A distinct subexpression: `expr`, the first one met of its shape, and the numbers of the
    nodes that are its arguments (a field's) or operands."""

    expr: Expr
    operands: tuple[int, ...]


def distinct_subexpressions(*roots: Expr) -> tuple[list[Node], list[int]]:
    """Every distinct subexpression of `roots`, each numbered once, after the ones it reads (a node
    shared by several parents once by its identity, equal ones once by their shape), and the number
    of each root: what an engine turns into one instruction (the kernel) or one definition (TLA+)."""
    nodes: list[Node] = []
    numbers: dict[tuple, int] = {}
    by_identity: dict[int, int] = {}
    keep: list[Expr] = []  # the expressions by_identity refers to, alive while it is used

    def number(expr: Expr) -> int:
        known = by_identity.get(id(expr))
        if known is not None:
            return known
        kind = expr[0]
        if kind in ("const", "action"):
            operands: tuple[int, ...] = ()
            key: tuple = expr
        elif kind == "field":
            operands = tuple(number(argument) for argument in expr[3:])
            key = ("field", expr[1], expr[2], *operands)
        else:
            operands = tuple(number(operand) for operand in expr[1:])
            key = (kind, *operands)
        found = numbers.get(key)
        if found is None:
            found = numbers[key] = len(nodes)
            nodes.append(Node(expr, operands))
        by_identity[id(expr)] = found
        keep.append(expr)
        return found

    return nodes, [number(root) for root in roots]


def evaluate(expr: Expr, state: State, action: Action | None = None, next_state: State | None = None) -> int:
    """The value of an expression in a state, or on a step (`which` 1 reads `next_state`); a
    subexpression shared by several parents is evaluated once."""
    values: dict[int, int] = {}

    def value(node: Expr) -> int:
        known = values.get(id(node))
        if known is not None:
            return known
        kind = node[0]
        if kind == "const":
            result = node[1]
        elif kind == "field":
            _, which, name, *arguments = node
            source = next_state if which else state
            if source is None:
                raise ValueError(f"field {name} of the next state read outside a step")
            result = FIELDS[name][1](source, *(value(a) for a in arguments))
        elif kind == "action":
            if action is None:
                raise ValueError("the action read outside a step")
            result = ACTION_NAMES.index(action.name) if node[1] == "name" else action.replica
        elif kind == "ite":
            result = value(node[2]) if value(node[1]) else value(node[3])
        else:
            result = OPERATORS[kind][1](*(value(x) for x in node[1:]))
        values[id(node)] = result
        return result

    return value(expr)


def bounds(expr: Expr, config: Config, known: dict[int, tuple[int, int]] | None = None) -> tuple[int, int]:
    """The least and greatest value the expression can take under `config` (an interval, not tight).
    `known`: the bounds of the nodes met so far, by identity, so that a shared node is bounded once."""
    known = {} if known is None else known
    found = known.get(id(expr))
    if found is None:
        found = known[id(expr)] = _bounds(expr, config, known)
    return found


def _bounds(expr: Expr, config: Config, known: dict[int, tuple[int, int]]) -> tuple[int, int]:
    kind = expr[0]
    if kind == "const":
        return expr[1], expr[1]
    if kind == "field":
        _, _, low, high = FIELDS[expr[2]]
        return low(config), high(config)
    if kind == "action":
        return (0, len(ACTION_NAMES) - 1) if expr[1] == "name" else (0, config.replicas - 1)
    if kind in BOOLEAN:
        return 0, 1
    ranges = [bounds(x, config, known) for x in expr[1:]]
    if kind == "ite":
        return min(ranges[1][0], ranges[2][0]), max(ranges[1][1], ranges[2][1])
    if kind in ("add", "sub", "mul", "min", "max"):
        compute = OPERATORS[kind][1]
        corners = [compute(a, b) for a in ranges[0] for b in ranges[1]]
        return min(corners), max(corners)
    if kind == "neg":
        return -ranges[0][1], -ranges[0][0]
    if kind == "bit_not":
        return -ranges[0][1] - 1, -ranges[0][0] - 1
    if kind == "shr" and ranges[0][0] >= 0:
        return 0, ranges[0][1]
    if kind == "bit_and" and (ranges[0][0] >= 0 or ranges[1][0] >= 0):
        return 0, max(r[1] for r in ranges if r[0] >= 0)
    if kind in ("bit_or", "bit_xor") and ranges[0][0] >= 0 and ranges[1][0] >= 0:
        return 0, (1 << max(ranges[0][1], ranges[1][1]).bit_length()) - 1
    if kind in ("bit_and", "bit_or", "bit_xor"):  # two's complement: within the operands' widest power of two
        width = max(max(-low - 1, high).bit_length() for low, high in ranges)
        return -(1 << width), (1 << width) - 1
    if kind == "shl" and ranges[0][0] >= 0 and 0 <= ranges[1][0] and ranges[1][1] <= 62:
        return 0, ranges[0][1] << ranges[1][1]
    return -(1 << 62), 1 << 62


def size(expr: Expr) -> int:
    """The nodes of an expression, shared ones counted each time."""
    return 1 + sum(size(x) for x in expr[1:] if isinstance(x, tuple))
