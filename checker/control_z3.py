"""Bounded model checking of the controller model (`control/controller.py`) with Z3.

The controller model's transition relation, encoded symbolically: one copy of the state per
step (the /controller holder, /controller_epoch, a session flag, and the acting, reading and
obeyed epochs per broker, a flag per possible LeaderAndIsr request (epoch, sender, target), the
expiries so far) and one action variable per step, an index into `action_instances`. Each
action is a guard and an effect that gives every variable of the next state as a function of
this one, so the relation is deterministic per action, as the model is.
`tests/test_control_models.py` holds it equal to the model on every reachable state of small
configurations (the same actions enabled, the same successors).

`bounded_check` unrolls the relation depth by depth on one solver and asks, at each depth, for
a violation of each invariant not yet violated (the first depth that answers is the shortest
counterexample) and for each witness not yet reached. Every solver model is decoded into a
`SystemTrace` and replayed through the explicit model; a disagreement is an internal error.
No violation up to the bound is reported as exactly that: the run is incomplete.
"""

from __future__ import annotations

import time
from itertools import product

import z3

from kafka_mc.control.controller import NONE, ControllerModel, ControllerState
from kafka_mc.control.system import ALWAYS, ControlAction

from .bfs import Budget, search_result, stop_reason
from .result import Stats, SystemTrace

ENGINE = "z3"


class EncodingMismatch(RuntimeError):
    """A solver model the explicit model does not replay: the encoding is wrong."""


class SymController:
    """The symbolic state of one step."""

    def __init__(self, brokers: int, epochs: int, name: str):
        self.holder = z3.Int(f"{name}_holder")
        self.zk_epoch = z3.Int(f"{name}_zk_epoch")
        self.expirations = z3.Int(f"{name}_expirations")
        self.sessions = [z3.Bool(f"{name}_session_{b}") for b in range(brokers)]
        self.acting = [z3.Int(f"{name}_acting_{b}") for b in range(brokers)]
        self.reading = [z3.Int(f"{name}_reading_{b}") for b in range(brokers)]
        self.obeyed = [z3.Int(f"{name}_obeyed_{b}") for b in range(brokers)]
        self.flight = {(e, s, t): z3.Bool(f"{name}_flight_{e}_{s}_{t}")
                       for e, s, t in product(range(1, epochs + 1), range(brokers), range(brokers))}

    def variables(self) -> list:
        return [self.holder, self.zk_epoch, self.expirations, *self.sessions, *self.acting, *self.reading,
                *self.obeyed, *self.flight.values()]


