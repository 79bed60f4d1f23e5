"""The Spark engine against the local engine: wall time, states/s, speed-up, driver peak memory,
Spark's overhead per level.

    python benchmarks/spark_bench.py [--configs small,medium] [--masters local,local[1],local[2]]
                                     [--cluster] [--json out.json]

`local` is the local engine (`checker.bfs.check`, one process). `--cluster` also starts a
standalone master with one worker, then two (1 core each), on 127.0.0.1, from the installed
pyspark. Every Spark run is checked against the local engine's counts. The driver's peak memory
is its Python process's peak RSS plus its JVM's (read from /proc while the run goes on).
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import sys
import threading
import time
from pathlib import Path

from kafka_mc.checker import check
from kafka_mc.model import Config

CONFIGS = {
    "tiny": Config(protocol="hw", messages=1, crashes=1, elections=1),  # 352 states
    "small": Config(protocol="leader-epoch"),  # 6,462
    "medium": Config(protocol="leader-epoch", messages=3, crashes=2, elections=2),
    "large": Config(protocol="leader-epoch", replicas=3, messages=2, crashes=2, elections=2),
}


def _rss_kib(pid: int) -> int:
    try:
        for line in Path(f"/proc/{pid}/status").read_text().splitlines():
            if line.startswith("VmRSS:"):
                return int(line.split()[1])
    except OSError:
        pass
    return 0


class PeakMemory:
    """Peak RSS of the driver's JVM (a child of this process), sampled every 0.2 s."""

    def __init__(self):
        self.peak_jvm = 0
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._sample, daemon=True)

    def _jvms(self):
        me = str(os.getpid())
        for entry in Path("/proc").iterdir():
            if entry.name.isdigit():
                try:
                    fields = (entry / "stat").read_text().rsplit(")", 1)[1].split()
                except OSError:
                    continue
                if fields[1] == me:
                    yield int(entry.name)

    def _sample(self):
        while not self._stop.is_set():
            self.peak_jvm = max(self.peak_jvm, sum(_rss_kib(pid) for pid in self._jvms()))
            time.sleep(0.2)

    def __enter__(self):
        self._thread.start()
        return self

    def __exit__(self, *exc):
        self._stop.set()
        self._thread.join()


def run_local(config: Config) -> dict:
    started = time.perf_counter()
    result = check(config, keep_going=True)
    seconds = time.perf_counter() - started
    return {"engine": "local", "seconds": seconds, "distinct_states": result.stats.distinct_states,
            "states_generated": result.stats.states_generated, "depth": result.stats.depth, "cores": 1}


def run_spark(config: Config, master: str, cores: int, partitions: int) -> dict:
    from kafka_mc.checker.spark import run_spark_check, session

    extra = {"spark.driver.host": "127.0.0.1", "spark.driver.bindAddress": "127.0.0.1"} \
        if master.startswith("spark://") else {}
    with PeakMemory() as memory:
        spark = session(master, partitions, app_name="kafka-mc-bench", extra=extra)
        try:
            started = time.perf_counter()
            result, run = run_spark_check(config, keep_going=True, spark=spark, partitions=partitions)
            seconds = time.perf_counter() - started
        finally:
            spark.stop()
    levels = run.level_seconds
    return {"engine": f"spark {master}", "seconds": seconds, "distinct_states": result.stats.distinct_states,
            "states_generated": result.stats.states_generated, "depth": result.stats.depth, "cores": cores,
            "executors": run.executors, "partitions": run.partitions,
            "driver_python_peak_mib": resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024,
            "driver_jvm_peak_mib": memory.peak_jvm / 1024,
            "median_level_seconds": sorted(levels)[len(levels) // 2] if levels else None}


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--configs", default="tiny,small")
    parser.add_argument("--masters", default="local,local[1],local[2]")
    parser.add_argument("--cluster", action="store_true")
    parser.add_argument("--json")
    args = parser.parse_args()
    rows = []
    for name in args.configs.split(","):
        config = CONFIGS[name]
        local = run_local(config)
        local["config"] = name
        rows.append(local)
        print(json.dumps(local), flush=True)
        targets = []
        for master in args.masters.split(","):
            if master != "local":
                cores = int(master[6:-1]) if master.startswith("local[") else 1
                targets.append((master, cores, None))
        if args.cluster:
            sys.path.insert(0, str(Path(__file__).parent.parent / "tests"))
            from test_spark_cluster import Cluster  # the tests' cluster: master and two 1-core workers

            import tempfile

            cluster = Cluster(Path(tempfile.mkdtemp(prefix="kafka-mc-bench-cluster-")))
            try:
                row = run_spark(config, cluster.url, 2, 2)
                row.update(config=name, engine="spark standalone, 2 workers")
                rows.append(row)
                print(json.dumps(row), flush=True)
                Cluster.kill(cluster.workers[1])
                time.sleep(2)
                row = run_spark(config, cluster.url, 1, 2)
                row.update(config=name, engine="spark standalone, 1 worker")
                rows.append(row)
                print(json.dumps(row), flush=True)
            finally:
                cluster.stop()
        for master, cores, _ in targets:
            row = run_spark(config, master, cores, max(cores, 2))
            row["config"] = name
            rows.append(row)
            print(json.dumps(row), flush=True)
        for row in rows:
            if row["config"] == name:
                assert (row["distinct_states"], row["states_generated"], row["depth"]) == \
                    (local["distinct_states"], local["states_generated"], local["depth"]), row
                row["states_per_second"] = row["distinct_states"] / row["seconds"]
                row["states_per_second_per_core"] = row["states_per_second"] / row["cores"]
                row["speed_up_vs_local"] = local["seconds"] / row["seconds"]
    if args.json:
        Path(args.json).write_text(json.dumps(rows, indent=1))
    header = ("config", "engine", "distinct", "seconds", "states/s", "per core", "vs local", "driver JVM MiB",
              "level s")
    print(" | ".join(header))
    for row in rows:
        print(" | ".join(str(x) for x in (row["config"], row["engine"], row["distinct_states"],
                                          f"{row['seconds']:.1f}", f"{row['states_per_second']:.0f}",
                                          f"{row['states_per_second_per_core']:.0f}",
                                          f"{row['speed_up_vs_local']:.3f}",
                                          f"{row.get('driver_jvm_peak_mib', 0):.0f}",
                                          row.get("median_level_seconds"))))


if __name__ == "__main__":
    main()
