"""The Spark engine against the local engines, on the ladder of `benchmarks/bench.py`.

For each rung (leader-epoch, no violation: every run explores the whole space) this runs the
local engines (the Python engine and the compiled kernel, one process, one thread; the kernel with
two threads too), Spark
`local[1]` and `local[2]`, and a standalone cluster on 127.0.0.1 with two workers and then one
(one core each), every run in a fresh child process, and reports wall time, distinct states/s,
states/s per core, the CPU seconds of its processes (the driver's tree, in local mode with its JVM and
Python workers, and every executor's tree; Spark's over the run, before its session stops), the
speed-up over the Python engine and over the kernel, the peak RSS of the
driver (its Python and JVM) and of
the largest executor (its JVM and Python workers), and Spark's cost per level: a least-squares
line through each level's seconds against its new states gives the fixed overhead of a level
(its intercept) and the cost of a state (its slope); the same line through the levels past the
first, whose seconds also hold the run's start (the Python workers start and load the kernel),
and the first level's seconds.

    python benchmarks/spark_bench.py --up-to 500000              # rungs expected below that size
    python benchmarks/spark_bench.py --rungs 8 --setups cluster  # the 1.3e7 rung on the cluster only
    python benchmarks/spark_bench.py --save rows.json            # keep the rows as they come
    python benchmarks/spark_bench.py --executors python          # Spark's executors on the explicit model
    python benchmarks/spark_bench.py --config 2,1,1,1 --setups local[1]   # a tiny space: the fixed cost of a level

Setups: python, kernel, kernel[2] (the local engines; kernel[2]: two threads), local[1], local[2], cluster
(two workers, then one).
Spark runs with the engine's default partitions (Spark's default parallelism: one per core of
local[N]) unless --partitions says otherwise. The kernel's compile time (or loading it from
numba's cache) is left out of its wall time; on Spark it falls in the first level (the
executors' cache is warm after the first run).
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path

from tabulate import tabulate

sys.path.insert(0, str(Path(__file__).parent))
sys.path.insert(0, str(Path(__file__).parent.parent / "tests"))
from bench import LADDER  # noqa: E402  (the speed ladder: protocol, replicas, messages, crashes, elections)

EXECUTOR = "CoarseGrainedExecutorBackend"  # the main class on a Spark executor JVM's command line
SETUPS = ("python", "kernel", "kernel[2]", "local[1]", "local[2]", "cluster")  # kernel[2]: the kernel, 2 threads


# ------------------------------------------------------------------------------ memory


def _processes() -> dict[int, tuple[int, str, int, int]]:
    """pid -> (parent pid, command line, RSS KiB, CPU clock ticks: its own and its reaped children's)
    of every process."""
    table = {}
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        try:
            fields = (entry / "stat").read_text().rsplit(")", 1)[1].split()
            parent, ticks = int(fields[1]), sum(int(field) for field in fields[11:15])  # utime stime cutime cstime
            command = (entry / "cmdline").read_bytes().replace(b"\0", b" ").decode(errors="replace")
            rss = next((int(line.split()[1]) for line in (entry / "status").read_text().splitlines()
                        if line.startswith("VmRSS:")), 0)
        except (OSError, IndexError, ValueError):
            continue
        table[int(entry.name)] = (parent, command, rss, ticks)
    return table


def _tree_sum(table: dict, root: int, field: int) -> int:
    """The sum of a field of `_processes` (2: RSS KiB, 3: CPU ticks) over `root` and its descendants."""
    total, stack = 0, [root]
    while stack:
        pid = stack.pop()
        if pid in table:
            total += table[pid][field]
            stack += [child for child, (parent, *_) in table.items() if parent == pid]
    return total


def _cpu_seconds() -> float:
    """CPU seconds so far of this process's tree (in local mode: its JVM and Spark's Python workers)
    and of every Spark executor's tree (a cluster's: its JVM and Python workers)."""
    table = _processes()
    roots = [os.getpid()] + [pid for pid, (_, command, *_) in table.items()
                             if EXECUTOR in command]
    return sum(_tree_sum(table, root, 3) for root in roots) / os.sysconf("SC_CLK_TCK")


def _descends(table: dict, pid: int, ancestors: tuple[int, ...]) -> bool:
    while pid in table and pid not in ancestors:
        pid = table[pid][0]
    return pid in ancestors


class PeakMemory:
    """Samples every 0.5 s: the driver's tree (the child process: its Python, its JVM and, in local
    mode, the Python workers) and each executor's tree (an executor JVM started by one of
    `workers`, the cluster's worker processes, and its Python workers)."""

    def __init__(self, driver_pid: int, workers: tuple[int, ...] = ()):
        self.driver_pid, self.workers, self.driver_kib, self.executor_kib = driver_pid, workers, 0, 0
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._sample, daemon=True)

    def _sample(self):
        while not self._stop.is_set():
            table = _processes()
            self.driver_kib = max(self.driver_kib, _tree_sum(table, self.driver_pid, 2))
            for pid, (parent, command, *_) in table.items():
                if EXECUTOR in command and _descends(table, pid, self.workers):
                    self.executor_kib = max(self.executor_kib, _tree_sum(table, pid, 2))
            time.sleep(0.5)

    def __enter__(self):
        self._thread.start()
        return self

    def __exit__(self, *exc):
        self._stop.set()
        self._thread.join()


