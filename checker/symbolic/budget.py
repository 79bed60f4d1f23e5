"""A time budget for a whole run of solver queries: each query gets the time that is left, so
the run ends within its budget however many queries it makes; and `solve`, the one way a query
is asked, so that Ctrl-C during a query stops the run."""

from __future__ import annotations

import time

import z3

from ..interrupts import raise_if_interrupted

SLACK = 0.05  # seconds: an unknown answer this close to the end is the budget's

# Z3 catches Ctrl-C during a query (its `ctrl_c` setting) and answers unknown for this reason
INTERRUPTED = "interrupted from keyboard"

# Z3 takes its time-out as an unsigned 32-bit count of milliseconds (about 49 days)
MAX_TIMEOUT_MS = 2**32 - 2


class Deadline:
    """`seconds` from `started` (default: now); None: no budget."""

    def __init__(self, seconds: float | None, started: float | None = None):
        self.seconds = seconds
        self.started = time.perf_counter() if started is None else started

    def elapsed(self) -> float:
        return time.perf_counter() - self.started

    def left(self) -> float | None:
        """Seconds left (0 when spent); None without a budget."""
        if self.seconds is None:
            return None
        return max(0.0, self.seconds - self.elapsed())

    def spent(self, slack: float = 0.0) -> bool:
        """Whether the budget is spent, or within `slack` seconds of it (a solver time-out set to
        the time left may end a few milliseconds early)."""
        return self.seconds is not None and self.elapsed() >= self.seconds - slack

    def milliseconds(self, cap: float | None = None) -> int | None:
        """The solver time-out for the next query, at most `cap` seconds: 0 when the budget is
        spent, None when neither bounds it."""
        limits = [limit for limit in (cap, self.left()) if limit is not None]
        if not limits:
            return None
        return min(MAX_TIMEOUT_MS, max(0, int(min(limits) * 1000)))

    def arm(self, solver: z3.Solver, cap: float | None = None) -> bool:
        """Give `solver`'s next query the time left; False, setting nothing, when it is spent."""
        milliseconds = self.milliseconds(cap)
        if milliseconds == 0:
            return False
        if milliseconds is not None:
            solver.set("timeout", milliseconds)
        return True

    def describe(self) -> str:
        return f"time budget of {self.seconds:g} s"


def solve(solver: z3.Solver, *assumptions: z3.BoolRef) -> z3.CheckSatResult:
    """`solver.check(*assumptions)`; KeyboardInterrupt when Ctrl-C stopped the query (Z3 takes the
    signal while it searches, so Python would otherwise never see it) or arrived, deferred
    (`interrupts.deferred_interrupts`), since the last query."""
    raise_if_interrupted()
    answer = solver.check(*assumptions)
    if answer == z3.unknown and solver.reason_unknown() == INTERRUPTED:
        raise KeyboardInterrupt
    raise_if_interrupted()
    return answer
