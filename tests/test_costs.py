"""The cost breakdown behind the README's 'Where the time goes' (`benchmarks/costs.py`)."""

import subprocess
import sys
from pathlib import Path

import pytest

from kafka_mc.checker import check
from kafka_mc.model import Config

SCRIPT = Path(__file__).resolve().parent.parent / "benchmarks" / "costs.py"
SMALL = Config("leader-epoch", replicas=2, messages=2, crashes=1, elections=1)  # no violation: explored whole


@pytest.fixture(scope="module")
def costs():
    sys.path.insert(0, str(SCRIPT.parent))
    try:
        import costs
        yield costs
    finally:
        sys.path.remove(str(SCRIPT.parent))


def test_the_parts_run_over_every_reachable_state(costs):
    rows = {row["part"].split(" (")[0]: row for row in costs.per_state_costs(SMALL, chunk=64)}
    result = check(SMALL, keep_going=True)
    enabled = result.stats.states_generated / result.stats.distinct_states
    assert rows["transitions"]["part"].endswith(f"{enabled:.2f} enabled)")
    parts = [row["us_per_state"] for name, row in rows.items() if name != "sum of the parts"]
    assert all(value > 0 for value in parts)
    assert rows["sum of the parts"]["us_per_state"] == pytest.approx(sum(parts), abs=0.1)


def test_the_two_worker_measures_come_from_real_runs(costs):
    rows = {row["measure"]: row["value"] for row in costs.scaling(SMALL)}
    states = check(SMALL, keep_going=True).stats.distinct_states
    assert float(rows["2 workers: speed-up over 1"]) > 0
    assert int(rows["1 worker: distinct states/s (mean of the two)"].replace(",", "")) > 0
    child = costs.run_child("kafka-mc --workers 2", (SMALL.protocol, SMALL.replicas, SMALL.messages,
                                                      SMALL.crashes, SMALL.elections))
    assert child["distinct"] == states and child["cpu_s"] > 0


def test_a_bad_bound_is_a_clear_error():
    run = subprocess.run([sys.executable, str(SCRIPT), "--replicas", "9"], capture_output=True, text=True)
    assert run.returncode == 2
    assert "replicas must be an integer from 2 to 5, not 9" in run.stderr and "Traceback" not in run.stderr
