"""The GPU engine: `gpu_check` is the compiled kernel's breadth-first search run a level at a time
by CUDA kernels (numba-cuda), from the kernel's own transition source (`checker/kernel`), with the
same counts, verdicts and traces. Without a GPU it refuses (`GpuUnavailable`), unless numba's CUDA
simulator was chosen (`NUMBA_ENABLE_CUDASIM=1` before numba is imported)."""

import os

# The kernel's packing copies arrays by slices (`explore.unpack`, `permute`, `pack_represented`),
# which numba-cuda compiles only with its runtime on:
# set before numba-cuda reads its settings (`engine.require_gpu` sets it again in numba's config)
os.environ.setdefault("NUMBA_CUDA_ENABLE_NRT", "1")

from .engine import (  # noqa: E402
    GpuSearch, GpuUnavailable, ProgramTooLong, compile_gpu, gpu_check, require_gpu, simulated,
)

__all__ = ["GpuSearch", "GpuUnavailable", "ProgramTooLong", "compile_gpu", "gpu_check", "require_gpu", "simulated"]
