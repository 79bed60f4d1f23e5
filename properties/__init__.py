"""What must hold (`always`) and what must be reachable (`sometimes`), each tied to its source."""

from .base import ALWAYS, SOMETIMES, Property
from .invariants import INVARIANTS
from .witnesses import WITNESSES

PROPERTIES: tuple[Property, ...] = INVARIANTS + WITNESSES

__all__ = ["ALWAYS", "SOMETIMES", "INVARIANTS", "PROPERTIES", "Property", "WITNESSES"]


def failing_invariants(state, invariants=INVARIANTS) -> list[str]:
    """The names of the `always` state invariants that do not hold in `state`."""
    return [p.name for p in invariants if not p.on_step and not p.holds(state)]


__all__.append("failing_invariants")


def shipped(prop: Property) -> bool:
    """Whether the property is one of `PROPERTIES`, kafka-mc's own, which every engine states itself
    (a user's property is lowered from its Python function, `properties.lowering`)."""
    return any(prop is known for known in PROPERTIES)


__all__.append("shipped")
