"""The visited set of a model that has no packed encoding (the control-plane models, the
replication model with controller failover): the states themselves, in one partition, in this
process. It answers `checker.bfs.check` as the replication model's partitions do (`seed`,
`level`, `link`); node numbers are handed out in breadth-first order and stand in for path keys
(`checker.partition`), so the first state found breaking a property is on the least shortest path.
"""

from __future__ import annotations

from typing import Any, Hashable

from kafka_mc.model.interface import Model

from .partition import ROOT, LevelReport, Watching, past


class StatePool(Watching):
    """Every state met, with its parent node and the action from it (an initial state's parent
    is ROOT and its action its index among the initial states)."""

    def __init__(self, model: Model):
        self.model = model
        self.watch(model.properties)
        self.nodes: dict[Hashable, int] = {}
        self.parents: list[int] = []
        self.actions: list[Any] = []
        self.frontier: list[tuple[int, Hashable]] = []

    def seed(self) -> list[LevelReport]:
        initial_states = self.model.initial_states()
        report = LevelReport(generated=len(initial_states))
        for index, state in enumerate(initial_states):
            if state not in self.nodes:
                self._keep(ROOT, index, state, report)
        report.frontier = len(self.frontier)
        return [report]

    def level(self, settled: set[str], stop_at: float | None = None) -> list[LevelReport]:
        """Expand the frontier (until `time.monotonic()` passes `stop_at`: the report is then
        `cut`): step properties on every transition, state properties on every new state; stop
        looking for the properties in `settled`."""
        self.settle(settled)
        report = LevelReport()
        current, self.frontier = self.frontier, []
        for index, (node, state) in enumerate(current):
            if past(stop_at, index):
                report.cut = True
                break
            for position, (action, following) in enumerate(self.model.successors(state)):
                report.generated += 1
                report.enabled[action.name] += 1
                for prop in self.step_invariants:
                    if not prop.holds(state, action, following):
                        report.offer(prop.name, (node, position), (0, node, action))
                for prop in self.step_witnesses:
                    if prop.holds(state, action, following):
                        report.offer(prop.name, (node, position), (0, node, action))
                if following not in self.nodes:
                    self._keep(node, action, following, report)
        report.frontier = len(self.frontier)
        return [report]

    def _keep(self, parent: int, action: Any, state: Hashable, report: LevelReport) -> None:
        node = len(self.parents)
        self.nodes[state] = node
        self.parents.append(parent)
        self.actions.append(action)
        self.frontier.append((node, state))
        report.new_states += 1
        if parent != ROOT:
            report.new_by_action[action.name] += 1
        for prop in self.invariants:
            if not prop.holds(state):
                report.offer(prop.name, node, (0, node))
        for prop in self.state_witnesses:
            if prop.holds(state):
                report.offer(prop.name, node, (0, node))

    def link(self, partition: int, node: int) -> tuple[int, int, Any]:
        """(parent partition, parent node, action) of a node; ROOT partition for an initial state,
        whose action is its index."""
        parent = self.parents[node]
        return (ROOT, ROOT, self.actions[node]) if parent == ROOT else (0, parent, self.actions[node])

    def close(self) -> None:
        pass
