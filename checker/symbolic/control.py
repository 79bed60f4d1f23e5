"""The Z3 encodings of the controller model and the partition state machine
(`encoding.SymbolicEncoding`), which `bmc.bounded_check` runs.

One copy of the state per step and one action variable per step, an index into
`action_instances`. Each action is a guard and an effect that gives every variable of the next
state as a function of this one, so the relation is deterministic per action, as the models are.
`tests/test_control_models.py` holds each encoding equal to its model on every reachable state
of small configurations (the same actions enabled, the same successors). The rebalance model has
no encoding: one of its steps is a whole run of the rebalance task.
"""

from __future__ import annotations

from functools import partial
from itertools import product
from typing import TYPE_CHECKING, Any, Iterable

import z3

from kafka_mc.control.controller import NONE, ControllerModel, ControllerState
from kafka_mc.control.partition_fsm import (LEGAL, NEW, NO_LEADER, NON_EXISTENT, OFFLINE, ONLINE, SELF_LOOPS,
                                            PartitionFsmModel, PartitionFsmState, edge_name)
from kafka_mc.control.system import ControlAction
from kafka_mc.model.interface import Property

from .budget import solve
from .encoding import Formula
from .layout import model_values
from .transitions import EncodingError


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


class ControlEncoding:
    """What the control-plane encodings share: each defines `model`, `action_instances`, `fresh`,
    `initial`, `instance_step` (one action instance's guard and effect), `formulas` (each
    property's formula by name), `decode` and `concrete`; the rest of `SymbolicEncoding`, and the
    successors of an explicit state, follow from them."""

    model: Any  # the explicit model the encoding is of
    action_instances: list[ControlAction]
    formulas: dict[str, Formula]

    if TYPE_CHECKING:  # what each encoding defines, over its own symbolic state `s`, `n`
        def fresh(self, name: str) -> Any: ...

        def instance_step(self, instance: ControlAction, s: Any, n: Any) -> list: ...

        def decode(self, model: z3.ModelRef, s: Any) -> Any: ...

        def concrete(self, state: Any, s: Any) -> z3.BoolRef: ...

    def solver(self) -> z3.Solver:
        return z3.Solver()

    def action_variable(self, name: str) -> z3.ArithRef:
        """An index into `action_instances`."""
        return z3.Int(name)

    def well_formed(self, s: Any) -> z3.BoolRef:
        return z3.BoolVal(True)  # every assignment of the variables is a state the model may have

    def step(self, s: Any, n: Any, action: z3.ArithRef) -> z3.BoolRef:
        """`action` (an index into `action_instances`) leads from `s` to `n`."""
        return z3.Or(*(z3.And(action == index, *self.instance_step(instance, s, n))
                       for index, instance in enumerate(self.action_instances)))

    def formula(self, prop: Property) -> Formula:
        if prop.name not in self.formulas:
            raise EncodingError(f"property {prop.name} of the {self.model.name} model has no Z3 encoding")
        return self.formulas[prop.name]

    def decode_action(self, solver_model: z3.ModelRef, action: z3.ArithRef) -> ControlAction:
        return self.action_instances[model_values(solver_model, [action])[0]]

    @staticmethod
    def effect(guard: list, updates: dict, s, n) -> list:
        """The guard, the updated variables of `n`, and every other variable of `n` equal to its
        value in `s`: each action defines the whole next state."""
        keys = {id(variable) for variable in updates}
        frame = [after == before for before, after in zip(s.variables(), n.variables()) if id(after) not in keys]
        return [*guard, *(after == value for after, value in updates.items()), *frame]

    def successors(self, state) -> list:
        """The encoding's successors of an explicit state, action instance by action instance (for
        the agreement test with the model)."""
        if not hasattr(self, "_steps"):  # one solver, each instance's step taken by its own literal
            s, n, solver = self.fresh("here"), self.fresh("next"), self.solver()
            chosen = []
            for index, instance in enumerate(self.action_instances):
                literal = z3.Bool(f"take_{index}")
                solver.add(z3.Implies(literal, z3.And(*self.instance_step(instance, s, n))))
                chosen.append((instance, literal))
            self._steps = (s, n, solver, chosen)
        s, n, solver, chosen = self._steps
        solver.push()
        solver.add(self.concrete(state, s))
        found = []
        for instance, literal in chosen:
            if solve(solver, literal) == z3.sat:
                model = solver.model()
                after = self.decode(model, n)
                self.check_decoded(model, n, after)
                found.append((instance, after))
        solver.pop()
        return found

    def check_agreement(self, states: Iterable) -> set[str]:
        """The names of the actions the model takes from `states`; AssertionError at the first of them
        whose successors the encoding does not give as the model does, action by action (the
        agreement tests)."""
        taken: set[str] = set()
        for state in states:
            expected, got = sorted(self.model.successors(state)), sorted(self.successors(state))
            if got != expected:
                raise AssertionError(f"the {self.model.name} model's Z3 encoding gives {got} from {state}; the "
                                     f"model gives {expected}")
            taken |= {action.name for action, _ in expected}
        return taken

    def check_decoded(self, model: z3.ModelRef, n: Any, state: Any) -> None:
        """Raise AssertionError where the variables of `n` that `decode` does not read disagree with
        the `state` it decoded (an encoding that keeps derived values checks them here)."""


