"""Random simulation: many random walks through a model, as TLC's `-simulate` and Quint's `run`.

Each run starts in a random initial state and takes a uniformly random enabled action at every
step, until `depth` steps or until no action is enabled; every state is checked against the state
invariants and every step against the step properties. Run i draws from its own generator, seeded
by the seed and i, so the same seed gives the same runs, whatever budget cuts them short.

A violation's trace is the run up to the first state that breaks the invariant, with every loop
(a stretch from a state back to the same state) cut out; it replays through the model like any
engine's trace. A simulation is never a proof: its result is always incomplete.
"""

from __future__ import annotations

import random
import time
from dataclasses import dataclass
from typing import Callable, Iterable

from kafka_mc.control.replication import ReplicationSystem, model_of
from kafka_mc.model import Action, Config, State, fingerprint
from kafka_mc.model.interface import Model
from kafka_mc.properties import ALWAYS, Property

from .partition import without_cyclic_gc
from .result import CheckResult, Stats, Trace, Violation

ENGINE = "simulate"
TIME_CHECK_STEPS = 1024  # how often (in steps) a long run looks at the time budget


@dataclass(frozen=True)
class SimulationProgress:
    runs: int  # runs finished so far
    total_runs: int
    steps: int
    seconds: float

    @property
    def steps_per_second(self) -> float:
        return self.steps / self.seconds if self.seconds > 0 else 0.0


@dataclass(frozen=True)
class SimulationResult(CheckResult):
    """A CheckResult with what a simulation adds. `complete` is always false; `stats` counts the
    distinct states the runs met, every state they went through (`states_generated`) and the
    longest run (`depth`)."""

    seed: int = 0
    runs: int = 0  # runs finished
    runs_requested: int = 0
    depth_bound: int = 0
    steps: int = 0  # actions taken over all runs
    failing_run: int | None = None  # the number (from 1) of the run with the first violation

    @property
    def steps_per_second(self) -> float:
        seconds = self.stats.seconds
        return self.steps / seconds if seconds > 0 else float(self.steps)

    @property
    def all_runs_done(self) -> bool:
        return self.runs == self.runs_requested


def run_generator(seed: int, run: int) -> random.Random:
    """The random generator of one run: a function of the seed and the run's number only."""
    return random.Random(f"kafka-mc/{seed}/{run}")


def simulate(
    model: Model | Config,
    properties: Iterable[Property] | None = None,
    *,
    runs: int = 1000,
    depth: int = 100,
    seed: int = 0,
    keep_going: bool = False,
    max_seconds: float | None = None,
    progress: Callable[[SimulationProgress], None] | None = None,
) -> SimulationResult:
    """Make `runs` random walks of at most `depth` steps through `model` (any
    `model.interface.Model`, or a `Config` of the replication model, checked for `properties`, all
    of `properties.PROPERTIES` unless given) and check its properties along them.

    Stops after the run of the first invariant violation unless `keep_going`, in which case every
    run is made and the shortest violation found of each invariant is reported. `max_seconds`
    ends the simulation early (the runs made so far count).
    """
    model = model_of(model, properties)
    walker = _ReplicationWalker(model, keep_going) if isinstance(model, ReplicationSystem) else _Walker(model, keep_going)
    return _simulate(walker, runs, depth, seed, keep_going, max_seconds, progress)


def _simulate(walker, runs: int, depth: int, seed: int, keep_going: bool, max_seconds: float | None,
              progress: Callable[[SimulationProgress], None] | None) -> SimulationResult:
    """Make the runs with `walker` and gather what they found."""
    for name, value in (("runs", runs), ("depth", depth)):
        if isinstance(value, bool) or not isinstance(value, int) or value < 1:
            raise ValueError(f"{name} must be a positive integer, not {value!r}")
    if isinstance(seed, bool) or not isinstance(seed, int) or seed < 0:
        raise ValueError(f"seed must be a non-negative integer, not {seed!r}")
    started = time.perf_counter()
    deadline = None if max_seconds is None else started + max_seconds
    finished, stopped_because, failing_run = 0, "", None
    with without_cyclic_gc():
        for run in range(runs):
            if deadline is not None and time.perf_counter() >= deadline:
                stopped_because = f"time budget of {max_seconds:g} s reached after {finished} of {runs} runs"
                break
            if not walker.walk(run_generator(seed, run), depth, deadline):
                stopped_because = f"time budget of {max_seconds:g} s reached after {finished} of {runs} runs"
                break
            finished += 1
            if walker.violations and failing_run is None:
                failing_run = run + 1
            if progress:
                progress(SimulationProgress(finished, runs, walker.steps, time.perf_counter() - started))
            if walker.violations and not keep_going:
                stopped_because = f"stopped after run {run + 1:,} of {runs:,} with seed {seed}, the first with a violation"
                break
    seconds = time.perf_counter() - started
    if not stopped_because:
        stopped_because = f"random simulation of {runs} runs of up to {depth} steps: never a proof"
    violated = sorted(walker.violations, key=lambda name: (len(walker.violations[name]), name))
    return SimulationResult(
        engine=ENGINE,
        config=walker.config,
        complete=False,
        stats=Stats(len(walker.seen), walker.states, walker.longest, seconds),
        violations=tuple(Violation(name, walker.violations[name]) for name in violated),
        witnesses={p.name: p.name in walker.reached for p in walker.witnesses},
        stopped_because=stopped_because,
        witness_traces=dict(walker.reached),
        seed=seed,
        runs=finished,
        runs_requested=runs,
        depth_bound=depth,
        steps=walker.steps,
        failing_run=failing_run,
    )


