"""Where a Spark level's time goes: the driver, the shuffle's stage and the level task, the latter split
into the Python the executors ran and the JVM around it, from Spark's own event log.

    python benchmarks/spark_levels.py                                  # leader-epoch 3,2,3,1 on local[1]
    python benchmarks/spark_levels.py --config 3,4,2,1 --master local[2] --json levels.json
    python benchmarks/spark_levels.py --conf spark.shuffle.compress=false     # what a setting changes

One run of the Spark engine (`checker.spark`, the kernel on the executors) with Spark's event log
on (uncompressed, in a temporary directory). Each level is one Spark job of two stages: the shuffle
(the level before's candidates read from Parquet and written to the shuffle, no Python) and the
level task (the shuffle's read, `mapInArrow`: the level step and the expansion of its new states,
the Parquet write of both); with one partition (`local[1]`), of the level task alone, which reads
the candidates from Parquet itself. Per level it reports:

- driver: the level's wall time outside its job (planning the query, committing the Parquet
  output, the level's JSON, the accumulator), from the driver's clock and the job's start and end;
- the shuffle stage's wall time and its bytes;
- the level task's wall time, the Python code the executors ran in it (Spark's SQL metric "time
  to execute Python code", summed over the stage's tasks) and the rest (Arrow to and from the
  JVM, the shuffle's read, writing Parquet, task scheduling).

The totals line sums the levels; the kernel's own exploration of the same configuration (one thread)
is timed beside it.
"""

from __future__ import annotations

import argparse
import json
import shutil
import sys
import tempfile
import time
from collections import defaultdict
from pathlib import Path

from tabulate import tabulate

from kafka_mc.checker.kernel.engine import compile_kernel, kernel_check
from kafka_mc.checker.spark import run_spark_check, session
from kafka_mc.model import Config, ReplicationModel

PYTHON_CODE = "time to execute Python code"


def events(folder: Path) -> list[dict]:
    """The events of the one application logged in `folder`."""
    logs = [path for path in folder.rglob("*") if path.is_file() and not path.name.endswith(".crc")
            and not path.name.startswith("appstatus")]
    if len(logs) != 1:
        raise RuntimeError(f"expected one event log in {folder}, found {len(logs)}")
    return [json.loads(line) for line in logs[0].read_text().splitlines() if line.strip()]


def stage_costs(log: list[dict]) -> dict[int, dict]:
    """Per stage id: wall ms, Python ms (summed over tasks), shuffle bytes written and read."""
    stages: dict[int, dict] = defaultdict(lambda: {"wall_ms": 0, "python_ms": 0, "shuffle_written": 0,
                                                   "shuffle_read": 0})
    for event in log:
        kind = event["Event"]
        if kind == "SparkListenerStageCompleted":
            info = event["Stage Info"]
            stages[info["Stage ID"]]["wall_ms"] = info["Completion Time"] - info["Submission Time"]
        elif kind == "SparkListenerTaskEnd":
            stage = stages[event["Stage ID"]]
            for accumulable in event["Task Info"].get("Accumulables", []):
                if accumulable.get("Name") == PYTHON_CODE:
                    stage["python_ms"] += int(accumulable["Update"])
            metrics = event.get("Task Metrics") or {}
            stage["shuffle_written"] += (metrics.get("Shuffle Write Metrics") or {}).get("Shuffle Bytes Written", 0)
            read = metrics.get("Shuffle Read Metrics") or {}
            stage["shuffle_read"] += read.get("Local Bytes Read", 0) + read.get("Remote Bytes Read", 0)
    return stages


