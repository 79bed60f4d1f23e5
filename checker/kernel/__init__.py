"""The compiled exploration kernel: `kernel_check` is `checker.bfs.check` run by numba-compiled
code over packed states (layout, transitions, invariants, explore, engine)."""

import os

from .cache import prune_stale_caches, register_locators, serialize_cache_saves

prune_stale_caches()
register_locators()  # before any kernel function is decorated
serialize_cache_saves()
# GNU OpenMP threads spin between parallel regions by default, taking a core from other work
os.environ.setdefault("OMP_WAIT_POLICY", "PASSIVE")

from .engine import KernelStats, kernel_check, supports  # noqa: E402

__all__ = ["KernelStats", "kernel_check", "supports"]