class _Walker:
    """The model, the properties still to look for, and what the runs found so far. A step takes
    one of the enabled actions (`model.successors`) uniformly at random."""

    key = staticmethod(lambda state: state)  # what `seen` keeps of a state

    def __init__(self, model: Model, keep_going: bool):
        self.model, self.config, self.keep_going = model, model.config, keep_going
        self.initial_states = model.initial_states()
        properties = model.properties
        self.state_invariants = [p for p in properties if p.kind == ALWAYS and not p.on_step]
        self.step_invariants = [p for p in properties if p.kind == ALWAYS and p.on_step]
        self.witnesses = [p for p in properties if p.kind != ALWAYS]
        self.violations: dict[str, Trace] = {}
        self.reached: dict[str, Trace] = {}
        self.seen: set = set()
        self.states = self.steps = self.longest = 0

    def walk(self, rng: random.Random, depth: int, deadline: float | None) -> bool:
        """One run; False when the time budget ran out in the middle of it (the run does not count)."""
        initial = rng.randrange(len(self.initial_states))
        states = [self.initial_states[initial]]
        actions: list = []
        if self._check(initial, states, actions):
            return self._counted(states)
        for step in range(depth):
            if deadline is not None and step % TIME_CHECK_STEPS == TIME_CHECK_STEPS - 1 \
                    and time.perf_counter() >= deadline:
                return False
            enabled = list(self.model.successors(states[-1]))
            if not enabled:
                break
            action, following = enabled[rng.randrange(len(enabled))]
            actions.append(action)
            states.append(following)
            if self._check(initial, states, actions):
                break
        return self._counted(states)

    def _counted(self, states: list) -> bool:
        self.states += len(states)
        self.steps += len(states) - 1
        self.longest = max(self.longest, len(states) - 1)
        self.seen.update(map(self.key, states))
        return True

    def _check(self, initial: int, states: list, actions: list) -> bool:
        """Check the newest state (and step); True when the run should end: at any violation, or
        with `keep_going` at the violation of an invariant no run has broken yet (a shorter trace
        of one already broken is still kept)."""
        before, action, state = (states[-2], actions[-1], states[-1]) if actions else (None, None, states[0])
        broken = [p.name for p in self.state_invariants if not p.holds(state)]
        if before is not None:
            broken += [p.name for p in self.step_invariants if not p.holds(before, action, state)]
        for prop in self.witnesses:
            if prop.name not in self.reached and prop.check(before, action, state):
                self.reached[prop.name] = Trace(self.model, initial, tuple(actions))
        if not broken:
            return False
        trace = Trace(self.model, initial, without_loops(states, actions))
        new = [name for name in broken if name not in self.violations]
        for name in broken:
            if name in new or len(trace) < len(self.violations[name]):
                self.violations[name] = trace
        return bool(new) or not self.keep_going


class _ReplicationWalker(_Walker):
    """The walker of the replication model: an action slot (action and replica) is drawn from a
    uniformly random order until one is enabled, without computing the other successors; the
    states it met are kept as fingerprints."""

    key = staticmethod(fingerprint)

    def __init__(self, model: ReplicationSystem, keep_going: bool):
        super().__init__(model, keep_going)
        self.transitions = transitions = model.transitions
        self.slots = [(Action(name, replica), transitions.transitions[name], replica)
                      for name in transitions.action_names for replica in range(model.config.replicas)]

    def walk(self, rng: random.Random, depth: int, deadline: float | None) -> bool:
        transitions, slots, uniform = self.transitions, self.slots, rng.random
        initial = int(uniform() * len(self.initial_states))
        state = self.initial_states[initial]
        states: list[State] = [state]
        actions: list[Action] = []
        if self._check(initial, states, actions):
            return self._counted(states)
        order = list(range(len(slots)))
        for step in range(depth):
            if deadline is not None and step % TIME_CHECK_STEPS == TIME_CHECK_STEPS - 1 \
                    and time.perf_counter() >= deadline:
                return False
            # the first enabled slot of a uniformly random order is uniform over the enabled ones
            remaining, following = len(order), None
            while remaining:
                pick = int(uniform() * remaining)
                slot = order[pick]
                order[pick], order[remaining - 1] = order[remaining - 1], slot
                remaining -= 1
                action, transition, replica = slots[slot]
                following = transition(transitions, state, replica)
                if following is not None:
                    break
            if following is None:
                break  # no action is enabled: the run ends here
            actions.append(action)
            states.append(following)
            state = following
            if self._check(initial, states, actions):
                break
        return self._counted(states)


def without_loops(states: list[State], actions: list[Action]) -> tuple[Action, ...]:
    """The actions of a run (`states[i + 1]` follows `actions[i]`) with every stretch that comes
    back to a state it left cut out. The last step is always kept, so a step property broken by it
    is still broken, and so is a state invariant broken by the last state."""
    kept_states: list[State] = [states[0]]
    kept_actions: list[Action] = []
    position = {states[0]: 0}
    for action, state in zip(actions[:-1], states[1:-1]):
        earlier = position.get(state)
        if earlier is None:
            position[state] = len(kept_states)
            kept_states.append(state)
            kept_actions.append(action)
            continue
        for dropped in kept_states[earlier + 1:]:
            del position[dropped]
        del kept_states[earlier + 1:]
        del kept_actions[earlier:]
    return tuple(kept_actions + actions[-1:])
