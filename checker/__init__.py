"""Engines: every engine takes a configuration and properties and returns a CheckResult."""

from .bfs import Budget, Progress, check
from .result import CheckResult, ReplayError, Stats, Trace, Violation

__all__ = ["Budget", "CheckResult", "Progress", "ReplayError", "Stats", "Trace", "Violation", "check"]
