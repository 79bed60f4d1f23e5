"""`Lemma`: a named formula over one symbolic state. `induction.prove` checks lemmas and
`lemmas.LEMMAS` ships a set of them; the type lives here, below both, so that neither module
imports the other to get it."""

from __future__ import annotations

from typing import Callable, NamedTuple

import z3

from .layout import SymState


class Lemma(NamedTuple):
    """A named formula over one symbolic state; `doc` says what it claims."""

    name: str
    formula: Callable[[SymState], z3.BoolRef]
    doc: str = ""

    @classmethod
    def of(cls, function: Callable[[SymState], z3.BoolRef] | "Lemma") -> "Lemma":
        """A Lemma from a plain function: its name and the first paragraph of its docstring."""
        if isinstance(function, Lemma):
            return function
        if not callable(function):
            raise TypeError(f"a lemma must be a function of a SymState, not {function!r}")
        doc = (function.__doc__ or "").strip().split("\n\n")[0]
        return cls(function.__name__, function, " ".join(doc.split()))
