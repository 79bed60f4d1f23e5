"""Ctrl-C while compiled code runs: noted, and acted on where the engine can stop cleanly.

An interrupt that arrives inside a numba function leaves an exception set that the function's
return then reports as a `SystemError`. So while an engine runs compiled code it defers SIGINT:
the handler only notes it, the engine asks between calls (`checker.kernel.engine` expands a level
a part at a time) and raises `Interrupted`, which says how far the run got.
"""

from __future__ import annotations

import signal
import threading
from contextlib import contextmanager
from typing import Iterator


class Interrupted(KeyboardInterrupt):
    """A run stopped by Ctrl-C: partial, no verdict. The message says how far it got."""


class Deferred:
    """Whether SIGINT arrived since `deferred_interrupts` began."""

    def __init__(self) -> None:
        self.arrived = False

    def note(self, signum, frame) -> None:
        self.arrived = True


@contextmanager
def deferred_interrupts() -> Iterator[Deferred]:
    """Note SIGINT instead of raising it, until the block ends (in the main thread; elsewhere no
    signal arrives, and nothing changes)."""
    deferred = Deferred()
    if threading.current_thread() is not threading.main_thread():
        yield deferred
        return
    previous = signal.signal(signal.SIGINT, deferred.note)
    try:
        yield deferred
    finally:
        signal.signal(signal.SIGINT, previous)
