"""Progress on stderr: a live line on a terminal, plain lines (at most one a second) otherwise."""

from __future__ import annotations

import time
from typing import TYPE_CHECKING

from rich.console import Console

from kafka_mc.checker import Progress

if TYPE_CHECKING:
    from rich.status import Status


class ProgressReporter:
    def __init__(self, enabled: bool = True, console: Console | None = None):
        self.console = console or Console(stderr=True)
        self.enabled = enabled
        self._status: Status | None = None
        self._last_line = 0.0

    @staticmethod
    def describe(p: Progress) -> str:
        return (f"depth {p.depth}: {p.states_generated} states generated, {p.distinct_states} distinct, "
                f"{p.queue} on queue, {p.states_per_second:,.0f} states/s")

    def __call__(self, progress: Progress) -> None:
        if not self.enabled:
            return
        text = self.describe(progress)
        if self.console.is_terminal:
            if self._status is None:
                self._status = self.console.status(text)
                self._status.start()
            else:
                self._status.update(text)
        elif time.monotonic() - self._last_line >= 1.0:
            self._last_line = time.monotonic()
            self.console.print(text, highlight=False, soft_wrap=True)

    def close(self) -> None:
        if self._status is not None:
            self._status.stop()
            self._status = None

    def note(self, text: str) -> None:
        if self.enabled:
            self.console.print(text, highlight=False, soft_wrap=True)
