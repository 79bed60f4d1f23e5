"""The declared shape of a parsed input file (TOML or JSON), and the one check against it; and
how a user's values and exceptions are written in error messages (`short_repr`, `raised`).

A shape is `ANY`, a type (a bool is not an int), `[item]` for a list of items, a dict of keys to
shapes (`"*"` for any other key), `Required(shape)` for a key that must be there, or
`Expect(shape, wording)` to say what is expected in the reader's words. `check_shape` goes only
as deep as the shape, so a value nested without end cannot exhaust the stack, and names the place
that is wrong: `[[checkpoint]] 2: A.log` in a TOML file, `states[3].#meta.action` in JSON. The
scenario format (`checker.scenario`) and ITF (`counterexamples.itf`) declare theirs.
"""

from __future__ import annotations

import reprlib
from dataclasses import dataclass
from typing import Any


ANY = object()  # a shape every value has


@dataclass(frozen=True)
class Expect:
    """A shape with its own wording in messages, e.g. `Expect([str], "a list of step names")`."""

    shape: Any
    wording: str


@dataclass(frozen=True)
class Required:
    """A key of a table shape that must be present."""

    shape: Any


class _Short(reprlib.Repr):
    def repr_int(self, x: int, level: int) -> str:
        try:
            return super().repr_int(x, level)
        except ValueError:  # more digits than Python converts to text
            return f"<an integer of {x.bit_length()} bits>"


_SHORT = _Short()
_SHORT.maxlevel, _SHORT.maxstring, _SHORT.maxother, _SHORT.maxlist, _SHORT.maxdict = 3, 60, 60, 6, 4


def short_repr(value: object) -> str:
    """`repr` cut short, for error messages; never raises (safe on deeply nested values and on a
    user's object whose repr fails)."""
    try:
        return _SHORT.repr(value)
    except BaseException:  # a user object whose repr raises, even SystemExit
        return f"<{type(value).__name__} object>"


def raised(error: BaseException) -> str:
    """`Type: message` of an exception a user's code raised, or `Type` without one; never raises."""
    try:
        message = str(error)
    except BaseException:
        message = ""
    return f"{type(error).__name__}: {message}" if message else type(error).__name__


def check_shape(value: object, shape: Any, where: str = "", *, toml: bool = True) -> None:
    """ValueError naming the first place in `value` (a parsed TOML or JSON document) that does not
    have `shape`, and what was expected there.

    A shape is ANY; a type (`int` excludes bool); `[item]`, a list of such items; a dict of keys
    to shapes, a table (`Required(shape)` marks a key that must be there, key `"*"` gives the shape
    of keys not named, and without it other keys are refused); or `Expect(shape, wording)`.
    Places read `checkpoint[1].A.log`, or `[[checkpoint]] 2: A.log` for TOML's arrays of tables.
    """
    if shape is ANY:
        return
    if isinstance(shape, Expect):
        if not _has_outline(value, shape.shape):
            raise ValueError(f"{where or 'the document'} must be {shape.wording}, not {short_repr(value)}")
        check_shape(value, shape.shape, where, toml=toml)
    elif isinstance(shape, list):
        if not isinstance(value, list):
            raise ValueError(f"{where or 'the document'} must be {_wording(shape, toml)}, not {short_repr(value)}")
        tables = toml and isinstance(_bare(shape[0]), dict) and where.isidentifier()  # a top-level [[array]]
        for index, item in enumerate(value):
            check_shape(item, shape[0], f"[[{where}]] {index + 1}" if tables else f"{where}[{index}]", toml=toml)
    elif isinstance(shape, dict):
        if not isinstance(value, dict):
            raise ValueError(f"{where or 'the document'} must be {_wording(shape, toml)}, not {short_repr(value)}")
        named = {key: sub for key, sub in shape.items() if key != "*"}
        unknown = sorted(str(key) for key in value if key not in named) if "*" not in shape else []
        if unknown:
            raise ValueError(f"{where + ' has ' if where else ''}unknown key(s) {', '.join(unknown)}; "
                             f"allowed: {', '.join(sorted(named))}")
        for key, sub in named.items():
            if isinstance(sub, Required) and key not in value:
                raise ValueError(f"{_child(where, key)} is missing: it must be {_wording(sub.shape, toml)}")
        for key, item in value.items():
            sub = named.get(key, shape.get("*", ANY))
            check_shape(item, sub.shape if isinstance(sub, Required) else sub, _child(where, key), toml=toml)
    elif not _has_outline(value, shape):
        raise ValueError(f"{where or 'the document'} must be {_wording(shape, toml)}, not {short_repr(value)}")


def _bare(shape: Any) -> Any:
    """The shape under Required and Expect."""
    while isinstance(shape, (Required, Expect)):
        shape = shape.shape
    return shape


def _has_outline(value: object, shape: Any) -> bool:
    """Whether `value` is of the kind `shape` asks for at the top (its items are checked apart)."""
    shape = _bare(shape)
    if shape is ANY:
        return True
    if isinstance(shape, list):
        return isinstance(value, list)
    if isinstance(shape, dict):
        return isinstance(value, dict)
    if isinstance(value, bool):
        return shape is bool or (isinstance(shape, tuple) and bool in shape)
    return isinstance(value, shape)


_WORDS = {str: ("a string", "strings"), int: ("an integer", "integers"), bool: ("true or false", "booleans"),
          float: ("a number", "numbers"), list: ("a list", "lists")}


def _wording(shape: Any, toml: bool, plural: bool = False) -> str:
    """How messages name what `shape` asks for: `a list of strings`, `a table`, ..."""
    if isinstance(shape, Expect):
        return f"values each {shape.wording}" if plural else shape.wording
    shape = _bare(shape)
    if shape is dict or isinstance(shape, dict):
        return ("tables" if toml else "objects") if plural else ("a table" if toml else "an object")
    if isinstance(shape, list):
        words = "a list" if shape[0] is ANY else f"a list of {_wording(shape[0], toml, plural=True)}"
        return f"values each {words}" if plural else words
    if isinstance(shape, tuple):
        return " or ".join(_wording(kind, toml, plural) for kind in shape)
    if shape in _WORDS:
        return _WORDS[shape][plural]
    return f"values of type {shape.__name__}" if plural else f"of type {shape.__name__}"


def _child(where: str, key: object) -> str:
    return f"{where}: {key}" if where.startswith("[[") and ": " not in where else \
        f"{where}.{key}" if where else str(key)