# ------------------------------------------------------------------------------- child


def child(setup: str, rung: list, master: str, cores: int, executor_memory: str, executors: str,
          partitions: int | None = None) -> dict:
    """In the child process: one complete exploration, as a JSON-ready row (Spark's partitions:
    `partitions`, else the engine's default, Spark's default parallelism: one per core)."""
    from kafka_mc.checker import check
    from kafka_mc.model import Config

    protocol, replicas, messages, crashes, elections = rung
    config = Config(protocol, replicas, messages, crashes, elections)
    local = setup == "python" or setup.startswith("kernel")
    if setup.startswith("kernel"):
        from kafka_mc.checker.kernel.engine import compile_kernel, kernel_check

        compile_kernel()
    started, cpu_started = time.perf_counter(), _cpu_seconds()
    if local:
        result = (check(config, keep_going=True) if setup == "python" else
                  kernel_check(config, keep_going=True, workers=cores))
        cpu = _cpu_seconds() - cpu_started
        levels, from_disk = [], None
    else:
        from kafka_mc.checker.spark import run_spark_check, session

        extra = {"spark.driver.memory": "4g", "spark.executor.memory": executor_memory}
        if master.startswith("spark://"):
            extra.update({"spark.driver.host": "127.0.0.1", "spark.driver.bindAddress": "127.0.0.1",
                          "spark.cores.max": str(cores)})
        sizes = []
        spark = session(master, partitions, app_name="kafka-mc-bench", extra=extra)
        started, cpu_started = time.perf_counter(), _cpu_seconds()
        try:
            result, run = run_spark_check(config, keep_going=True, spark=spark, partitions=partitions,
                                          progress=lambda p: sizes.append(p.distinct_states),
                                          kernel=executors == "kernel")
            cpu = _cpu_seconds() - cpu_started  # before the session stops, while its processes live
        finally:
            spark.stop()
        from kafka_mc.model import ReplicationModel

        before = [len(ReplicationModel(config).initial_states())] + sizes[:-1]
        levels = list(zip([after - prior for prior, after in zip(before, sizes)], run.level_seconds))
        partitions, from_disk = run.partitions, getattr(run, "levels_from_disk", None)
    seconds = time.perf_counter() - started
    return {"setup": setup if local else f"{setup} ({executors})", "master": master,
            "cores": cores, "partitions": None if local else partitions,
            "seconds": seconds, "cpu_seconds": cpu, "distinct": result.stats.distinct_states,
            "generated": result.stats.states_generated, "depth": result.stats.depth, "levels": levels,
            "levels_from_disk": from_disk}


