"""The reachable state graph of a small configuration, its DOT dump and a recoverability check.

Recoverability is the branching-time property AG EF LiveReplicasAgree: from every
reachable state some reachable state has every two live replicas' logs agreeing below the
lower of their HWs. Under `hw`, Case D breaks it: A keeps m2 below its HW and can never fetch
m3. Beside it, AG EF LeaderAgain: from every reachable state some reachable state has a live
leader, or the elections bound is spent (a bounded liveness check: the partition never stays
without a leader it could still elect). Under `kip-966` it holds where the ISR and the ELR empty: the
last known leader is elected (KAFKA-15584), uncleanly. The control-plane
models use the same graph and check with their own goal (`system_graph`, `check_goal`).
"""

from __future__ import annotations

import builtins
from collections import deque
from dataclasses import dataclass
from typing import Any, Callable

import networkx as nx

from kafka_mc.control.replication import ReplicationSystem
from kafka_mc.model import Config, ReplicationModel, fingerprint
from kafka_mc.properties.recovery import LEADER_AGAIN, RECOVERABILITY, live_leader, live_replicas_agree

from .result import Trace

DEFAULT_GRAPH_LIMIT = 200_000


class GraphTooLarge(RuntimeError):
    """The configuration has more reachable states than the graph limit allows."""


def state_graph(config: Config, max_states: int | None = None) -> nx.DiGraph:
    """Every reachable state as a node (keyed by fingerprint, with `state`, `initial` and, for an
    initial state, its index `init`), every transition as an edge labelled with its `action`."""
    model = ReplicationModel(config)
    return reachable_graph(model.initial_states(), model.successors, fingerprint, max_states,
                           "lower --messages, --crashes or --elections")


def system_graph(system, max_states: int | None = None) -> nx.DiGraph:
    """The reachable state graph of a control-plane model (`control.system`), keyed by state."""
    return reachable_graph(system.initial_states(), system.successors, lambda state: state, max_states,
                           "lower the model's bounds")


def reachable_graph(initial_states: list, successors: Callable, key: Callable, max_states: int | None,
                    smaller: str) -> nx.DiGraph:
    """The graph of every state reachable from `initial_states` by `successors` (pairs of action
    and state), nodes keyed by `key(state)`; GraphTooLarge past `max_states`, suggesting `smaller`."""
    max_states = DEFAULT_GRAPH_LIMIT if max_states is None else max_states
    graph = nx.DiGraph()
    queue: deque[tuple[Any, Any]] = deque()  # (node, state)
    for index, state in enumerate(initial_states):
        node = key(state)
        graph.add_node(node, state=state, initial=True, init=index)
        queue.append((node, state))
    while queue:
        node, state = queue.popleft()
        for action, following in successors(state):
            target = key(following)
            if target not in graph:
                if graph.number_of_nodes() >= max_states:
                    raise GraphTooLarge(f"more than {max_states} reachable states; the graph is for small "
                                        f"configurations ({smaller})")
                graph.add_node(target, state=following, initial=False)
                queue.append((target, following))
            graph.add_edge(node, target, action=action)
    return graph


@dataclass(frozen=True)
class Recoverability:
    property: str
    states: int
    unrecoverable: int
    example: Trace | None  # a shortest trace to an unrecoverable state

    @builtins.property  # the field `property` shadows the builtin in this class's body
    def holds(self) -> bool:
        return self.unrecoverable == 0


def check_recoverability(config: Config, graph: nx.DiGraph) -> Recoverability:
    return _recoverability(RECOVERABILITY, graph, live_replicas_agree, _replication_trace(config))


def check_leader_again(config: Config, graph: nx.DiGraph) -> Recoverability:
    """AG EF (a live leader, or the elections bound spent) on the replication model's graph."""
    model = ReplicationModel(config)
    return _recoverability(LEADER_AGAIN, graph, lambda state: live_leader(state) or model.elections_spent(state),
                           _replication_trace(config))


def _replication_trace(config: Config) -> Callable:
    """`trace(initial, actions)` of the replication model's graph: a path as a trace of `config`."""
    return lambda initial, actions: Trace(ReplicationSystem(config), initial, actions)


def check_goal(system, graph: nx.DiGraph) -> Recoverability:
    """AG EF of a control-plane model's goal: from every reachable state the goal is reachable."""
    return _recoverability(system.goal.name, graph, system.goal.holds,
                           lambda initial, actions: Trace(system, initial, actions))


def _recoverability(name: str, graph: nx.DiGraph, good: Callable, trace: Callable) -> Recoverability:
    """AG EF `good` on `graph`, with `trace(initial, actions)` of a shortest path to a stuck state."""
    stuck = _cannot_reach(graph, good)
    return Recoverability(name, graph.number_of_nodes(), len(stuck),
                          trace(*_shortest_path_to(graph, stuck)) if stuck else None)


def _cannot_reach(graph: nx.DiGraph, good: Callable) -> set:
    """The nodes from which no node whose state is `good` can be reached."""
    can_recover = {node for node, state in graph.nodes(data="state") if good(state)}
    queue = deque(can_recover)
    while queue:  # backwards from the good states: everything that can reach one
        for predecessor in graph.predecessors(queue.popleft()):
            if predecessor not in can_recover:
                can_recover.add(predecessor)
                queue.append(predecessor)
    return set(graph) - can_recover


def _shortest_path_to(graph: nx.DiGraph, targets: set) -> tuple[int, tuple]:
    """The initial state's index and the actions of a shortest path to one of `targets`."""
    roots = [node for node, initial in graph.nodes(data="initial") if initial]
    parent = {root: None for root in roots}
    queue = deque(roots)
    while queue:
        node = queue.popleft()
        if node in targets:
            break
        for successor in graph.successors(node):
            if successor not in parent:
                parent[successor] = node
                queue.append(successor)
    actions = []
    while parent[node] is not None:
        actions.append(graph.edges[parent[node], node]["action"])
        node = parent[node]
    return graph.nodes[node]["init"], tuple(reversed(actions))