class ControllerEncoding(ControlEncoding):
    """The controller model's initial state, actions and properties as Z3 formulas."""

    model: ControllerModel

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
        self.formulas = {
            "OneControllerPerEpoch": lambda s, action, n: self.one_controller_per_epoch(n),
            "StaleControllerIgnored": self.stale_controller_ignored,
            "ControllerFailover": lambda s, action, n: z3.Or(*(a >= 2 for a in n.acting)),
            "TwoBrokersActAsController": lambda s, action, n: z3.AtLeast(*(a > 0 for a in n.acting), 2),
            "StaleRequestArrives": self.stale_request_arrives,
        }

    def fresh(self, name: str) -> SymController:
        return SymController(self.brokers, self.epochs, name)

    def initial(self, s: SymController) -> z3.BoolRef:
        return z3.And(s.holder == NONE, s.zk_epoch == 0, s.expirations == 0, *s.sessions,
                      *(v == 0 for v in (*s.acting, *s.reading, *s.obeyed)),
                      *(z3.Not(f) for f in s.flight.values()))

    def instance_step(self, instance: ControlAction, s: SymController, n: SymController) -> list:
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
        return self.effect(guard, updates, s, n)

    def _start_acting(self, s: SymController, n: SymController, b: int, epoch, updates: dict) -> None:
        updates[n.zk_epoch] = epoch
        updates[n.acting[b]] = epoch
        updates[n.reading[b]] = z3.IntVal(0)
        for (e, sender, t), flag in s.flight.items():
            if sender == b:
                updates[n.flight[(e, sender, t)]] = z3.Or(flag, epoch == e)

    # ------------------------------------------------------------------ properties

    def one_controller_per_epoch(self, s: SymController) -> z3.BoolRef:
        clauses = []
        for e in range(1, self.epochs + 1):
            senders = [z3.Or(s.acting[b] == e, *(s.flight[(e, b, t)] for t in range(self.brokers)))
                       for b in range(self.brokers)]
            clauses.append(z3.AtMost(*senders, 1))
        return z3.And(*clauses)

    def _stale_handles(self, s: SymController, action: z3.ArithRef) -> list[tuple[int, z3.BoolRef]]:
        """(broker, the step handles a LeaderAndIsr request of an epoch older than it obeyed)."""
        return [(instance.args[0], z3.And(action == index, z3.IntVal(instance.args[1]) < s.obeyed[instance.args[0]]))
                for index, instance in enumerate(self.action_instances) if instance.name == "BrokerHandleLeaderAndIsr"]

    def stale_controller_ignored(self, s: SymController, action: z3.ArithRef, n: SymController) -> z3.BoolRef:
        return z3.And(*(z3.Implies(stale, n.obeyed[t] == s.obeyed[t]) for t, stale in self._stale_handles(s, action)))

    def stale_request_arrives(self, s: SymController, action: z3.ArithRef, n: SymController) -> z3.BoolRef:
        return z3.Or(*(stale for _, stale in self._stale_handles(s, action)))

    def decode(self, model: z3.ModelRef, s: SymController) -> ControllerState:
        values = iter(model_values(model, s.variables()))
        holder, zk_epoch, expirations = next(values), next(values), next(values)
        sessions = sum(1 << b for b in range(len(s.sessions)) if next(values))
        acting, reading, obeyed = (tuple(next(values) for _ in part) for part in (s.acting, s.reading, s.obeyed))
        flight = tuple(sorted(key for key in s.flight if next(values)))
        return ControllerState(holder, zk_epoch, sessions, acting, reading, obeyed, flight, expirations)

    def concrete(self, state: ControllerState, s: SymController) -> z3.BoolRef:
        """`s` equals the explicit `state`."""
        return z3.And(s.holder == state.holder, s.zk_epoch == state.zk_epoch, s.expirations == state.expirations,
                      *(flag == bool(state.sessions >> b & 1) for b, flag in enumerate(s.sessions)),
                      *(v == x for v, x in zip(s.acting, state.acting)),
                      *(v == x for v, x in zip(s.reading, state.reading)),
                      *(v == x for v, x in zip(s.obeyed, state.obeyed)),
                      *(flag == (key in state.in_flight) for key, flag in s.flight.items()))