def _level_line(levels: list) -> tuple[float | None, float | None]:
    """Least squares of level seconds on new states: (seconds per level, microseconds per state)."""
    if len(levels) < 3:
        return None, None
    xs, ys = [x for x, _ in levels], [y for _, y in levels]
    n, mx, my = len(xs), sum(xs) / len(xs), sum(ys) / len(ys)
    sxx = sum((x - mx) ** 2 for x in xs)
    if sxx == 0:
        return None, None
    slope = sum((x - mx) * (y - my) for x, y in levels) / sxx
    return my - slope * mx, slope * 1e6


def measure(setup: str, rung: tuple, master: str, cores: int, executor_memory: str, executors: str,
            workers: tuple[int, ...] = (), partitions: int | None = None) -> dict:
    """Run one setup on one rung in a child process, sampling memory from here (`workers`: the
    cluster's worker processes, whose executors are sampled)."""
    arguments = json.dumps([setup, list(rung[:5]), master, cores, executor_memory, executors, partitions])
    with tempfile.TemporaryFile("w+") as errors:
        process = subprocess.Popen([sys.executable, __file__, "--child", arguments], stdout=subprocess.PIPE,
                                   stderr=errors, text=True)
        with PeakMemory(process.pid, workers) as memory:
            output, _ = process.communicate()
        if process.returncode != 0:
            errors.seek(0)
            tail = [line for line in errors.read().splitlines() if "WARN" not in line][-15:]
            raise RuntimeError(f"{setup} on {rung} failed (exit {process.returncode}):\n" + "\n".join(tail))
    row = json.loads(output.strip().splitlines()[-1])
    levels = row.pop("levels")
    overhead, per_state = _level_line(levels)
    # the same line past the first level, whose seconds also hold the run's start (the executors'
    # Python workers start and load the kernel), once a run
    row["level_overhead_past_first_s"], _ = _level_line(levels[1:])
    row["first_level_s"] = levels[0][1] if levels else None
    row["level_seconds"] = [[states, round(seconds, 3)] for states, seconds in levels]  # (new states, seconds)
    # a level's seconds, the median past the first (where the executors load the kernel)
    row["median_level_s"] = sorted(y for _, y in levels[1:])[(len(levels) - 1) // 2] if len(levels) > 1 else None
    protocol, replicas, messages, crashes, elections = rung[:5]
    row.update(rung=f"r={replicas} m={messages} c={crashes} e={elections}",
               distinct_per_s=row["distinct"] / row["seconds"],
               per_core=row["distinct"] / row["seconds"] / cores,
               driver_peak_mb=memory.driver_kib / 1024, executor_peak_mb=memory.executor_kib / 1024 or None,
               level_overhead_s=overhead, us_per_state=per_state)
    return row


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--child", help=argparse.SUPPRESS)
    parser.add_argument("--up-to", type=float, default=None, help="only rungs expected below this many states")
    parser.add_argument("--rungs", default=None, help="rung numbers, 1-based, comma-separated")
    parser.add_argument("--setups", default=",".join(SETUPS), help="comma-separated: " + ", ".join(SETUPS))
    parser.add_argument("--executor-memory", default="8g", help="each executor's heap (default 8g)")
    parser.add_argument("--save", help="append each row to this JSON file as it comes")
    parser.add_argument("--executors", choices=("kernel", "python"), default="kernel",
                        help="what Spark's executors run: the compiled kernel (default) or the explicit model")
    parser.add_argument("--partitions", type=int, default=None,
                        help="Spark's partitions (default: the engine's, one per core)")
    parser.add_argument("--config", default=None,
                        help="a configuration instead of the ladder: REPLICAS,MESSAGES,CRASHES,ELECTIONS "
                             "(leader-epoch), for example 2,1,1,1 for the fixed cost of a level")
    args = parser.parse_args()
    if args.child:
        print(json.dumps(child(*json.loads(args.child))))
        return
    setups = args.setups.split(",")
    unknown = [s for s in setups if s not in SETUPS]
    if unknown:
        parser.error(f"--setups: {', '.join(unknown)} not among {', '.join(SETUPS)}")
    rungs = LADDER if not args.rungs else [LADDER[int(n) - 1] for n in args.rungs.split(",")]
    rungs = [r for r in rungs if args.up_to is None or r[5] <= args.up_to]
    if args.config:
        rungs = [("leader-epoch", *(int(n) for n in args.config.split(",")), 0)]
    rows: list[dict] = []

    def keep(row: dict) -> None:
        rows.append(row)
        print(json.dumps(row), flush=True)
        if args.save:
            Path(args.save).write_text(json.dumps(rows, indent=1))

    for rung in rungs:
        first = len(rows)
        for setup in setups:
            if setup == "cluster":
                from test_spark_cluster import Cluster  # the tests' standalone cluster on 127.0.0.1

                cluster = Cluster(Path(tempfile.mkdtemp(prefix="kafka-mc-bench-cluster-")), memory="10g")
                try:
                    workers = tuple(worker.pid for worker in cluster.workers)
                    keep(dict(measure("cluster", rung, cluster.url, 2, args.executor_memory, args.executors,
                                      workers, args.partitions), setup=f"cluster, 2 workers ({args.executors})"))
                    Cluster.kill(cluster.workers[1])
                    time.sleep(3)
                    keep(dict(measure("cluster", rung, cluster.url, 1, args.executor_memory, args.executors,
                                      workers, args.partitions), setup=f"cluster, 1 worker ({args.executors})"))
                finally:
                    cluster.stop()
            else:
                master = setup if setup.startswith("local[") else "-"
                cores = int(setup[setup.index("[") + 1:-1]) if "[" in setup else 1  # local[N], kernel[N]
                keep(measure(setup, rung, master, cores, args.executor_memory, args.executors,
                             partitions=args.partitions))
        python = next((r for r in rows[first:] if r["setup"] == "python"), None)
        kernel = next((r for r in rows[first:] if r["setup"] == "kernel"), None)
        for row in rows[first:]:  # every engine explores the same space
            assert (row["distinct"], row["generated"]) == (rows[first]["distinct"], rows[first]["generated"]), row
            row["vs_python"] = python["seconds"] / row["seconds"] if python else None
            row["vs_kernel"] = kernel["seconds"] / row["seconds"] if kernel else None
    print(f"\n{platform.processor() or platform.machine()}, {os.cpu_count()} cores, Python {platform.python_version()}, "
          f"load average {os.getloadavg()[0]:.1f} at the end\n")
    print(tabulate([[r["rung"], r["setup"], r["distinct"], round(r["seconds"], 1), round(r["cpu_seconds"], 1),
                     round(r["distinct_per_s"]),
                     round(r["per_core"]), r["vs_python"] and round(r["vs_python"], 3),
                     r["vs_kernel"] and round(r["vs_kernel"], 3), round(r["driver_peak_mb"]),
                     r["executor_peak_mb"] and round(r["executor_peak_mb"]),
                     r["level_overhead_s"] and round(r["level_overhead_s"], 2),
                     r["level_overhead_past_first_s"] and round(r["level_overhead_past_first_s"], 2),
                     r["first_level_s"] and round(r["first_level_s"], 2),
                     r["us_per_state"] and round(r["us_per_state"], 1),
                     r.get("median_level_s") and round(r["median_level_s"], 2)] for r in rows],
                   headers=["rung", "setup", "distinct", "wall s", "CPU s", "states/s", "per core", "vs python", "vs kernel",
                            "driver MB", "executor MB", "s/level", "past the first", "first level s", "us/state", "median level s"]))


if __name__ == "__main__":
    main()
