"""`Lemma`: a named formula over one symbolic state. `induction.prove` checks lemmas and
`lemmas.LEMMAS` ships a set of them; the type lives here, below both, so that neither module
imports the other to get it."""

from __future__ import annotations

from typing import Callable, NamedTuple

import z3

from kafka_mc.model.shape import raised, short_repr

from .layout import SymState


class LemmaError(ValueError):
    """A lemma that cannot be used: not a named function with a string docstring, or one whose
    call raises or gives no Z3 Boolean formula. `lemma`: its name, when it has one."""

    def __init__(self, lemma: str | None, message: str):
        super().__init__(message)
        self.lemma = lemma


def _attribute(value: object, name: str) -> object:
    try:
        return getattr(value, name, None)
    except BaseException:  # a property of a user object that raises
        return None


class Lemma(NamedTuple):
    """A named formula over one symbolic state; `doc` says what it claims."""

    name: str
    formula: Callable[[SymState], z3.BoolRef]
    doc: str = ""

    @classmethod
    def of(cls, function: Callable[[SymState], z3.BoolRef] | "Lemma") -> "Lemma":
        """A Lemma from a plain function: its name and the first paragraph of its docstring
        (a string or None). LemmaError for anything else."""
        if isinstance(function, Lemma):
            name, formula, doc = function
            if not isinstance(name, str) or not name:
                raise LemmaError(None, f"a lemma's name must be a non-empty string, not {short_repr(name)}")
            if not callable(formula):
                raise LemmaError(name, f"lemma {name}'s formula must be a function of a SymState, "
                                       f"not {short_repr(formula)}")
            if not isinstance(doc, str):
                raise LemmaError(name, f"lemma {name}'s doc must be a string, not {type(doc).__name__}")
            _check_name(name)
            return function
        if not callable(function):
            raise LemmaError(None, f"a lemma must be a function of a SymState, not {short_repr(function)}")
        named = _attribute(function, "__name__")
        if not isinstance(named, str) or not named:
            raise LemmaError(None, f"a lemma must have a name (__name__, a non-empty string): {short_repr(function)} "
                                   f"has {short_repr(named)}")
        _check_name(named)
        docstring = _attribute(function, "__doc__")
        if docstring is not None and not isinstance(docstring, str):
            raise LemmaError(named, f"lemma {named}'s docstring must be a string or None, not {type(docstring).__name__}")
        first = (docstring or "").strip().split("\n\n")[0]
        return cls(named, function, " ".join(first.split()))

    def build(self, s: SymState) -> z3.BoolRef:
        """The lemma's formula over `s`. LemmaError when the call raises anything (SystemExit and
        KeyboardInterrupt included) or returns something other than a Z3 Boolean formula."""
        try:
            formula = self.formula(s)
        except BaseException as error:  # user code: whatever it raises is an error in the lemma
            raise LemmaError(self.name, f"lemma {self.name} raised {raised(error)}") from error
        if not isinstance(formula, z3.BoolRef):
            raise LemmaError(self.name, f"lemma {self.name} returned {short_repr(formula)} "
                                        f"({type(formula).__name__}), not a Z3 Boolean formula")
        return formula


def _check_name(name: str) -> None:
    # the name goes into report file names and one-line messages
    if not name.isprintable() or any(character in name for character in "/\\"):
        raise LemmaError(None, f"a lemma's name must be printable, without / or \\: {short_repr(name)}")