class ControllerEncoding:
    """The controller model's initial state, actions and properties as Z3 formulas."""

    def __init__(self, model: ControllerModel):
        self.model = model
        config = model.config
        self.brokers = config.brokers
        self.epochs = config.expirations + 1  # one race at the start and one after each expiry
        brokers = range(self.brokers)
        self.action_instances: list[ControlAction] = [
            *(ControlAction("BrokerWinsElection" if config.atomic_epoch else "BrokerCreatesControllerZnode", (b,))
              for b in brokers),
            *(ControlAction("ControllerWritesEpoch", (b,)) for b in brokers if not config.atomic_epoch),
            *(ControlAction("ControllerResign", (b,)) for b in brokers),
            *(ControlAction("ControllerSendLeaderAndIsr", (b, t)) for b in brokers for t in brokers),
            *(ControlAction("BrokerHandleLeaderAndIsr", (t, e, s))
              for t in brokers for e in range(1, self.epochs + 1) for s in brokers),
            *(ControlAction("SessionExpire", (b,)) for b in brokers),
            *(ControlAction("BrokerReconnect", (b,)) for b in brokers),
        ]

    def fresh(self, name: str) -> SymController:
        return SymController(self.brokers, self.epochs, name)

    def initial(self, s: SymController) -> z3.BoolRef:
        return z3.And(s.holder == NONE, s.zk_epoch == 0, s.expirations == 0, *s.sessions,
                      *(v == 0 for v in (*s.acting, *s.reading, *s.obeyed)),
                      *(z3.Not(f) for f in s.flight.values()))

    def transition(self, s: SymController, action: z3.ArithRef, n: SymController) -> z3.BoolRef:
        """`action` (an index into `action_instances`) leads from `s` to `n`."""
        return z3.Or(*(z3.And(action == index, *self.step(instance, s, n))
                       for index, instance in enumerate(self.action_instances)))

    def step(self, instance: ControlAction, s: SymController, n: SymController) -> list:
        """The guard and the effect of one action instance: every variable of `n` is defined."""
        updates: dict = {}
        guard: list = []
        name, args = instance
        if name in ("BrokerWinsElection", "BrokerCreatesControllerZnode"):
            (b,) = args
            guard = [s.holder == NONE, s.sessions[b], s.acting[b] == 0, s.reading[b] == 0]
            updates[n.holder] = z3.IntVal(b)
            if name == "BrokerWinsElection":
                self._start_acting(s, n, b, s.zk_epoch + 1, updates)
            else:
                updates[n.reading[b]] = s.zk_epoch + 1
        elif name == "ControllerWritesEpoch":
            (b,) = args
            guard = [s.reading[b] != 0]
            self._start_acting(s, n, b, s.reading[b], updates)
        elif name == "ControllerResign":
            (b,) = args
            guard = [s.acting[b] != 0, s.holder != b]
            updates[n.acting[b]] = z3.IntVal(0)
        elif name == "ControllerSendLeaderAndIsr":
            b, t = args
            pending = z3.Or(*(z3.And(s.acting[b] == e, s.flight[(e, b, t)]) for e in range(1, self.epochs + 1)))
            guard = [s.acting[b] != 0, z3.Not(pending)]
            for e in range(1, self.epochs + 1):
                updates[n.flight[(e, b, t)]] = z3.Or(s.flight[(e, b, t)], s.acting[b] == e)
        elif name == "BrokerHandleLeaderAndIsr":
            t, e, sender = args
            guard = [s.flight[(e, sender, t)]]
            updates[n.flight[(e, sender, t)]] = z3.BoolVal(False)
            stale = z3.IntVal(e) < s.obeyed[t]
            ignored = stale if self.model.config.fence_epochs else z3.BoolVal(False)
            updates[n.obeyed[t]] = z3.If(ignored, s.obeyed[t], z3.IntVal(e))
        elif name == "SessionExpire":
            (b,) = args
            guard = [s.sessions[b], s.expirations < self.model.config.expirations]
            updates[n.sessions[b]] = z3.BoolVal(False)
            updates[n.holder] = z3.If(s.holder == b, z3.IntVal(NONE), s.holder)
            updates[n.expirations] = s.expirations + 1
        elif name == "BrokerReconnect":
            (b,) = args
            guard = [z3.Not(s.sessions[b])]
            updates[n.sessions[b]] = z3.BoolVal(True)
        else:  # pragma: no cover - action_instances lists only the names above
            raise ValueError(f"no encoding for {instance}")
        keys = {id(variable) for variable in updates}
        frame = [after == before for before, after in zip(s.variables(), n.variables()) if id(after) not in keys]
        return [*guard, *(after == value for after, value in updates.items()), *frame]

    def _start_acting(self, s: SymController, n: SymController, b: int, epoch, updates: dict) -> None:
        updates[n.zk_epoch] = epoch
        updates[n.acting[b]] = epoch
        updates[n.reading[b]] = z3.IntVal(0)
        for (e, sender, t), flag in s.flight.items():
            if sender == b:
                updates[n.flight[(e, sender, t)]] = z3.Or(flag, epoch == e)

    # ------------------------------------------------------------------ properties

    def state_property(self, name: str, s: SymController) -> z3.BoolRef:
        if name == "OneControllerPerEpoch":
            clauses = []
            for e in range(1, self.epochs + 1):
                senders = [z3.Or(s.acting[b] == e, *(s.flight[(e, b, t)] for t in range(self.brokers)))
                           for b in range(self.brokers)]
                clauses.append(z3.AtMost(*senders, 1))
            return z3.And(*clauses)
        if name == "ControllerFailover":
            return z3.Or(*(a >= 2 for a in s.acting))
        if name == "TwoBrokersActAsController":
            return z3.AtLeast(*(a > 0 for a in s.acting), 2)
        raise KeyError(name)

    def step_property(self, name: str, s: SymController, action: z3.ArithRef, n: SymController) -> z3.BoolRef:
        handles = [(index, instance) for index, instance in enumerate(self.action_instances)
                   if instance.name == "BrokerHandleLeaderAndIsr"]

        def stale(instance):
            t, e, _ = instance.args
            return z3.IntVal(e) < s.obeyed[t]
        if name == "StaleControllerIgnored":
            return z3.And(*(z3.Implies(z3.And(action == index, stale(instance)), n.obeyed[instance.args[0]] ==
                                       s.obeyed[instance.args[0]]) for index, instance in handles))
        if name == "StaleRequestArrives":
            return z3.Or(*(z3.And(action == index, stale(instance)) for index, instance in handles))
        raise KeyError(name)

    def decode(self, model: z3.ModelRef, s: SymController) -> ControllerState:
        value = lambda term: model.eval(term, model_completion=True)  # noqa: E731
        flight = tuple(sorted(key for key, flag in s.flight.items() if z3.is_true(value(flag))))
        return ControllerState(value(s.holder).as_long(), value(s.zk_epoch).as_long(),
                               sum(1 << b for b, flag in enumerate(s.sessions) if z3.is_true(value(flag))),
                               tuple(value(a).as_long() for a in s.acting),
                               tuple(value(r).as_long() for r in s.reading),
                               tuple(value(o).as_long() for o in s.obeyed), flight, value(s.expirations).as_long())

    def successors(self, state: ControllerState) -> list[tuple[ControlAction, ControllerState]]:
        """The encoding's successors of an explicit state, action by action (for the agreement
        test with the model)."""
        s, n = self.fresh("here"), self.fresh("next")
        solver = z3.Solver()
        solver.add(self.concrete(state, s))
        found = []
        for instance in self.action_instances:
            solver.push()
            solver.add(*self.step(instance, s, n))
            if solver.check() == z3.sat:
                found.append((instance, self.decode(solver.model(), n)))
            solver.pop()
        return found

    def concrete(self, state: ControllerState, s: SymController) -> z3.BoolRef:
        """`s` equals the explicit `state`."""
        return z3.And(s.holder == state.holder, s.zk_epoch == state.zk_epoch, s.expirations == state.expirations,
                      *(flag == bool(state.sessions >> b & 1) for b, flag in enumerate(s.sessions)),
                      *(v == x for v, x in zip(s.acting, state.acting)),
                      *(v == x for v, x in zip(s.reading, state.reading)),
                      *(v == x for v, x in zip(s.obeyed, state.obeyed)),
                      *(flag == (key in state.in_flight) for key, flag in s.flight.items()))


