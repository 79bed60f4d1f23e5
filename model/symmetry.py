"""Replica symmetry: states equal up to renaming replicas are one state (TLC's
`SYMMETRY Permutations(Replicas)`).

Nothing in the model depends on a replica's name, so permuting the replicas of a
reachable state gives a reachable state with the same verdicts. `canonical` picks one
representative per class: the least permuted state, in tuple order.
"""

from __future__ import annotations

from itertools import permutations, product

from .actions import Action
from .state import NO_LEADER, State


def _permute_mask(mask: int, order: tuple[int, ...]) -> int:
    return sum(1 << new for new, old in enumerate(order) if mask >> old & 1)


def _renamed(index: int, order: tuple[int, ...]) -> int:
    return NO_LEADER if index == NO_LEADER else order.index(index)


def permute(state: State, order: tuple[int, ...]) -> State:
    """The state whose replica i is `state`'s replica order[i], with every reference renamed."""
    replicas = tuple(
        replica._replace(remote_leos=tuple([replica.remote_leos[old] for old in order]) if replica.remote_leos else (),
                         stale_isr=_permute_mask(replica.stale_isr, order),
                         leader_id=_renamed(replica.leader_id, order))
        if replica.remote_leos or replica.leader_id != NO_LEADER else replica
        for replica in (state.replicas[old] for old in order)
    )
    controller = state.controller
    return state._replace(
        replicas=replicas,
        controller=controller._replace(leader=_renamed(controller.leader, order),
                                       isr=_permute_mask(controller.isr, order),
                                       elr=_permute_mask(controller.elr, order),
                                       last_known_elr=_permute_mask(controller.last_known_elr, order),
                                       proposal=_permute_mask(controller.proposal, order),
                                       reregistered=_permute_mask(controller.reregistered, order),
                                       unseen=_permute_mask(controller.unseen, order)),
        zk_cut=_permute_mask(state.zk_cut, order),
        peer_cut=_permute_mask(state.peer_cut, order),
    )


def _candidate_orders(state: State):
    """The replica orders that sort replicas by everything but their (order-dependent) view of
    the others (stale ISR, remote LEOs, the leader followed); only these can give the least permuted state."""
    keys = [replica._replace(stale_isr=0, remote_leos=(), leader_id=NO_LEADER) for replica in state.replicas]
    ranked = sorted(range(len(keys)), key=keys.__getitem__)
    groups: list[list[int]] = []
    for index in ranked:
        if groups and keys[groups[-1][0]] == keys[index]:
            groups[-1].append(index)
        else:
            groups.append([index])
    for choice in product(*(permutations(group) for group in groups)):
        yield tuple(index for group in choice for index in group)


def canonical(state: State) -> State:
    """The representative of the state's symmetry class."""
    return min(permute(state, order) for order in _candidate_orders(state))


def renaming(representative: State, state: State) -> tuple[int, ...]:
    """An order with `permute(state, order) == representative`: representative's replica i is
    `state`'s replica order[i]."""
    for order in permutations(range(len(state.replicas))):
        if permute(state, order) == representative:
            return order
    raise ValueError("the states are not in the same symmetry class")


def rename(action: Action, order: tuple[int, ...]) -> Action:
    """The action on `state` that corresponds to `action` on `permute(state, order)`."""
    return action._replace(replica=order[action.replica])