def level_rows(log: list[dict], boundaries: list[float], sizes: list[int]) -> list[dict]:
    """One row per level: the jobs that ended between two level boundaries (driver ms since the
    epoch) are that level's."""
    stages = stage_costs(log)
    jobs = {}
    for event in log:
        if event["Event"] == "SparkListenerJobStart":
            jobs[event["Job ID"]] = {"start": event["Submission Time"], "stages": sorted(event["Stage IDs"])}
        elif event["Event"] == "SparkListenerJobEnd":
            jobs[event["Job ID"]]["end"] = event["Completion Time"]
    rows = []
    for level, (begin, end) in enumerate(zip(boundaries, boundaries[1:])):
        mine = [job for job in jobs.values() if begin <= job.get("end", 0) <= end]
        # a job's first stage is the shuffle, its second the level task; with one partition its one
        # stage is the level task (a level run again with its visited sets read from the checkpoint
        # has two jobs: both count)
        shuffle = [stages[job["stages"][0]] for job in mine if len(job["stages"]) > 1]
        task = [stages[job["stages"][-1]] for job in mine]
        rows.append({
            "level": level, "new_states": sizes[level], "wall_ms": round(end - begin),
            "driver_ms": round(end - begin - sum(job["end"] - job["start"] for job in mine)),
            "shuffle_ms": sum(s["wall_ms"] for s in shuffle),
            "shuffle_mb": round(sum(s["shuffle_written"] for s in shuffle) / 2 ** 20, 1),
            "task_ms": sum(s["wall_ms"] for s in task), "task_python_ms": sum(s["python_ms"] for s in task),
        })
    return rows


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--protocol", default="leader-epoch")
    parser.add_argument("--config", default="3,2,3,1", help="R,M,C,E (replicas, messages, crashes, elections)")
    parser.add_argument("--master", default="local[1]")
    parser.add_argument("--json", type=Path, help="write the rows here")
    parser.add_argument("--conf", action="append", default=[], metavar="KEY=VALUE",
                        help="a Spark setting for the run (repeatable), to measure what it changes")
    args = parser.parse_args(argv)
    try:
        replicas, messages, crashes, elections = (int(part) for part in args.config.split(","))
    except ValueError:
        parser.error(f"--config is R,M,C,E (four integers), not {args.config!r}")
    settings = dict(item.split("=", 1) for item in args.conf if "=" in item)
    if len(settings) != len(args.conf):
        parser.error(f"--conf is KEY=VALUE, not {next(item for item in args.conf if '=' not in item)!r}")
    config = Config(args.protocol, replicas, messages, crashes, elections)
    compile_kernel()
    started = time.perf_counter()
    local = kernel_check(config, keep_going=True)
    kernel_seconds = time.perf_counter() - started

    folder = Path(tempfile.mkdtemp(prefix="kafka-mc-events-"))
    try:
        spark = session(args.master, extra={"spark.eventLog.enabled": "true", "spark.eventLog.dir": folder.as_uri(),
                                            "spark.eventLog.compress": "false",
                                            "spark.eventLog.rolling.enabled": "false",
                                            "spark.driver.memory": "4g", **settings})
        initial = len(set(ReplicationModel(config).initial_states()))
        boundaries, sizes, totals = [time.time() * 1000], [initial], [initial]

        def progress(p) -> None:
            sizes.append(p.distinct_states - totals[0])
            totals[0] = p.distinct_states

        def committed(depth: int) -> None:
            boundaries.append(time.time() * 1000)

        started = time.perf_counter()
        result, _ = run_spark_check(config, keep_going=True, spark=spark, progress=progress, level_hook=committed)
        spark_seconds = time.perf_counter() - started
        spark.stop()
        rows = level_rows(events(folder), boundaries, sizes)
    finally:
        shutil.rmtree(folder, ignore_errors=True)
    if (result.stats.distinct_states, result.stats.states_generated) != \
            (local.stats.distinct_states, local.stats.states_generated):
        raise SystemExit("the Spark engine and the kernel disagree: not a run to measure")
    total = {key: sum(row[key] for row in rows) for key in rows[0] if key != "level"}
    table = [[row["level"], f"{row['new_states']:,}", row["wall_ms"], row["driver_ms"], row["shuffle_ms"],
              row["shuffle_mb"], row["task_ms"], row["task_python_ms"]] for row in rows]
    table.append(["all", f"{total['new_states']:,}", total["wall_ms"], total["driver_ms"], total["shuffle_ms"],
                  round(total["shuffle_mb"], 1), total["task_ms"], total["task_python_ms"]])
    print(tabulate(table, ["level", "new states", "wall ms", "driver ms", "shuffle ms", "shuffle MB",
                           "level task ms", "of it Python"], tablefmt="github"))
    print(f"\n{config.protocol} {args.config} on {args.master}: {result.stats.distinct_states:,} states in "
          f"{spark_seconds:.1f} s on Spark ({result.stats.distinct_states / spark_seconds:,.0f} states/s), "
          f"{kernel_seconds:.1f} s on the kernel with one thread "
          f"({local.stats.distinct_states / kernel_seconds:,.0f} states/s)", file=sys.stderr)
    if args.json:
        args.json.write_text(json.dumps({"config": config.to_dict(), "master": args.master, "settings": settings,
                                         "spark_seconds": spark_seconds, "kernel_seconds": kernel_seconds,
                                         "levels": rows}, indent=1))


if __name__ == "__main__":
    main()
