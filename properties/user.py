"""A user's own predicate as a `Property`: a function of a state, or of (state, action,
next_state), that returns False or fails an assert where it does not hold. The pytest plugin's
`@always` and `@sometimes` and `kafka-mc check --property FILE:NAME` all take them through here."""

from __future__ import annotations

import inspect
from typing import Callable

from .base import ALWAYS, SOMETIMES, Property


class UserPropertyError(Exception):
    """A user's predicate raised something other than AssertionError: an error in that property."""

    def __init__(self, name: str, error: BaseException):
        super().__init__(f"property {name} raised {type(error).__name__}: {error}")
        self.name = name


def arity(predicate: Callable) -> int:
    """1 for a state property, 3 for a step property; TypeError otherwise."""
    if not callable(predicate):
        raise TypeError(f"a kafka-mc property must be a function, not {predicate!r}")
    try:
        parameters = [p for p in inspect.signature(predicate).parameters.values()
                      if p.kind in (p.POSITIONAL_ONLY, p.POSITIONAL_OR_KEYWORD) and p.default is p.empty]
    except (TypeError, ValueError):
        raise TypeError(f"the signature of {predicate!r} cannot be read") from None
    if len(parameters) not in (1, 3):
        raise TypeError(f"a kafka-mc property takes (state) or (state, action, next_state), not "
                        f"{len(parameters)} parameters: {getattr(predicate, '__name__', predicate)}"
                        f"{inspect.signature(predicate)}")
    return len(parameters)


def holds(predicate: Callable, *arguments) -> bool:
    """False when the predicate returns False or fails an assert; True otherwise."""
    try:
        return predicate(*arguments) is not False
    except AssertionError:
        return False


def user_property(predicate: Callable, name: str, guarded: bool = False, kind: str = ALWAYS) -> Property:
    """The user's predicate as a Property of a state, or of a step: `always` (it must hold
    everywhere), or a `sometimes` witness (reached where it holds). `guarded`: any other exception
    it raises becomes a UserPropertyError naming it (a test lets it through)."""
    if kind not in (ALWAYS, SOMETIMES):
        raise ValueError(f"a property's kind is {ALWAYS!r} or {SOMETIMES!r}, not {kind!r}")

    def check(*arguments) -> bool:
        if not guarded:
            return holds(predicate, *arguments)
        try:
            return holds(predicate, *arguments)
        except Exception as error:
            raise UserPropertyError(name, error) from error

    what = "user property" if kind == ALWAYS else "user witness"
    if arity(predicate) == 1:
        return Property(name, kind, what, lambda state: check(state), predicate=predicate)
    return Property(name, kind, what.replace("user", "user step"),
                    lambda before, action, after: check(before, action, after), on_step=True, predicate=predicate)
