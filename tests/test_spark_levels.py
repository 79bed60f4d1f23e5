"""`benchmarks/spark_levels.py`'s reading of Spark's event log: a level's jobs, stages and Python time."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "benchmarks"))
from spark_levels import level_rows  # noqa: E402


def task(stage: int, python_ms: int, written: int = 0, read: int = 0) -> dict:
    return {"Event": "SparkListenerTaskEnd", "Stage ID": stage,
            "Task Info": {"Accumulables": [{"Name": "time to execute Python code", "Update": str(python_ms)},
                                           {"Name": "duration", "Update": "5"}]},
            "Task Metrics": {"Shuffle Write Metrics": {"Shuffle Bytes Written": written},
                             "Shuffle Read Metrics": {"Local Bytes Read": read, "Remote Bytes Read": 0}}}


def job(number: int, start: int, end: int, stages: tuple[int, ...], walls: tuple[int, ...]) -> list[dict]:
    events = [{"Event": "SparkListenerJobStart", "Job ID": number, "Submission Time": start, "Stage IDs": list(stages)}]
    at = start
    for stage, wall in zip(stages, walls):
        events.append({"Event": "SparkListenerStageCompleted",
                       "Stage Info": {"Stage ID": stage, "Submission Time": at, "Completion Time": at + wall}})
        at += wall
    return events + [{"Event": "SparkListenerJobEnd", "Job ID": number, "Completion Time": end}]


def test_each_level_gets_its_jobs_stages_python_and_the_drivers_rest():
    log = (job(0, 1_010, 1_300, (0, 1), (100, 150)) + [task(0, 40, written=2 ** 20), task(1, 30), task(1, 5)]
           + job(1, 1_420, 1_800, (2, 3), (200, 160)) + [task(2, 120, written=3 * 2 ** 20), task(3, 70)]
           + job(2, 1_900, 1_950, (4, 5), (20, 20)))  # a lookup after the last level: no level's
    rows = level_rows(log, [1_000, 1_400, 1_850], [3, 24])
    assert [(r["level"], r["new_states"], r["wall_ms"], r["driver_ms"]) for r in rows] == [(0, 3, 400, 110),
                                                                                            (1, 24, 450, 70)]
    assert [(r["shuffle_ms"], r["shuffle_mb"], r["task_ms"], r["task_python_ms"])
            for r in rows] == [(100, 1.0, 150, 35), (200, 3.0, 160, 70)]


def test_a_level_of_one_partition_is_one_stage_the_level_task():
    log = job(0, 1_010, 1_300, (0,), (250,)) + [task(0, 200)]
    rows = level_rows(log, [1_000, 1_400], [3])
    assert [(r["driver_ms"], r["shuffle_ms"], r["task_ms"], r["task_python_ms"]) for r in rows] == [(110, 0, 250, 200)]


FLOOR = Path(__file__).resolve().parent.parent / "benchmarks" / "spark_floor.py"


def test_the_floor_benchmark_refuses_fewer_jobs_than_it_leaves_out():
    import subprocess

    refused = subprocess.run([sys.executable, str(FLOOR), "--jobs", "2", "--warm-up", "2"], capture_output=True, text=True)
    assert refused.returncode == 2 and "--jobs must be more than --warm-up (2), not 2" in refused.stderr


@pytest.mark.slow  # starts Spark: half a minute for a smoke run
def test_the_floor_benchmark_runs_each_shape_and_writes_its_figures(tmp_path):
    """`benchmarks/spark_floor.py` as the docs run it, with two jobs of each shape (one left out)."""
    import json
    import subprocess

    figures = tmp_path / "floor.json"
    done = subprocess.run([sys.executable, str(FLOOR), "--jobs", "2", "--warm-up", "1", "--json", str(figures)],
                          capture_output=True, text=True, cwd=tmp_path, timeout=600)
    assert done.returncode == 0, done.stderr[-3000:]
    shapes = json.loads(figures.read_text())["shapes"]
    assert list(shapes) == ["level", "one stage", "rdd"]
    assert all(0 < shape["min_s"] <= shape["median_s"] <= shape["max_s"] for shape in shapes.values())


WRITE = Path(__file__).resolve().parent.parent / "benchmarks" / "spark_level_write.py"


def test_the_level_write_benchmark_refuses_a_count_below_one():
    import subprocess

    refused = subprocess.run([sys.executable, str(WRITE), "--rows", "0"], capture_output=True, text=True)
    assert refused.returncode == 2 and "--rows must be at least 1, not 0" in refused.stderr


@pytest.mark.slow  # starts Spark: half a minute for a smoke run
def test_the_level_write_benchmark_writes_each_shape_and_its_figures(tmp_path):
    """`benchmarks/spark_level_write.py` on a small level, one timed run of each shape."""
    import json
    import subprocess

    figures = tmp_path / "write.json"
    done = subprocess.run([sys.executable, str(WRITE), "--rows", "70000", "--runs", "1", "--json", str(figures)],
                          capture_output=True, text=True, cwd=tmp_path, timeout=600)
    assert done.returncode == 0, done.stderr[-3000:]
    shapes = json.loads(figures.read_text())["shapes"]
    assert list(shapes) == ["a row per state, rows only", "a row per state", "in batches, rows only", "in batches"]
    assert all(0 < shape["min_s"] <= shape["median_s"] <= shape["max_s"] for shape in shapes.values())
