"""Ctrl-C while compiled code runs: noted, and acted on where the engine can stop cleanly.

An interrupt that arrives inside a numba function leaves an exception set that the function's
return then reports as a `SystemError`. So while an engine runs compiled code it defers SIGINT:
the handler only notes it, the engine asks between calls (`checker.kernel.engine` expands a level
a part at a time) and raises `Interrupted`, which says how far the run got. The Spark engine
(`checker.spark`) cancels its running jobs at the interrupt and stops its session in order. The
Z3 engines defer it too, and stop at their next query (`raise_if_interrupted`): a KeyboardInterrupt
raised while Python frees a Z3 term (in `AstRef.__del__`) is printed and dropped, and the run
would go on to a verdict.
"""

from __future__ import annotations

import signal
import threading
from contextlib import contextmanager
from typing import Callable, Iterator


class Interrupted(KeyboardInterrupt):
    """A run stopped by Ctrl-C: partial, no verdict. The message says how far it got."""


class Deferred:
    """Whether SIGINT arrived since `deferred_interrupts` began."""

    def __init__(self, on_arrival: Callable[[], None] | None = None) -> None:
        self.arrived = False
        self.on_arrival = on_arrival

    def note(self, signum, frame) -> None:
        first = not self.arrived
        self.arrived = True
        if first and self.on_arrival is not None:
            self.on_arrival()


@contextmanager
def deferred_interrupts(on_arrival: Callable[[], None] | None = None) -> Iterator[Deferred]:
    """Note SIGINT instead of raising it, until the block ends (in the main thread; elsewhere no
    signal arrives, and nothing changes). `on_arrival` runs at the first one, in the signal
    handler: it must only start something (Spark's job cancellation, in a thread of its own)."""
    deferred = Deferred(on_arrival)
    if threading.current_thread() is not threading.main_thread():
        yield deferred
        return
    previous = signal.signal(signal.SIGINT, deferred.note)
    _active.append(deferred)
    try:
        yield deferred
    finally:
        _active.remove(deferred)
        signal.signal(signal.SIGINT, previous)


_active: list[Deferred] = []


def raise_if_interrupted() -> None:
    """KeyboardInterrupt if SIGINT arrived inside any `deferred_interrupts` block still open: the
    safe point of code that defers interrupts without holding the block's `Deferred`."""
    if any(deferred.arrived for deferred in _active):
        raise KeyboardInterrupt
