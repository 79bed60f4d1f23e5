"""Exploration speed of the GPU engine (`--engine gpu`) beside the compiled kernel on the CPU.

For each configuration (the rungs of `bench.py`'s ladder and `kernel_bench.py`'s larger ones, or
those given with --config), one complete exploration (`keep_going`) by the GPU engine and one by
the CPU kernel, in this process: distinct and generated states, depth, wall time, distinct states
per second over the exploration, the compile time apart (the GPU's kernels, once per process, before
the first run, in the header; the CPU kernel's compile or cache load in its first row), the GPU memory
in use at its peak (the driver's figure, sampled after every level, less what was in use before the
run), the visited table's and parent links' bytes per distinct state at the end
(`KernelStats.visited_bytes`), and whether the two engines agree (the same counts, depth and
violations, as they must). Needs an NVIDIA GPU and numba-cuda, and kafka-mc installed (`pip install
-e '.[gpu-cu13]'`); under NUMBA_ENABLE_CUDASIM=1 it runs in numba's CUDA simulator instead (slowly:
small rungs only).

    python benchmarks/gpu_bench.py --out gpu_results.json                  # rungs up to 1.5e7 states
    python benchmarks/gpu_bench.py --out gpu_results.md --up-to 2e5        # a Markdown table
    python benchmarks/gpu_bench.py --out r.json --config "leader-epoch 3 2 2 1" --cpu-threads 16
    python benchmarks/gpu_bench.py --out big.json --config "leader-epoch 3 5 5 2" --max-seconds 120 --levels

With --max-seconds a run that reaches the limit stops there and its row says `complete: false`: its
states per second are over the states it reached, and it has no verdict.
"""

from __future__ import annotations

import os

# the kernel's packing copies arrays by slices (`explore.unpack`): numba-cuda compiles that with its runtime on,
# read from the environment when numba-cuda is imported
os.environ.setdefault("NUMBA_CUDA_ENABLE_NRT", "1")

import argparse  # noqa: E402
import json  # noqa: E402
import sys  # noqa: E402
import time  # noqa: E402
from pathlib import Path  # noqa: E402

from tabulate import tabulate  # noqa: E402

from bench import LADDER, machine  # noqa: E402
from kernel_bench import LARGER  # noqa: E402

COLUMNS = ("config", "engine", "complete", "distinct", "generated", "depth", "wall_s", "compile_s", "explore_s",
           "distinct_per_s", "gpu_peak_mb", "visited_bytes_per_state", "violated", "agrees")


def gpu_name() -> str:
    from numba import cuda

    try:
        name = cuda.get_current_device().name
        return name.decode() if isinstance(name, bytes) else str(name)
    except Exception as error:  # the simulator's device, or none
        return f"no device name ({type(error).__name__})"


def versions() -> str:
    """numba's, numba-cuda's and numpy's versions, and the CUDA version the driver supports."""
    from importlib import metadata

    from numba import cuda

    found = []
    for package in ("numba", "numba-cuda", "numpy"):
        try:
            found.append(f"{package} {metadata.version(package)}")
        except metadata.PackageNotFoundError:
            found.append(f"no {package}")
    try:
        major, minor = cuda.cudadrv.driver.driver.get_version()
        found.append(f"CUDA driver {major}.{minor}")
    except Exception as error:  # the simulator, or no driver
        found.append(f"no CUDA driver version ({type(error).__name__})")
    return ", ".join(found)


def memory_in_use() -> int | None:
    """Bytes of GPU memory in use, as the driver counts them (None where it cannot say)."""
    from numba import cuda

    try:
        free, total = cuda.current_context().get_memory_info()
        return int(total - free)
    except Exception:
        return None


def row(config, engine: str, result, wall: float, peak_bytes: int | None) -> dict:
    stats = result.stats
    return {
        "config": f"{config.protocol} r={config.replicas} m={config.messages} c={config.crashes} e={config.elections}",
        "engine": engine,
        "complete": result.complete,
        "distinct": stats.distinct_states,
        "generated": stats.states_generated,
        "depth": stats.depth,
        "wall_s": round(wall, 2),
        "compile_s": round(stats.compile_seconds, 2),
        "explore_s": round(stats.seconds, 2),
        "distinct_per_s": round(stats.distinct_states / stats.seconds) if stats.seconds else None,
        "gpu_peak_mb": None if peak_bytes is None else round(peak_bytes / 2**20),
        "visited_bytes_per_state": round(stats.visited_bytes / stats.distinct_states, 1),
        "violated": ",".join(result.violated) or "-",
    }