class SymPartitions:
    """The symbolic state of one step of the partition state machine."""

    def __init__(self, brokers: int, partitions: int, name: str):
        self.states = [z3.Int(f"{name}_state_{p}") for p in range(partitions)]
        self.leaders = [z3.Int(f"{name}_leader_{p}") for p in range(partitions)]
        self.isr = [[z3.Bool(f"{name}_isr_{p}_{b}") for b in range(brokers)] for p in range(partitions)]
        self.live = [z3.Bool(f"{name}_live_{b}") for b in range(brokers)]
        self.deleting = z3.Bool(f"{name}_deleting")
        self.creations = z3.Int(f"{name}_creations")
        self.failures = z3.Int(f"{name}_failures")

    def variables(self) -> list:
        return [*self.states, *self.leaders, *(flag for row in self.isr for flag in row), *self.live,
                self.deleting, self.creations, self.failures]


class PartitionFsmEncoding(ControlEncoding):
    """The partition state machine's initial state, actions and properties as Z3 formulas."""

    model: PartitionFsmModel

    def __init__(self, model: PartitionFsmModel):
        self.model = model
        config = model.config
        self.brokers, self.partitions = range(config.brokers), range(config.partitions)
        self.assignment = model.assignment
        self.action_instances = [
            ControlAction("CreateTopic"),
            *(ControlAction("ControllerElectLeader", (p,)) for p in self.partitions),
            *(instance for b in self.brokers
              for instance in (ControlAction("BrokerFailure", (b,)), ControlAction("BrokerStartup", (b,)))),
            *(ControlAction("PreferredReplicaElection", (p,)) for p in self.partitions),
            *(ControlAction("FollowerJoinsIsr", (p, b)) for p in self.partitions for b in self.assignment[p]),
            ControlAction("DeleteTopic"),
            *(ControlAction("TopicDeletionCompletes", (p,)) for p in self.partitions),
        ]
        self.formulas = {
            "OnlyLegalTransitions": lambda s, action, n: self.only_legal_transitions(s, n),
            "OnlineMeansLed": lambda s, action, n: self.online_means_led(n),
            **{edge_name(edge): partial(self.takes, edge) for edge in LEGAL},
        }

    def fresh(self, name: str) -> SymPartitions:
        return SymPartitions(len(self.brokers), len(self.partitions), name)

    def initial(self, s: SymPartitions) -> z3.BoolRef:
        return z3.And(*(v == NON_EXISTENT for v in s.states), *(v == NO_LEADER for v in s.leaders),
                      *(z3.Not(flag) for row in s.isr for flag in row), *s.live, z3.Not(s.deleting),
                      s.creations == 0, s.failures == 0)

    def instance_step(self, instance: ControlAction, s: SymPartitions, n: SymPartitions) -> list:
        config = self.model.config
        name, args = instance
        guard, updates = [], {}
        if name == "CreateTopic":
            guard = [*(v == NON_EXISTENT for v in s.states), s.creations < config.creations]
            updates = {**{n.states[p]: z3.IntVal(NEW) for p in self.partitions}, n.creations: s.creations + 1}
        elif name == "ControllerElectLeader":
            (p,) = args
            replicas = self.assignment[p]
            new_isr = {b: s.live[b] for b in replicas}
            in_sync = {b: z3.And(s.live[b], s.isr[p][b]) for b in replicas}
            any_in_sync = z3.Or(*in_sync.values())
            first_live = {b: z3.And(s.live[b], *(z3.Not(s.live[a]) for a in replicas[:i]))
                          for i, b in enumerate(replicas)}
            offline_isr = {b: z3.If(any_in_sync, in_sync[b], first_live[b] if config.unclean else z3.BoolVal(False))
                           for b in replicas}
            isr = {b: z3.If(s.states[p] == NEW, new_isr[b], offline_isr[b]) for b in replicas}
            leader = z3.IntVal(NO_LEADER)
            for b in reversed(replicas):  # the first member in assignment order
                leader = z3.If(isr[b], z3.IntVal(b), leader)
            guard = [z3.Not(s.deleting), z3.Or(s.states[p] == NEW, s.states[p] == OFFLINE), z3.Or(*isr.values())]
            updates = {n.states[p]: z3.IntVal(ONLINE), n.leaders[p]: leader,
                       **{n.isr[p][b]: isr.get(b, z3.BoolVal(False)) for b in self.brokers}}
        elif name == "BrokerFailure":
            (b,) = args
            guard = [s.live[b], s.failures < config.failures]
            updates = {n.live[b]: z3.BoolVal(False), n.failures: s.failures + 1}
            for p in self.partitions:
                led = s.leaders[p] == b
                updates[n.states[p]] = z3.If(led, z3.IntVal(OFFLINE), s.states[p])
                updates[n.leaders[p]] = z3.If(led, z3.IntVal(NO_LEADER), s.leaders[p])
                others = z3.Or(*(s.isr[p][a] for a in self.brokers if a != b))
                updates[n.isr[p][b]] = z3.And(s.isr[p][b], z3.Not(others))
        elif name == "BrokerStartup":
            (b,) = args
            guard = [z3.Not(s.live[b])]
            updates = {n.live[b]: z3.BoolVal(True)}
        elif name == "PreferredReplicaElection":
            (p,) = args
            preferred = self.assignment[p][0]
            guard = [s.states[p] == ONLINE, z3.Not(s.deleting), s.leaders[p] != preferred, s.live[preferred],
                     s.isr[p][preferred]]
            updates = {n.leaders[p]: z3.IntVal(preferred)}
        elif name == "FollowerJoinsIsr":
            p, b = args
            guard = [s.states[p] == ONLINE, s.live[b], z3.Not(s.isr[p][b])]
            updates = {n.isr[p][b]: z3.BoolVal(True)}
        elif name == "DeleteTopic":
            guard = [z3.Not(s.deleting), z3.Or(*(v != NON_EXISTENT for v in s.states))]
            updates = {n.leaders[p]: z3.IntVal(NO_LEADER) for p in self.partitions}
            if config.delete_online:
                updates |= {n.states[p]: z3.IntVal(NON_EXISTENT) for p in self.partitions}
                updates |= {n.isr[p][b]: z3.BoolVal(False) for p in self.partitions for b in self.brokers}
            else:
                updates |= {n.states[p]: z3.If(s.states[p] != NON_EXISTENT, z3.IntVal(OFFLINE), s.states[p])
                            for p in self.partitions}
                updates[n.deleting] = z3.BoolVal(True)
        elif name == "TopicDeletionCompletes":
            (p,) = args
            guard = [s.deleting, s.states[p] == OFFLINE]
            updates = {n.states[p]: z3.IntVal(NON_EXISTENT),
                       **{n.isr[p][b]: z3.BoolVal(False) for b in self.brokers},
                       n.deleting: z3.Or(*(s.states[q] != NON_EXISTENT for q in self.partitions if q != p))}
        else:  # pragma: no cover - action_instances lists only the names above
            raise ValueError(f"no encoding for {instance}")
        return self.effect(guard, updates, s, n)

    def online_means_led(self, s: SymPartitions) -> z3.BoolRef:
        return z3.And(*((s.states[p] == ONLINE) == z3.Or(*(z3.And(s.leaders[p] == b, s.live[b], s.isr[p][b])
                                                            for b in self.brokers))
                        for p in self.partitions))

    @staticmethod
    def only_legal_transitions(s: SymPartitions, n: SymPartitions) -> z3.BoolRef:
        return z3.And(*(z3.Implies(a != b, z3.Or(*(z3.And(a == x, b == y) for x, y in LEGAL if x != y)))
                        for a, b in zip(s.states, n.states)))

    def takes(self, edge: tuple[int, int], s: SymPartitions, action: z3.ArithRef, n: SymPartitions) -> z3.BoolRef:
        """A partition moves along `edge` (a self-loop: by the action that stands for it)."""
        taken = z3.Or(*(z3.And(a == edge[0], b == edge[1]) for a, b in zip(s.states, n.states)))
        if edge[0] != edge[1]:
            return taken
        by = [index for index, instance in enumerate(self.action_instances) if instance.name == SELF_LOOPS[edge]]
        return z3.And(taken, z3.Or(*(action == index for index in by)))

    def decode(self, model: z3.ModelRef, s: SymPartitions) -> PartitionFsmState:
        values = iter(model_values(model, s.variables()))
        states, leaders = (tuple(next(values) for _ in part) for part in (s.states, s.leaders))
        isr = tuple(sum(1 << b for b in range(len(row)) if next(values)) for row in s.isr)
        live = sum(1 << b for b in range(len(s.live)) if next(values))
        return PartitionFsmState(states, leaders, isr, live, next(values), next(values), next(values))

    def concrete(self, state: PartitionFsmState, s: SymPartitions) -> z3.BoolRef:
        return z3.And(*(v == x for v, x in zip(s.states, state.states)),
                      *(v == x for v, x in zip(s.leaders, state.leaders)),
                      *(flag == bool(mask >> b & 1) for row, mask in zip(s.isr, state.isr) for b, flag in enumerate(row)),
                      *(flag == bool(state.live >> b & 1) for b, flag in enumerate(s.live)),
                      s.deleting == state.deleting, s.creations == state.creations, s.failures == state.failures)