def bounded_check(model: ControllerModel, depth: int, *, keep_going: bool = False, max_seconds: float | None = None):
    """Every behaviour of the controller model of up to `depth` steps, searched with Z3: the
    shortest violation of each invariant and the shortest way to each witness."""
    if isinstance(depth, bool) or not isinstance(depth, int) or depth < 0:
        raise ValueError(f"depth must be a non-negative integer, not {depth!r}")
    encoding = ControllerEncoding(model)
    started = time.perf_counter()
    solver = z3.Solver()
    if max_seconds is not None:
        solver.set("timeout", max(1, int(max_seconds * 1000)))
    states, actions = [encoding.fresh("s0")], []
    solver.add(encoding.initial(states[0]))
    properties = model.properties
    invariants = {p.name for p in properties if p.kind == ALWAYS}
    traces: dict[str, SystemTrace] = {}
    stopped_because, reached = "", 0
    for level in range(depth + 1):
        if level:
            actions.append(z3.Int(f"a{level - 1}"))
            states.append(encoding.fresh(f"s{level}"))
            solver.add(encoding.transition(states[-2], actions[-1], states[-1]))
        for prop in properties:
            if prop.name in traces or (prop.on_step and not level):
                continue
            holds = (encoding.step_property(prop.name, states[-2], actions[-1], states[-1]) if prop.on_step
                     else encoding.state_property(prop.name, states[-1]))
            solver.push()
            solver.add(z3.Not(holds) if prop.kind == ALWAYS else holds)
            answer = solver.check()
            if answer == z3.sat:
                traces[prop.name] = _trace(encoding, solver.model(), states, actions)
            solver.pop()
            if answer == z3.unknown:
                stopped_because = f"Z3 answered unknown at depth {level} ({solver.reason_unknown()})"
                break
        reached = level
        if not stopped_because and level < depth:
            stopped_because = stop_reason(traces, invariants, len(properties), keep_going, Budget(), 0, 0.0)
        if stopped_because:
            break
    result = search_result(ENGINE, model.config, properties, traces, False,
                           Stats(0, 0, reached, time.perf_counter() - started),
                           stopped_because or f"the depth bound {depth} was reached")
    from dataclasses import replace

    return replace(result, bounded_to=depth)


def _trace(encoding: ControllerEncoding, solver_model: z3.ModelRef, states: list, actions: list) -> SystemTrace:
    """The solver's path as a SystemTrace, replayed through the explicit model and compared state by state."""
    chosen = tuple(encoding.action_instances[solver_model.eval(a, model_completion=True).as_long()]
                   for a in actions)
    trace = SystemTrace(encoding.model, 0, chosen)
    replayed = trace.states()
    decoded = [encoding.decode(solver_model, s) for s in states]
    if replayed != decoded:
        raise EncodingMismatch(f"the Z3 encoding and the controller model disagree on {', '.join(map(str, chosen))}")
    return trace