def run_gpu(config, chunk: int | None, budget, levels: bool) -> dict:
    from kafka_mc.checker.gpu import gpu_check

    started = time.perf_counter()
    before = memory_in_use()
    peak = before

    def sample(progress) -> None:
        nonlocal peak
        used = memory_in_use()
        if used is not None and peak is not None:
            peak = max(peak, used)
        if levels and progress is not None:
            print(f"  level {progress.depth}: {progress.distinct_states:,} distinct, {progress.queue:,} in the "
                  f"frontier, {progress.seconds:.1f} s, {progress.states_per_second:,.0f} states/s", file=sys.stderr)

    result = gpu_check(config, keep_going=True, progress=sample, chunk=chunk, budget=budget)
    sample(None)
    wall = time.perf_counter() - started
    return row(config, result.engine, result, wall, None if peak is None or before is None else peak - before)


def run_cpu(config, threads: int, budget) -> dict:
    from kafka_mc.checker.kernel import kernel_check

    started = time.perf_counter()
    result = kernel_check(config, keep_going=True, workers=threads, budget=budget)
    return row(config, f"kernel {threads}", result, time.perf_counter() - started, None)


def write(path: Path, rows: list[dict], header: str) -> None:
    if path.suffix == ".md":
        table = tabulate([[r.get(column, "-") for column in COLUMNS] for r in rows], headers=COLUMNS,
                         tablefmt="github")
        path.write_text(f"{header}\n\n{table}\n", encoding="utf-8")
    else:
        path.write_text(json.dumps({"machine": header, "rows": rows}, indent=2) + "\n", encoding="utf-8")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--out", type=Path, required=True,
                        help="write the figures here after every run: Markdown if it ends in .md, else JSON")
    parser.add_argument("--config", action="append", metavar="'PROTOCOL R M C E'",
                        help="a configuration to run (repeatable); default: the ladder's rungs")
    parser.add_argument("--up-to", type=float, default=1.5e7,
                        help="without --config: skip rungs expected to exceed this many distinct states")
    parser.add_argument("--at-least", type=float, default=0, help="without --config: skip rungs expected below this")
    parser.add_argument("--cpu-threads", type=int, default=os.cpu_count() or 1,
                        help="threads of the CPU kernel (default: every core)")
    parser.add_argument("--no-cpu", action="store_true", help="the GPU engine only")
    parser.add_argument("--cpu-up-to", type=float, default=float("inf"),
                        help="run the CPU kernel beside the GPU engine only where the GPU found at most this many "
                             "distinct states")
    parser.add_argument("--max-seconds", type=float,
                        help="stop each run after this many seconds of exploration (its row says complete: false)")
    parser.add_argument("--levels", action="store_true", help="print each GPU level's progress on stderr")
    parser.add_argument("--chunk", type=int, help="frontier states per GPU kernel launch (default: the engine's)")
    args = parser.parse_args()
    if args.max_seconds is not None and not args.max_seconds > 0:
        sys.exit(f"gpu_bench: --max-seconds must be positive, not {args.max_seconds}")

    from kafka_mc.checker.bfs import Budget
    from kafka_mc.checker.gpu import GpuUnavailable, compile_gpu, require_gpu
    from kafka_mc.model import Config

    try:
        require_gpu()
    except GpuUnavailable as error:
        sys.exit(f"gpu_bench: {error}")
    if args.config:
        configs = [(protocol, *map(int, numbers)) for protocol, *numbers in (text.split() for text in args.config)]
    else:
        configs = [tuple(rung[:5]) for rung in LADDER + LARGER if args.at_least <= rung[5] <= args.up_to]
    budget = Budget(max_seconds=args.max_seconds)
    # the GPU's kernels compiled before the first run, so that its memory at peak is its own, not the compile's
    header = f"{machine()}; GPU: {gpu_name()}; {versions()}; the GPU's kernels compiled in {compile_gpu():.1f} s"
    rows: list[dict] = []
    for protocol, replicas, messages, crashes, elections in configs:
        config = Config(protocol, replicas, messages, crashes, elections)
        gpu = run_gpu(config, args.chunk, budget, args.levels)
        rows.append(gpu)
        print(f"done: {gpu['config']} {gpu['engine']}: {gpu['distinct']:,} states, {gpu['distinct_per_s']:,} states/s",
              file=sys.stderr)
        if not args.no_cpu and gpu["complete"] and gpu["distinct"] <= args.cpu_up_to:
            cpu = run_cpu(config, args.cpu_threads, budget)
            same = all(gpu[key] == cpu[key] for key in ("complete", "distinct", "generated", "depth", "violated"))
            gpu["agrees"] = cpu["agrees"] = same
            rows.append(cpu)
            print(f"done: {cpu['config']} {cpu['engine']}: {cpu['distinct_per_s']:,} states/s"
                  f"{'' if same else ' (DISAGREES with the GPU engine)'}",
                  file=sys.stderr)
        write(args.out, rows, header)
    print(tabulate([[r.get(column, "-") for column in COLUMNS] for r in rows], headers=COLUMNS, tablefmt="github"))
    print(f"wrote {args.out}", file=sys.stderr)


if __name__ == "__main__":
    main()
