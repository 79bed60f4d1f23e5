"""The compiled exploration kernel: `kernel_check` is `checker.bfs.check` run by numba-compiled
code over packed states (layout, transitions, invariants, explore, engine)."""

from .engine import KernelStats, kernel_check, supports

__all__ = ["KernelStats", "kernel_check", "supports"]
