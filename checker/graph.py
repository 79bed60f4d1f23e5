"""The reachable state graph of a small configuration, its DOT dump and a recoverability check.

Recoverability is the branching-time property AG EF LiveReplicasAgree: from every
reachable state some reachable state has a live leader and every live replica's log
agreeing with it below the replica's HW. Under `hw`, Case D breaks it: A keeps m2
below its HW and can never fetch m3.
"""

from __future__ import annotations

from collections import deque
from dataclasses import dataclass
import networkx as nx

from kafka_mc.model import Config, ReplicationModel, fingerprint
from kafka_mc.properties.recovery import RECOVERABILITY, live_replicas_agree

from .result import Trace

DEFAULT_GRAPH_LIMIT = 200_000


class GraphTooLarge(RuntimeError):
    """The configuration has more reachable states than the graph limit allows."""


def state_graph(config: Config, max_states: int | None = None) -> nx.DiGraph:
    """Every reachable state as a node (keyed by fingerprint, with `state`, `initial` and, for an
    initial state, its index `init`), every transition as an edge labelled with its `action`."""
    max_states = DEFAULT_GRAPH_LIMIT if max_states is None else max_states
    model = ReplicationModel(config)
    graph = nx.DiGraph()
    queue = deque()
    for index, state in enumerate(model.initial_states()):
        key = fingerprint(state)
        graph.add_node(key, state=state, initial=True, init=index)
        queue.append((key, state))
    while queue:
        key, state = queue.popleft()
        for action, following in model.successors(state):
            target = fingerprint(following)
            if target not in graph:
                if graph.number_of_nodes() >= max_states:
                    raise GraphTooLarge(f"more than {max_states} reachable states; the graph is for small "
                                        "configurations (lower --messages, --crashes or --elections)")
                graph.add_node(target, state=following, initial=False)
                queue.append((target, following))
            graph.add_edge(key, target, action=action)
    return graph


@dataclass(frozen=True)
class Recoverability:
    property: str
    states: int
    unrecoverable: int
    example: Trace | None  # a shortest trace to an unrecoverable state

    @property
    def holds(self) -> bool:
        return self.unrecoverable == 0


def check_recoverability(config: Config, graph: nx.DiGraph) -> Recoverability:
    good = [node for node, state in graph.nodes(data="state") if live_replicas_agree(state)]
    can_recover = set(good)
    queue = deque(good)
    while queue:  # backwards from the good states: everything that can reach one
        for predecessor in graph.predecessors(queue.popleft()):
            if predecessor not in can_recover:
                can_recover.add(predecessor)
                queue.append(predecessor)
    stuck = set(graph) - can_recover
    return Recoverability(RECOVERABILITY, graph.number_of_nodes(), len(stuck),
                          _shortest_trace_to(config, graph, stuck) if stuck else None)


def _shortest_trace_to(config: Config, graph: nx.DiGraph, targets: set) -> Trace:
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
    return Trace(config, graph.nodes[node]["init"], tuple(reversed(actions)))
