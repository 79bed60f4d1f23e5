"""What the bounded model checker (`bmc.py`) needs of a model's Z3 encoding.

A path of length k is k + 1 copies of the state variables (`fresh`) and k action variables
(`action_variable`), tied by `initial`, `well_formed` and `step`; a property is a formula over a
step (`formula`); a solver model is read back as explicit states and actions (`decode`,
`decode_action`), which the engine replays through `model`. The replication model's encoding is
`transitions.SymbolicModel`, the control-plane models' are in `control.py`; `registry.py` finds a
model's encoding by its name.
"""

from __future__ import annotations

from typing import Any, Callable, Protocol

import z3

from kafka_mc.model.interface import Property

# a property's formula over a step: (state before, action variable, state after); a state
# property reads only the state after, and at depth 0 is given no step (None, None)
Formula = Callable[[Any, Any, Any], z3.BoolRef]


class SymbolicEncoding(Protocol):
    """A model's transition relation and properties as Z3 formulas over symbolic states."""

    model: Any  # the explicit model (`Model`) whose traces the decoded paths are

    def solver(self) -> z3.Solver:
        """A fresh solver suited to the formulas (a bit-vector logic where the states are bits)."""

    def fresh(self, name: str) -> Any:
        """A new copy of the state variables, their names prefixed with `name`."""

    def action_variable(self, name: str) -> z3.ExprRef:
        """A new variable for the action of one step."""

    def initial(self, s: Any) -> z3.BoolRef:
        """`s` is one of the model's initial states."""

    def well_formed(self, s: Any) -> z3.BoolRef:
        """What every reachable state satisfies and every decodable one must (may be true)."""

    def step(self, s: Any, t: Any, action: z3.ExprRef) -> z3.BoolRef:
        """`action` is enabled in `s` and leads to `t`."""

    def formula(self, prop: Property) -> Formula:
        """The formula of `prop` (true where it holds); `EncodingError` when it has none."""

    def decode(self, solver_model: z3.ModelRef, s: Any) -> Any:
        """The explicit state `s` takes in `solver_model`."""

    def decode_action(self, solver_model: z3.ModelRef, action: z3.ExprRef) -> Any:
        """The model's action `action` takes in `solver_model`."""
