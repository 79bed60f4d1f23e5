"""The compiled kernel's first compile, cold: what a user waits for after an install or an upgrade.

A fresh child process turns numba's on-disk cache off for every kernel function (nothing is read from
it or written to it), then compiles the kernel as `kafka-mc check --engine kernel` does on its first
run (`checker.kernel.engine.compile_kernel`). It reports the wall time, the child's peak RSS, and the
functions that took longest, each with numba's own split: all of its compile (`compiler_lock`) and the
part spent in LLVM (`llvm_lock`); the rest is numba's typing and lowering. A function's times
include those of the functions it compiled first (`explore_level` holds `expand_block`, which holds
`apply`).

    python benchmarks/compile_bench.py
    python benchmarks/compile_bench.py --out benchmarks/compile_results.json
"""

from __future__ import annotations

import argparse
import json
import resource
import subprocess
import sys
import time

from bench import machine

SLOWEST = 6  # functions listed


def compile_cold() -> dict:
    """In the child: the kernel compiled with numba's cache off, as a JSON-ready row."""
    started = time.perf_counter()
    from numba.core.caching import NullCache
    from numba.core.registry import CPUDispatcher

    from kafka_mc.checker.kernel import engine, explore, invariants, transitions, user_properties

    dispatchers = {}
    for module in (explore, invariants, transitions, user_properties):
        for name, value in vars(module).items():
            if isinstance(value, CPUDispatcher) and value.py_func.__module__ == module.__name__:
                value._cache = NullCache()  # numba's own "no cache" (what cache=False installs)
                dispatchers[f"{module.__name__.rsplit('.', 1)[-1]}.{name}"] = value
    imported = time.perf_counter()
    engine.compile_kernel()
    compiled = time.perf_counter()
    timers = []
    for name, dispatcher in dispatchers.items():
        for signature in dispatcher.signatures:
            spent = (dispatcher.get_metadata(signature) or {}).get("timers", {})
            if spent:
                timers.append({"function": name, "compile_s": round(spent.get("compiler_lock", 0.0), 1),
                               "llvm_s": round(spent.get("llvm_lock", 0.0), 1)})
    timers.sort(key=lambda row: -row["compile_s"])
    return {
        "import_s": round(imported - started, 1),
        "compile_s": round(compiled - imported, 1),
        "peak_rss_mb": resource.getrusage(resource.RUSAGE_SELF).ru_maxrss // 1024,
        "functions_compiled": len(timers),
        "slowest": timers[:SLOWEST],
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--out", metavar="FILE", help="also write the result as JSON to FILE")
    parser.add_argument("--child", action="store_true", help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.child:
        print(json.dumps(compile_cold()))
        return
    done = subprocess.run([sys.executable, __file__, "--child"], capture_output=True, text=True)
    if done.returncode != 0:
        sys.exit(f"compile_bench: the child process failed (exit {done.returncode}):\n{done.stderr[-4000:]}")
    row = json.loads(done.stdout.strip().splitlines()[-1])
    row["machine"] = machine()
    text = json.dumps(row, indent=2)
    print(text)
    if args.out:
        with open(args.out, "w") as out:
            out.write(text + "\n")


if __name__ == "__main__":
    main()
