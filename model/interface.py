"""What a model is to the engines, in the shape of Stateright's `Model` trait
(https://docs.rs/stateright/latest/stateright/trait.Model.html): initial states, the successors of
a state with the actions that lead to them in a fixed order, action parsing, the values a report
shows, the properties to check and a goal every reachable state must be able to get back to.

The replication model (`control.replication.ReplicationSystem`) and each control-plane model
implement it. States are immutable and hashable; an action's `str` is what traces and reports show
and what `parse_action` reads back. A model may also give `next_state` and the methods that make up
its `Capabilities` (read by `capabilities`, with defaults for those it lacks).
"""

from __future__ import annotations

import pickle
from dataclasses import dataclass, field
from functools import partial
from itertools import islice
from typing import Any, Callable, Hashable, Iterator, NamedTuple, Protocol

__all__ = ["ALWAYS", "SOMETIMES", "Capabilities", "Goal", "Model", "Property", "capabilities", "next_state"]

ALWAYS, SOMETIMES = "always", "sometimes"


@dataclass(frozen=True)
class Property:
    """A named predicate of a state (`holds(state)`) or, with `on_step`, of a transition
    (`holds(before, action, after)`). `always`: in every reachable state (or step); `sometimes`: in
    at least one (a witness that the model can do what the property names)."""

    name: str
    kind: str
    source: str
    holds: Callable[..., bool]
    on_step: bool = False
    # a user's own Python function behind `holds`, which the compiled engines lower (`properties.lowering`)
    predicate: Callable[..., Any] | None = field(default=None, compare=False)

    def check(self, before: Hashable | None, action: Any, after: Hashable) -> bool:
        """Whether it holds in `after` (or the step to it); with no step before (an initial state),
        a step invariant holds and a step witness does not."""
        if self.on_step:
            return self.holds(before, action, after) if before is not None else self.kind == ALWAYS
        return self.holds(after)


@dataclass(frozen=True)
class Goal:
    """A state predicate every reachable state must be able to reach again (AG EF goal)."""

    name: str
    source: str
    holds: Callable[[Any], bool]  # of the model's own state type


class Model(Protocol):
    """What every engine takes. `successors` yields (action, state) in the same order on every
    call, so that every engine finds the same least shortest trace."""

    name: str  # the model's name, e.g. "replication" or "controller"
    action_names: tuple[str, ...]  # every action's name
    config: Any  # a frozen dataclass with `to_dict()`
    properties: tuple[Property, ...]
    goal: Goal

    def initial_states(self) -> list[Any]: ...

    def successors(self, state: Any) -> Iterator[tuple[Any, Any]]: ...

    def parse_action(self, text: str) -> Any: ...

    def state_values(self, state: Any) -> dict[str, Any]: ...


def next_state(model: Model, state: Hashable, action: Any) -> Any:
    """The state `action` leads to from `state`, or None when it is not enabled there (by the
    model's own `next_state` where it has one, without computing the other successors)."""
    own = getattr(model, "next_state", None)
    if own is not None:
        return own(state, action)
    return next((following for taken, following in model.successors(state) if taken == action), None)


class Capabilities(NamedTuple):
    """What an engine that keeps states as bytes, partitioned by a hash, needs of a model (the
    Spark engine, `checker.spark`): `pack_state`, `unpack_state`, `fingerprint` and `owner_hash` are
    the model's own methods of those names where it has them, and its slots its own fixed action
    slots where it has `indexed_successors` and `action_at` (as the replication model has,
    `control.replication.ReplicationSystem`); else defaults that serve any model whose states
    pickle, and hash alike in every process (tuples of ints and bools, as every kafka-mc model's:
    `model.state`)."""

    pack_state: Callable[[Any], bytes]  # default: pickle
    unpack_state: Callable[[bytes], Any]
    fingerprint: Callable[[Any], int]  # a state's signed 64-bit identity; default: hash(state)
    owner_hash: Callable[[Any], int]  # where a state is partitioned; default: its fingerprint
    successors: Callable[[Any], Iterator[tuple[int, Any, Any]]]  # (slot, action, state), in `successors` order
    action_at: Callable[[Any, int], Any]  # (state, slot): the action in that slot out of the state


def capabilities(model: Model) -> Capabilities:
    """`model`'s capabilities. A slot is the model's own fixed action slot where it has
    `indexed_successors(state)`, giving (slot, state), and `action_at(slot)`; else a successor's
    position among the state's `successors`."""
    indexed, action_at = getattr(model, "indexed_successors", None), getattr(model, "action_at", None)
    if indexed is not None and action_at is not None:
        def successors(state):
            return ((slot, action_at(slot), following) for slot, following in indexed(state))

        def action_in(state, slot):
            return action_at(slot)
    else:
        def successors(state):
            return ((slot, action, following) for slot, (action, following) in enumerate(model.successors(state)))

        def action_in(state, slot):
            return next(islice(model.successors(state), slot, None))[0]
    fingerprint = getattr(model, "fingerprint", hash)
    return Capabilities(getattr(model, "pack_state", partial(pickle.dumps, protocol=pickle.HIGHEST_PROTOCOL)),
                        getattr(model, "unpack_state", pickle.loads), fingerprint,
                        getattr(model, "owner_hash", fingerprint), successors, action_in)
