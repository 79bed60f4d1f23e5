"""The compiled exploration kernel: `kernel_check` is `checker.bfs.check` run by numba-compiled
code over packed states (layout, transitions, invariants, explore, engine)."""

import os

from ..numba_cache import serialize_cache_saves
from .cache import prune_stale_caches, register_locators

prune_stale_caches()
register_locators()  # before any kernel function is decorated
serialize_cache_saves()
# GNU OpenMP threads spin for about 3 ms after a parallel region by default, taking a core from other work:
# they wait passively, but only after a short spin (20,000 turns, about 0.2 ms by libgomp's estimate of
# 100,000 a millisecond), which spans the short serial steps between a block's parallel loops, so that the
# threads are not woken again for each loop (docs/speed.md: 2 threads explored 7 % faster)
os.environ.setdefault("OMP_WAIT_POLICY", "PASSIVE")
os.environ.setdefault("GOMP_SPINCOUNT", "20000")
# Start numba's parallel backend before any kernel function runs. A function loaded from numba's
# cache starts it only if its cache entry says so, and an entry for a caller of the parallel
# `expand_block` compiled in a process that had loaded `expand_block` from the cache does not:
# loaded in a new process, it ran the parallel loop with no backend started (a segmentation fault).
from numba.np.ufunc.parallel import _launch_threads  # noqa: E402

_launch_threads()

from .engine import KernelStats, kernel_check  # noqa: E402

__all__ = ["KernelStats", "kernel_check"]
