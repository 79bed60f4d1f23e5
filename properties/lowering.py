"""A user's property, written once in Python, as an expression every engine can evaluate.

`lower(predicate, config)` reads the function's source (`inspect`, `ast`) and runs it over a
symbolic view of the state: the replicas are known (the configuration fixes how many), every
value read from a state is an expression (`properties.expressions`), a branch on such a value
runs both ways under the branch's condition and the variables it sets are merged, and a loop over
a log, a history or a range runs to the greatest length the configuration allows, each pass under
the condition that it exists. The result is two expressions: when the property fails (an assert
fails or it returns False, as `properties.user.holds` decides) and when it would raise (an index
past a log's end, an attribute of no leader), which the engines report as the property's error.

The Python it takes: the function's parameters `(state)` or `(state, action, next_state)`;
`if`/`elif`/`else`, `for` over `state.replicas`, a log, an epoch cache, a fetch response's
records, `state.committed`/`state.consumed`, `range`, `zip`, `enumerate` and `isr_members`;
`assert`, `return`, `continue`, assignments (tuples unpacked); `and`, `or`, `not`, comparisons,
`+ - * & | ^ ~ << >>`, conditional expressions, `all`/`any`/`sum`/`len`/`min`/`max`/`bool`/`int`/
`abs` over generator expressions, `is None`, `in` over a history, indexing and slicing a log,
the fields of `State`, `Replica`, `Controller`, `Record` and `Action` (and their properties `leo`,
`alive`, `acts_as_leader`, `leader`), names of the function's module (constants such as `LEADER`),
and calls of other plain functions of the user's, lowered in turn. Anything else (`while`,
`break`, `try`, `with`, a call of a function whose source is not Python, a value of a kind the
model does not have) raises `NotLowered` naming the construct and its line.
"""

from __future__ import annotations

import ast
import builtins
import inspect
import itertools
import textwrap
from dataclasses import dataclass, field as dataclass_field
from pathlib import Path
from typing import Any, Callable, Iterator

from kafka_mc.model import Config
from kafka_mc.model.replication import ACTION_NAMES
from kafka_mc.model.state import EXPIRED, FENCED, LEADER, NO_LEADER, UP, isr_members

from .expressions import (
    FALSE, TRUE, Expr, bounds, choose, combine, conjunction, const, disjunction, field, is_boolean, is_const, op,
    truth,
)
from .user import arity

MAX_EXPRESSION = 200_000  # nodes; beyond this a property is refused as too large to lower


class NotLowered(Exception):
    """The property uses Python that cannot be lowered; the message names the construct and line."""


@dataclass(frozen=True)
class Lowered:
    """A property lowered under one configuration: `fails` and `raises` are expressions of the
    state (or the step, when `on_step`), each 1 where the property fails or would raise."""

    name: str
    on_step: bool
    fails: Expr
    raises: Expr


def lower(predicate: Callable, config: Config, name: str | None = None) -> Lowered:
    """The predicate (a function of a state, or of (state, action, next_state)) as expressions;
    NotLowered when it uses Python outside what this module takes."""
    steps = arity(predicate) == 3
    function = _parse(predicate)
    interpreter = _Interpreter(config)
    arguments: list[Any] = [_StateView(0)] + ([_ActionView(), _StateView(1)] if steps else [])
    outcome = interpreter.call(predicate, function, arguments, TRUE)
    fails = disjunction(interpreter.failed, outcome.is_false)  # is_false: under the guards of its returns
    return Lowered(name or predicate.__name__, steps, fails, interpreter.raised)


# ------------------------------------------------------------------------ the symbolic views

@dataclass(frozen=True)
class _StateView:
    which: int


@dataclass(frozen=True)
class _ControllerView:
    which: int


@dataclass(frozen=True)
class _ReplicaView:
    which: int
    index: Expr
    missing: Expr = FALSE  # `state.leader` when there is none: None, not a replica


@dataclass(frozen=True)
class _ActionView:
    pass


@dataclass(frozen=True)
class _Sequence:
    """A log, an epoch cache, a fetch response's records or the view of the others' LEOs: its
    items are read at positions start, start+1, ... below `length` (an expression)."""

    which: int
    kind: str  # "log", "cache", "response", "remote"
    replica: Expr
    length: Expr
    start: Expr = FALSE  # position 0 in the underlying field
    greatest: int = 0  # the most items it can have


@dataclass(frozen=True)
class _Item:
    """One item of a sequence: a Record (msg, epoch), a cache entry (epoch, start) or a LEO."""

    which: int
    kind: str
    replica: Expr
    position: Expr  # in the underlying field

    def parts(self) -> tuple[Expr, ...]:
        if self.kind == "remote":
            return (field(self.which, "remote_leo", self.replica, self.position),)
        names = {"log": ("log_msg", "log_epoch"), "cache": ("cache_epoch", "cache_start"),
                 "response": ("response_msg", "response_epoch")}[self.kind]
        return tuple(field(self.which, name, self.replica, self.position) for name in names)


@dataclass(frozen=True)
class _History:
    which: int
    name: str  # "committed" or "consumed"


@dataclass(frozen=True)
class _Response:
    which: int
    replica: Expr


@dataclass(frozen=True)
class _Maybe:
    """A value, or None where `missing` holds (`next(..., None)`, a function returning None on some paths)."""

    missing: Expr
    value: Any


@dataclass
class _Value:
    """A symbolic integer or truth value."""

    expr: Expr


@dataclass
class _Outcome:
    reaches_end: Expr  # the call returned (or fell off its end) on some path
    value: Any
    is_false: Expr  # the returned value is False


@dataclass
class _Frame:
    """A function's run: the variables, the condition of reaching the current statement, and what
    its returns gave."""

    variables: dict[str, Any]
    globals: dict[str, Any]
    live: Expr
    returned: list[tuple[Expr, Any]] = dataclass_field(default_factory=list)
    continued: list[tuple[Expr, dict]] = dataclass_field(default_factory=list)
    loops: int = 0


_ALLOWED_CALLS = {"all", "any", "sum", "len", "min", "max", "bool", "int", "abs", "range", "zip", "enumerate",
                  "isr_members", "next", "list", "tuple", "reversed"}


_CONCRETE_ITERTOOLS = (itertools.combinations, itertools.permutations, itertools.product,
                       itertools.combinations_with_replacement)


class _Interpreter:
    def __init__(self, config: Config):
        self.config = config
        self.failed: Expr = FALSE
        self.raised: Expr = FALSE
        self.depth = 0
        self.where: list[tuple[str, str]] = []  # the functions being lowered: (name, file)

    # ---------------------------------------------------------------- functions and statements

    def call(self, function: Callable, tree: ast.FunctionDef, arguments: list, live: Expr) -> _Outcome:
        parameters = [a.arg for a in tree.args.posonlyargs + tree.args.args]
        if len(parameters) != len(arguments) or tree.args.vararg or tree.args.kwarg or tree.args.kwonlyargs:
            raise NotLowered(f"{tree.name}: called with {len(arguments)} arguments; only plain positional "
                             "parameters are lowered")
        self.depth += 1
        if self.depth > 20:
            raise NotLowered(f"{tree.name}: recursion is not lowered")
        self.where.append((tree.name, inspect.getsourcefile(function) or "?"))
        closure = inspect.getclosurevars(function)
        scope = {**function.__globals__, **closure.nonlocals}
        frame = _Frame(dict(zip(parameters, arguments)), scope, live)
        self.block(frame, tree.body)
        self.depth -= 1
        self.where.pop()
        # falling off the end returns None
        frame.returned.append((frame.live, None))
        reaches = disjunction(*(guard for guard, _ in frame.returned))
        is_false = disjunction(*(op("and", guard, self.is_false(value)) for guard, value in frame.returned))
        value = self.merge_all(frame.returned, tree)
        return _Outcome(reaches, value, is_false)

    def block(self, frame: _Frame, statements: list[ast.stmt]) -> None:
        for statement in statements:
            if frame.live == FALSE:
                return
            self.statement(frame, statement)

    def statement(self, frame: _Frame, node: ast.stmt) -> None:
        if isinstance(node, ast.Expr):
            if isinstance(node.value, ast.Constant):
                return  # a docstring
            self.expression(frame, node.value)
        elif isinstance(node, ast.Pass):
            return
        elif isinstance(node, ast.Return):
            value = None if node.value is None else self.expression(frame, node.value)
            frame.returned.append((frame.live, value))
            frame.live = FALSE
        elif isinstance(node, ast.Assert):
            condition = self.truth(self.expression(frame, node.test), node)
            self.failed = op("or", self.failed, op("and", frame.live, op("not", condition)))
            frame.live = op("and", frame.live, condition)
        elif isinstance(node, ast.Assign):
            value = self.expression(frame, node.value)
            for target in node.targets:
                self.assign(frame, target, value)
        elif isinstance(node, ast.AugAssign):
            if not isinstance(node.target, ast.Name):
                raise self.refuse(node, "an augmented assignment to something other than a name")
            current = self.expression(frame, ast.Name(node.target.id, ast.Load()))
            value = self.binary(node.op, current, self.expression(frame, node.value), node)
            self.assign(frame, node.target, value)
        elif isinstance(node, ast.AnnAssign) and node.value is not None:
            self.assign(frame, node.target, self.expression(frame, node.value))
        elif isinstance(node, ast.If):
            self.branch(frame, node)
        elif isinstance(node, ast.For):
            self.loop(frame, node)
        elif isinstance(node, ast.Continue):
            frame.continued.append((frame.live, dict(frame.variables)))
            frame.live = FALSE
        else:
            raise self.refuse(node, f"the statement {type(node).__name__.lower()}")

    def branch(self, frame: _Frame, node: ast.If) -> None:
        condition = self.truth(self.expression(frame, node.test), node)
        if is_const(condition):
            self.block(frame, node.body if condition[1] else node.orelse)
            return
        before, live = frame.variables, frame.live
        frame.variables, frame.live = dict(before), op("and", live, condition)
        self.block(frame, node.body)
        then_variables, then_live = frame.variables, frame.live
        frame.variables, frame.live = dict(before), op("and", live, op("not", condition))
        self.block(frame, node.orelse)
        frame.variables = self.merge_variables(then_live, then_variables, frame.variables, node)
        frame.live = op("or", then_live, frame.live)

    def loop(self, frame: _Frame, node: ast.For) -> None:
        if node.orelse:
            raise self.refuse(node, "a for loop's else")
        items = self.items(frame, self.expression(frame, node.iter), node)
        outer_continued = frame.continued
        for present, item in items:
            if frame.live == FALSE:
                break
            before, live = frame.variables, frame.live
            frame.continued = []
            frame.variables, frame.live = dict(before), op("and", live, present)
            self.assign(frame, node.target, item)
            self.block(frame, node.body)
            ended = [(frame.live, frame.variables)] + frame.continued
            through = ended[0]
            for guard, variables in ended[1:]:
                through = (op("or", guard, through[0]), self.merge_variables(guard, variables, through[1], node))
            skipped = op("and", live, op("not", present))
            frame.variables = self.merge_variables(through[0], through[1], before, node)
            frame.live = op("or", through[0], skipped)
        frame.continued = outer_continued

    def assign(self, frame: _Frame, target: ast.expr, value: Any) -> None:
        if isinstance(target, ast.Name):
            frame.variables[target.id] = value
        elif isinstance(target, (ast.Tuple, ast.List)):
            parts = self.unpack(value, len(target.elts), target)
            for element, part in zip(target.elts, parts):
                self.assign(frame, element, part)
        else:
            raise self.refuse(target, f"an assignment to {type(target).__name__.lower()}")

    # ------------------------------------------------------------------------------ merging

    def merge_variables(self, guard: Expr, chosen: dict, other: dict, node: ast.AST) -> dict:
        merged = {}
        for name in chosen.keys() | other.keys():
            if name not in chosen or name not in other:
                # set on one side only: reading it on the other would raise; keep the side that has it
                merged[name] = chosen.get(name, other.get(name))
                continue
            merged[name] = self.merge(guard, chosen[name], other[name], node, name)
        return merged

    def merge_all(self, returned: list[tuple[Expr, Any]], node: ast.AST) -> Any:
        live = [(guard, value) for guard, value in returned if guard != FALSE]
        if not live:
            return None
        value = live[-1][1]
        for guard, other in reversed(live[:-1]):
            value = self.merge(guard, other, value, node, "the returned value")
        return value

    def merge(self, guard: Expr, chosen: Any, other: Any, node: ast.AST, name: str) -> Any:
        if guard == TRUE or chosen is other or (type(chosen) is type(other) and chosen == other
                                                 and not isinstance(chosen, _Value)):
            return chosen
        if guard == FALSE:
            return other
        if self.scalar(chosen) and self.scalar(other):
            return _Value(choose(guard, self.number(chosen, node), self.number(other, node)))
        if isinstance(chosen, _ReplicaView) and isinstance(other, _ReplicaView) and chosen.which == other.which:
            return _ReplicaView(chosen.which, op("ite", guard, chosen.index, other.index),
                                op("ite", guard, chosen.missing, other.missing))
        if chosen is None and isinstance(other, _ReplicaView):
            return _ReplicaView(other.which, other.index, op("or", guard, other.missing))
        if other is None and isinstance(chosen, _ReplicaView):
            return _ReplicaView(chosen.which, chosen.index, op("or", op("not", guard), chosen.missing))
        if isinstance(chosen, _Item) and isinstance(other, _Item) and (chosen.which, chosen.kind) == (other.which,
                                                                                                    other.kind):
            return _Item(chosen.which, chosen.kind, op("ite", guard, chosen.replica, other.replica),
                         op("ite", guard, chosen.position, other.position))
        if isinstance(chosen, _Sequence) and isinstance(other, _Sequence) and \
                (chosen.which, chosen.kind, chosen.greatest) == (other.which, other.kind, other.greatest):
            return _Sequence(chosen.which, chosen.kind, op("ite", guard, chosen.replica, other.replica),
                             op("ite", guard, chosen.length, other.length),
                             op("ite", guard, chosen.start, other.start), chosen.greatest)
        if isinstance(chosen, _Response) and isinstance(other, _Response) and chosen.which == other.which:
            return _Response(chosen.which, op("ite", guard, chosen.replica, other.replica))
        if isinstance(chosen, tuple) and isinstance(other, tuple) and len(chosen) == len(other):
            return tuple(self.merge(guard, a, b, node, name) for a, b in zip(chosen, other))
        if chosen is None or other is None or isinstance(chosen, _Maybe) or isinstance(other, _Maybe):
            missing = [const(v is None) if not isinstance(v, _Maybe) else v.missing for v in (chosen, other)]
            values = [v.value if isinstance(v, _Maybe) else v for v in (chosen, other)]
            if values[0] is None:
                value = values[1]
            elif values[1] is None:
                value = values[0]
            else:
                value = self.merge(guard, values[0], values[1], node, name)
            return _Maybe(op("ite", guard, missing[0], missing[1]), value)
        raise self.refuse(node, f"{name} holding {self.describe(chosen)} on one path and "
                                f"{self.describe(other)} on another")

    @staticmethod
    def scalar(value: Any) -> bool:
        return isinstance(value, (_Value, bool, int))

    @staticmethod
    def describe(value: Any) -> str:
        if isinstance(value, _Value):
            return "a number"
        if isinstance(value, (_ReplicaView, _StateView, _Sequence, _Item, _History)):
            return f"a {type(value).__name__.strip('_').lower()}"
        return f"{type(value).__name__} {value!r}"

    # --------------------------------------------------------------------------- expressions

    def expression(self, frame: _Frame, node: ast.expr) -> Any:
        if isinstance(node, ast.Constant):
            return node.value
        if isinstance(node, ast.Name):
            return self.name(frame, node)
        if isinstance(node, ast.Attribute):
            return self.attribute(frame, self.present(frame, self.expression(frame, node.value)), node.attr, node)
        if isinstance(node, ast.BoolOp):
            return self.boolean(frame, node)
        if isinstance(node, ast.UnaryOp):
            operand = self.expression(frame, node.operand)
            if isinstance(node.op, ast.Not):
                return _Value(op("not", self.truth(operand, node)))
            if isinstance(node.op, ast.USub):
                return _Value(op("neg", self.number(operand, node)))
            if isinstance(node.op, ast.Invert):
                return _Value(op("bit_not", self.number(operand, node)))
            return operand
        if isinstance(node, ast.BinOp):
            return self.binary(node.op, self.expression(frame, node.left), self.expression(frame, node.right), node)
        if isinstance(node, ast.Compare):
            return self.compare(frame, node)
        if isinstance(node, ast.IfExp):
            condition = self.truth(self.expression(frame, node.test), node)
            if is_const(condition):
                return self.expression(frame, node.body if condition[1] else node.orelse)
            live = frame.live
            frame.live = op("and", live, condition)
            then = self.expression(frame, node.body)
            frame.live = op("and", live, op("not", condition))
            otherwise = self.expression(frame, node.orelse)
            frame.live = live
            return self.merge(condition, then, otherwise, node, "a conditional expression")
        if isinstance(node, ast.Tuple):
            return tuple(self.expression(frame, element) for element in node.elts)
        if isinstance(node, ast.Subscript):
            return self.subscript(frame, node)
        if isinstance(node, ast.Call):
            return self.call_expression(frame, node)
        if isinstance(node, ast.JoinedStr):
            return "<text>"  # an assert's message: never part of a verdict
        if isinstance(node, ast.GeneratorExp):
            return self.generator(frame, node)
        raise self.refuse(node, f"the expression {type(node).__name__.lower()}")

    def name(self, frame: _Frame, node: ast.Name) -> Any:
        if node.id in frame.variables:
            return frame.variables[node.id]
        if node.id in frame.globals:
            return frame.globals[node.id]
        if hasattr(builtins, node.id):
            return getattr(builtins, node.id)
        raise self.refuse(node, f"the name {node.id!r}, which is not defined")

    def boolean(self, frame: _Frame, node: ast.BoolOp) -> Any:
        """`a and b` / `a or b`: b is read only where a does not decide (so its errors count only there);
        the value is a truth value, or the operands' common value where they are not truth values."""
        conjunctive = isinstance(node.op, ast.And)
        live = frame.live
        decided: list[tuple[Expr, Any]] = []
        rest = TRUE  # the condition that every operand so far let evaluation go on
        for position, operand in enumerate(node.values):
            frame.live = op("and", live, rest)
            value = self.expression(frame, operand)
            if position == len(node.values) - 1:
                decided.append((rest, value))
                break
            condition = self.truth(value, node)
            stops = op("not", condition) if conjunctive else condition
            decided.append((op("and", rest, stops), value))
            rest = op("and", rest, op("not", stops))
            if rest == FALSE:
                break
        frame.live = live
        result = decided[-1][1]
        for guard, value in reversed(decided[:-1]):
            if self.scalar(value) and self.scalar(result):
                result = _Value(choose(guard, self.number(value, node), self.number(result, node)))
            else:
                result = self.merge(guard, value, result, node, "an and/or")
        return result

    def binary(self, operator: ast.operator, left: Any, right: Any, node: ast.AST) -> Any:
        names = {ast.Add: "add", ast.Sub: "sub", ast.Mult: "mul", ast.BitAnd: "bit_and", ast.BitOr: "bit_or",
                 ast.BitXor: "bit_xor", ast.LShift: "shl", ast.RShift: "shr"}
        name = names.get(type(operator))
        if name is None:
            raise self.refuse(node, f"the operator {type(operator).__name__}")
        if isinstance(left, tuple) and isinstance(right, tuple) and name == "add":
            return left + right
        return _Value(combine(name, self.number(left, node), self.number(right, node)))

    def compare(self, frame: _Frame, node: ast.Compare) -> Any:
        left = self.expression(frame, node.left)
        result = TRUE
        for operator, comparator in zip(node.ops, node.comparators):
            right = self.expression(frame, comparator)
            result = op("and", result, self.comparison(operator, left, right, node))
            left = right
        return _Value(result)

    def comparison(self, operator: ast.cmpop, left: Any, right: Any, node: ast.AST) -> Expr:
        if isinstance(operator, (ast.Is, ast.IsNot)):
            if right is not None and left is not None:
                raise self.refuse(node, "`is` other than `is None`")
            value = right if left is None else left
            missing = self.missing(value)
            return missing if isinstance(operator, ast.Is) else op("not", missing)
        if isinstance(operator, (ast.In, ast.NotIn)):
            found = self.membership(left, right, node)
            return found if isinstance(operator, ast.In) else op("not", found)
        if isinstance(operator, (ast.Eq, ast.NotEq)):
            equal = self.equal(left, right, node)
            return equal if isinstance(operator, ast.Eq) else op("not", equal)
        names = {ast.Lt: ("lt", False), ast.LtE: ("le", False), ast.Gt: ("lt", True), ast.GtE: ("le", True)}
        name, swapped = names[type(operator)]
        a, b = self.number(left, node), self.number(right, node)
        return op(name, b, a) if swapped else op(name, a, b)

    def equal(self, left: Any, right: Any, node: ast.AST) -> Expr:
        if isinstance(left, str) or isinstance(right, str):
            text, other = (left, right) if isinstance(left, str) else (right, left)
            if isinstance(other, _Value) and other.expr == ("action", "name"):
                return op("eq", other.expr, const(ACTION_NAMES.index(text))) if text in ACTION_NAMES else FALSE
            if isinstance(other, str):
                return const(text == other)
            raise self.refuse(node, f"comparing the text {text!r} with {self.describe(other)}")
        if left is None or right is None:
            return self.missing(right if left is None else left)
        if isinstance(left, _Maybe) or isinstance(right, _Maybe):
            raise self.refuse(node, "comparing a value that may be None other than with `is None`")
        if isinstance(left, _Sequence) and isinstance(right, _Sequence):
            return self.sequences_equal(left, right, node)
        if isinstance(left, (_Item, tuple)) or isinstance(right, (_Item, tuple)):
            a, b = self.unpack(left, None, node), self.unpack(right, None, node)
            if len(a) != len(b):
                return FALSE
            return conjunction(*(self.equal(x, y, node) for x, y in zip(a, b)))
        if isinstance(left, _ReplicaView) and isinstance(right, _ReplicaView):
            if left.which != right.which:
                raise self.refuse(node, "comparing replicas of two states (compare their fields)")
            return op("eq", left.index, right.index)
        return op("eq", self.number(left, node), self.number(right, node))

    def sequences_equal(self, left: _Sequence, right: _Sequence, node: ast.AST) -> Expr:
        same = op("eq", left.length, right.length)
        for k in range(min(left.greatest, right.greatest)):
            present = op("lt", const(k), left.length)
            a = _Item(left.which, left.kind, left.replica, op("add", left.start, const(k)))
            b = _Item(right.which, right.kind, right.replica, op("add", right.start, const(k)))
            same = op("and", same, op("or", op("not", present), self.equal(a, b, node)))
        return same

    def membership(self, element: Any, container: Any, node: ast.AST) -> Expr:
        if isinstance(container, _History):
            offset, msg = self.unpack(element, 2, node)
            return field(container.which, container.name, self.number(offset, node), self.number(msg, node))
        if isinstance(container, (tuple, list)):
            return disjunction(*(self.equal(element, item, node) for item in container))
        return disjunction(*(op("and", present, self.equal(element, item, node))
                             for present, item in self.items(None, container, node)))

    def subscript(self, frame: _Frame, node: ast.Subscript) -> Any:
        container = self.present(frame, self.expression(frame, node.value))
        if isinstance(node.slice, ast.Slice):
            if node.slice.step is not None or not isinstance(container, _Sequence):
                raise self.refuse(node, "a slice other than [a:b] of a log, cache or response")
            low = FALSE if node.slice.lower is None else self.number(self.expression(frame, node.slice.lower), node)
            high = container.length if node.slice.upper is None else \
                self.number(self.expression(frame, node.slice.upper), node)
            low, high = self.clip(low, container.length), self.clip(high, container.length)
            high = op("max", low, high)
            return _Sequence(container.which, container.kind, container.replica, op("sub", high, low),
                             op("add", container.start, low), container.greatest)
        index = self.expression(frame, node.slice)
        if isinstance(container, (tuple, list)):
            if isinstance(index, int):
                return container[index]
            position = self.number(index, node)
            if all(self.scalar(item) for item in container):
                result = const(0)
                for k, item in enumerate(container):
                    result = op("ite", op("eq", position, const(k)), self.number(item, node), result)
                self.raise_where(frame, op("not", op("and", op("le", const(0), position),
                                                      op("lt", position, const(len(container))))))
                return _Value(result)
            raise self.refuse(node, "indexing a tuple of non-numbers at a position only known in a state")
        if isinstance(container, _Sequence):
            position = self.number(index, node)
            position = op("ite", op("lt", position, const(0)), op("add", position, container.length), position)
            self.raise_where(frame, op("not", op("and", op("le", const(0), position),
                                                  op("lt", position, container.length))))
            item = _Item(container.which, container.kind, container.replica, op("add", container.start, position))
            return _Value(item.parts()[0]) if container.kind == "remote" else item
        if isinstance(container, _Item):
            parts = container.parts()
            if not isinstance(index, int) or not -len(parts) <= index < len(parts):
                raise self.refuse(node, "indexing a record or cache entry other than by 0 or 1")
            return _Value(parts[index])
        raise self.refuse(node, f"indexing {self.describe(container)}")

    @staticmethod
    def clip(value: Expr, length: Expr) -> Expr:
        """A slice bound as Python takes it: negative from the end, then within 0..length."""
        value = op("ite", op("lt", value, const(0)), op("add", value, length), value)
        return op("min", op("max", value, const(0)), length)

    def generator(self, frame: _Frame, node: ast.GeneratorExp) -> list[tuple[Expr, Any]]:
        """A generator expression as the (present, value) pairs it yields."""
        results: list[tuple[Expr, Any]] = []
        outer = dict(frame.variables)
        live = frame.live

        def produce(level: int, present: Expr) -> None:
            if present == FALSE:
                return
            if level == len(node.generators):
                frame.live = op("and", live, present)
                results.append((present, self.expression(frame, node.elt)))
                return
            comprehension = node.generators[level]
            if comprehension.is_async:
                raise self.refuse(node, "an async comprehension")
            frame.live = op("and", live, present)
            for item_present, item in self.items(frame, self.expression(frame, comprehension.iter), node):
                saved = dict(frame.variables)
                self.assign(frame, comprehension.target, item)
                condition = op("and", present, item_present)
                for test in comprehension.ifs:
                    frame.live = op("and", live, condition)
                    condition = op("and", condition, self.truth(self.expression(frame, test), node))
                produce(level + 1, condition)
                frame.variables = saved

        produce(0, TRUE)
        frame.variables, frame.live = outer, live
        return results

    # --------------------------------------------------------------------------------- calls

    def call_expression(self, frame: _Frame, node: ast.Call) -> Any:
        if node.keywords and not (isinstance(node.func, ast.Name) and node.func.id in ("min", "max", "sum")):
            raise self.refuse(node, "a call with keyword arguments")
        function = self.expression(frame, node.func)
        arguments = [self.expression(frame, argument) for argument in node.args]
        if any(isinstance(a, ast.Starred) for a in node.args):
            raise self.refuse(node, "a call with *arguments")
        name = getattr(function, "__name__", None)
        if function is isr_members:
            mask = self.number(arguments[0], node)
            return [(truth(op("bit_and", op("shr", mask, const(r)), const(1))), _Value(const(r)))
                    for r in range(self.config.replicas)]
        if function in _CONCRETE_ITERTOOLS:
            concrete = [self.items(frame, argument, node) if not isinstance(argument, int) else argument
                        for argument in arguments]
            if any(not isinstance(a, int) and any(present != TRUE for present, _ in a) for a in concrete):
                raise self.refuse(node, f"{name}() over items that may be absent")
            values = [a if isinstance(a, int) else [item for _, item in a] for a in concrete]
            return tuple(function(*values))
        if getattr(builtins, name or "", None) is function and name in _ALLOWED_CALLS:
            return self.builtin(frame, name, arguments, node)
        if inspect.isfunction(function):
            try:
                tree = _parse(function)
            except NotLowered as error:
                raise self.refuse(node, str(error)) from None
            outcome = self.call(function, tree, arguments, frame.live)
            frame.live = op("and", frame.live, outcome.reaches_end)  # an assert failed in it: the property failed
            return outcome.value
        raise self.refuse(node, f"a call of {name or function!r}")

    def builtin(self, frame: _Frame, name: str, arguments: list, node: ast.AST) -> Any:
        if name in ("bool", "int", "abs") and len(arguments) == 1:
            value = arguments[0]
            if name == "bool":
                return _Value(self.truth(value, node))
            number = self.number(value, node)
            return _Value(op("ite", op("lt", number, const(0)), op("neg", number), number) if name == "abs"
                          else number)
        if name in ("range", "zip", "enumerate", "list", "tuple", "reversed"):
            return self.iterable(name, arguments, node)
        if name == "len" and len(arguments) == 1:
            value = arguments[0]
            if isinstance(value, _Sequence):
                return _Value(value.length)
            if isinstance(value, tuple):
                return len(value)
            items = self.items(frame, value, node)
            return _Value(self.sum(present for present, _ in items))
        if name in ("all", "any") and len(arguments) == 1:
            items = self.items(frame, arguments[0], node)
            if name == "all":
                return _Value(conjunction(*(op("or", op("not", p), self.truth(v, node)) for p, v in items)))
            return _Value(disjunction(*(op("and", p, self.truth(v, node)) for p, v in items)))
        if name == "sum" and len(arguments) in (1, 2):
            items = self.items(frame, arguments[0], node)
            start = self.number(arguments[1], node) if len(arguments) == 2 else const(0)
            return _Value(op("add", start, self.sum(op("ite", p, self.number(v, node), const(0))
                                                    for p, v in items)))
        if name in ("min", "max") and len(arguments) == 1:  # over an iterable; ValueError when it is empty
            items = self.items(frame, arguments[0], node)
            result, seen = const(0), FALSE
            for present, value in items:
                number = self.number(value, node)
                folded = op("ite", seen, op(name, result, number), number)
                result, seen = op("ite", present, folded, result), op("or", seen, present)
            self.raise_where(frame, op("not", seen))
            return _Value(result)
        if name in ("min", "max") and len(arguments) >= 2:
            result = self.number(arguments[0], node)
            for other in arguments[1:]:
                result = combine(name, result, self.number(other, node))
            return _Value(result)
        if name == "next" and len(arguments) in (1, 2):
            items = self.items(frame, arguments[0], node)
            if len(arguments) == 1:  # StopIteration where no item is present
                self.raise_where(frame, conjunction(*(op("not", present) for present, _ in items)))
                if not items:
                    return None
                result = items[-1][1]
                for present, value in reversed(items[:-1]):
                    result = self.merge(present, value, result, node, "next()")
                return result
            result = arguments[1]
            for present, value in reversed(items):
                result = self.merge(present, value, result, node, "next()")
            return result
        raise self.refuse(node, f"{name}() with these arguments")

    @staticmethod
    def sum(values: Iterator[Expr]) -> Expr:
        total = const(0)
        for value in values:
            total = op("add", total, value)
        return total

    def iterable(self, name: str, arguments: list, node: ast.AST) -> list[tuple[Expr, Any]]:
        if name == "range":
            numbers = [self.number(a, node) for a in arguments]
            if len(numbers) == 1:
                numbers = [const(0)] + numbers
            if len(numbers) != 2:
                raise self.refuse(node, "range() with a step")
            low, high = numbers
            least, _ = bounds(low, self.config)
            _, greatest = bounds(high, self.config)
            if greatest - least > 64:
                raise self.refuse(node, "range() over values with no small bound in this configuration")
            return [(conjunction(op("le", low, const(k)), op("lt", const(k), high)), _Value(const(k)))
                    for k in range(least, greatest)]
        if name == "zip":
            lists = [self.items(None, a, node) for a in arguments]
            return [(conjunction(*(p for p, _ in parts)), tuple(v for _, v in parts)) for parts in zip(*lists)]
        if name == "enumerate":
            items = self.items(None, arguments[0], node)
            if isinstance(arguments[0], (_Sequence, tuple, list)) or all(p == TRUE for p, _ in items):
                return [(p, (_Value(const(k)), v)) for k, (p, v) in enumerate(items)]
            raise self.refuse(node, "enumerate() over items that may be absent in between")
        if name in ("list", "tuple"):
            return self.items(None, arguments[0], node)
        if name == "reversed":
            return list(reversed(self.items(None, arguments[0], node)))
        raise self.refuse(node, f"{name}()")

    def items(self, frame: _Frame | None, value: Any, node: ast.AST) -> list[tuple[Expr, Any]]:
        """What iterating over the value yields, as (present, item) pairs in order."""
        if isinstance(value, list):
            return value  # a generator expression, range, zip, ...: already (present, item) pairs
        if isinstance(value, tuple):
            return [(TRUE, item) for item in value]
        if isinstance(value, _Sequence):
            result = []
            for k in range(value.greatest):
                position = op("add", value.start, const(k))
                item = _Item(value.which, value.kind, value.replica, position)
                result.append((op("lt", const(k), value.length),
                               _Value(item.parts()[0]) if value.kind == "remote" else item))
            return result
        if isinstance(value, _History):
            messages = self.config.messages
            return [(field(value.which, value.name, const(o), const(m)), (_Value(const(o)), _Value(const(m))))
                    for o in range(messages) for m in range(1, messages + 1)]
        raise self.refuse(node, f"iterating over {self.describe(value)}")

    # ------------------------------------------------------------------------- attributes

    def attribute(self, frame: _Frame, value: Any, name: str, node: ast.AST) -> Any:
        if isinstance(value, _StateView):
            return self.state_attribute(frame, value, name, node)
        if isinstance(value, _ControllerView):
            names = {"leader": "leader", "epoch": "controller_epoch", "isr": "isr", "elr": "elr",
                     "last_known_elr": "last_known_elr", "unseen": "unseen", "proposal": "proposal",
                     "reregistered": "reregistered", "bumped": "bumped"}
            if name not in names:
                raise self.refuse(node, f"the controller's field {name!r}")
            return _Value(field(value.which, names[name]))
        if isinstance(value, _ReplicaView):
            return self.replica_attribute(frame, value, name, node)
        if isinstance(value, _Item):
            if value.kind not in ("log", "response") or name not in ("msg", "epoch"):
                raise self.refuse(node, f"the field {name!r} of a {value.kind} item")
            return _Value(value.parts()[("msg", "epoch").index(name)])
        if isinstance(value, _Response):
            names = {"offset": "response_offset", "hw": "response_hw", "out_of_range": "response_out_of_range"}
            self.raise_where(frame, op("not", field(value.which, "response", value.replica)))
            if name == "records":
                return _Sequence(value.which, "response", value.replica,
                                 field(value.which, "response_count", value.replica), FALSE, self.config.messages)
            if name not in names:
                raise self.refuse(node, f"the fetch response's field {name!r}")
            return _Value(field(value.which, names[name], value.replica))
        if isinstance(value, _ActionView):
            if name not in ("name", "replica"):
                raise self.refuse(node, f"the action's field {name!r}")
            return _Value(("action", name))
        if inspect.ismodule(value) or isinstance(value, type):
            return getattr(value, name)
        raise self.refuse(node, f"the attribute {name!r} of {self.describe(value)}")

    def state_attribute(self, frame: _Frame, state: _StateView, name: str, node: ast.AST) -> Any:
        which = state.which
        if name == "replicas":
            return tuple(_ReplicaView(which, const(r)) for r in range(self.config.replicas))
        if name == "controller":
            return _ControllerView(which)
        if name == "leader":
            leader = field(which, "leader")
            return _ReplicaView(which, leader, op("eq", leader, const(NO_LEADER)))
        if name in ("committed", "consumed"):
            return _History(which, name)
        if name in ("written", "crashes", "acked", "zk_cut", "peer_cut", "cuts", "delays", "disk_failures"):
            return _Value(field(which, name))
        raise self.refuse(node, f"the state's field {name!r}")

    def replica_attribute(self, frame: _Frame, replica: _ReplicaView, name: str, node: ast.AST) -> Any:
        self.raise_where(frame, replica.missing)
        which, index = replica.which, replica.index
        status = field(which, "status", index)
        if name in ("hw", "unflushed", "status", "role", "epoch", "stale_isr", "leo", "delayed_fetch",
                    "delayed_fetch_stale", "leader_id"):
            return _Value(field(which, name, index))
        if name == "alive":
            return _Value(op("or", op("eq", status, const(UP)), op("eq", status, const(EXPIRED))))
        if name == "acts_as_leader":
            role = field(which, "role", index)
            alive = op("or", op("eq", status, const(UP)), op("eq", status, const(EXPIRED)))
            return _Value(op("and", op("or", op("eq", role, const(LEADER)), op("eq", role, const(FENCED))), alive))
        if name == "log":
            return _Sequence(which, "log", index, field(which, "leo", index), FALSE, self.config.messages)
        if name == "epochs":
            return _Sequence(which, "cache", index, field(which, "cache_count", index), FALSE,
                             self.config.elections + 1)
        if name == "remote_leos":
            length = op("ite", field(which, "has_remote", index), const(self.config.replicas), const(0))
            return _Sequence(which, "remote", index, length, FALSE, self.config.replicas)
        if name == "response":
            return _Response(which, index)
        raise self.refuse(node, f"the replica's field {name!r}")

    # ------------------------------------------------------------------------- conversions

    @staticmethod
    def missing(value: Any) -> Expr:
        """Where the value is None."""
        if isinstance(value, (_ReplicaView, _Maybe)):
            return value.missing
        return const(value is None)

    def present(self, frame: _Frame | None, value: Any) -> Any:
        """The value of a _Maybe, where using it when it is None raises (as Python's None would)."""
        if isinstance(value, _Maybe):
            self.raise_where(frame, value.missing)
            return value.value
        return value

    def raise_where(self, frame: _Frame | None, condition: Expr) -> None:
        """The property raises where `condition` holds on a live path, which ends there."""
        live = TRUE if frame is None else frame.live
        self.raised = op("or", self.raised, op("and", live, condition))
        if frame is not None:
            frame.live = op("and", live, op("not", condition))

    def number(self, value: Any, node: ast.AST) -> Expr:
        if isinstance(value, _Value):
            return value.expr
        if isinstance(value, bool) or isinstance(value, int):
            return const(value)
        raise self.refuse(node, f"{self.describe(value)} used as a number")

    def truth(self, value: Any, node: ast.AST) -> Expr:
        if isinstance(value, _Value):
            return truth(value.expr)
        if value is None:
            return FALSE
        if isinstance(value, (bool, int, str)):
            return const(bool(value))
        if isinstance(value, _ReplicaView):
            return op("not", value.missing)
        if isinstance(value, _Maybe):
            return op("and", op("not", value.missing), self.truth(value.value, node))
        if isinstance(value, _Sequence):
            return op("lt", const(0), value.length)
        if isinstance(value, _Response):
            return field(value.which, "response", value.replica)
        if isinstance(value, (_Item, _StateView, _ControllerView, _ActionView)):
            return TRUE
        if isinstance(value, tuple):
            return const(bool(value))
        if isinstance(value, list):
            return disjunction(*(present for present, _ in value))
        raise self.refuse(node, f"the truth of {self.describe(value)}")

    def is_false(self, value: Any) -> Expr:
        """Whether a returned value `is False` (only a truth value can be; 0 is not False)."""
        if value is False:
            return TRUE
        if isinstance(value, _Value):
            return _is_false(value.expr)
        return FALSE

    def unpack(self, value: Any, count: int | None, node: ast.AST) -> tuple:
        if isinstance(value, _Item):
            parts = value.parts()
            result: tuple = tuple(_Value(part) for part in parts)
        elif isinstance(value, tuple):
            result = value
        else:
            raise self.refuse(node, f"unpacking {self.describe(value)}")
        if count is not None and len(result) != count:
            raise self.refuse(node, f"unpacking {len(result)} values into {count}")
        return result

    def refuse(self, node: ast.AST, what: str) -> NotLowered:
        """The error for a construct: what it is, and where (file, line, function; the functions that
        called it, when the property called others)."""
        line = getattr(node, "lineno", None)
        name, file = self.where[-1] if self.where else ("?", "?")
        calls = " <- ".join(caller for caller, _ in reversed(self.where[:-1]))
        place = f"{Path(file).name}, line {line}, in {name}" + (f", called from {calls}" if calls else "")
        return NotLowered(f"{what} cannot be lowered ({place})")


def _is_false(expr: Expr) -> Expr:
    """Where a value is False: a truth value where it is 0; a choice between a truth value and a
    number (`flag and count`) where it chooses a truth value that is 0."""
    if expr[0] == "ite":
        condition, then, otherwise = expr[1:]
        return disjunction(op("and", condition, _is_false(then)), op("and", op("not", condition), _is_false(otherwise)))
    return op("not", expr) if is_boolean(expr) else FALSE


def _parse(function: Callable) -> ast.FunctionDef:
    try:
        source = textwrap.dedent(inspect.getsource(function))
        lines, first = inspect.getsourcelines(function)
    except (OSError, TypeError):
        raise NotLowered(f"{getattr(function, '__name__', function)}: its source cannot be read") from None
    tree = ast.parse(source)
    ast.increment_lineno(tree, first - 1)
    definitions = [node for node in tree.body if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef))]
    if not definitions or isinstance(definitions[0], ast.AsyncFunctionDef):
        raise NotLowered(f"{getattr(function, '__name__', function)}: only a def function is lowered "
                         "(not a lambda or an async function)")
    return definitions[0]
