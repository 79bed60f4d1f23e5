"""A user's own property (`check --property FILE:NAME`) on Spark: the executors run it lowered on the
kernel, or in Python where it does not lower, and the run finds what the local engine finds; a
property that raises is reported as its error (exit 150, one line), as the local engines report it,
never as a violation or a traceback."""

import json
import subprocess
import sys

import pytest

from kafka_mc import exitcodes

pytest.importorskip("pyspark")

PROPERTIES = '''
def no_divergence(state):
    for a in state.replicas:
        for b in state.replicas:
            common = min(a.hw, b.hw)
            assert a.log[:common] == b.log[:common]


def broken(state):
    return state.nothing


def leaders_hw(state):
    return state.leader.hw >= 0
'''


def kafka_mc(*argv: str) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "kafka_mc", *argv], capture_output=True, text=True, timeout=600)


def test_a_users_property_runs_on_spark_as_on_the_local_engine(tmp_path):
    (tmp_path / "props.py").write_text(PROPERTIES)
    common = ["check", "--protocol", "hw", "--property", f"{tmp_path}/props.py:no_divergence", "--keep-going",
              "--quiet", "--format", "json"]
    local = kafka_mc(*common, "--engine", "python")
    spark = kafka_mc(*common, "--engine", "spark", "--spark-master", "local[2]")
    assert local.returncode == spark.returncode == exitcodes.VIOLATION, spark.stderr
    local_view, spark_view = json.loads(local.stdout), json.loads(spark.stdout)
    assert spark_view["engine"].startswith("spark") and spark_view["complete"] == local_view["complete"]
    assert (spark_view["executors_ran"], spark_view["model_because"]) == ("kernel", "")  # the property lowers
    for key in ("distinct_states", "states_generated", "depth", "stopped_because"):
        assert spark_view[key] == local_view[key], key
    assert [(v["invariant"], v["length"]) for v in spark_view["violations"]] == \
        [(v["invariant"], v["length"]) for v in local_view["violations"]] == [("no_divergence", 11)]


@pytest.mark.parametrize("name,error", [
    ("broken", "AttributeError: 'State' object has no attribute 'nothing'"),  # does not lower: the model's executors
    ("leaders_hw", "AttributeError: 'NoneType' object has no attribute 'hw'"),  # lowers: the kernel's executors
])
def test_a_users_property_that_raises_on_an_executor_is_its_error_in_one_line(tmp_path, name, error):
    (tmp_path / "props.py").write_text(PROPERTIES)
    run = kafka_mc("check", "--protocol", "hw", "--property", f"{tmp_path}/props.py:{name}", "--quiet",
                   "--engine", "spark", "--spark-master", "local[2]")
    assert run.returncode == exitcodes.BAD_SPEC and run.stdout == ""
    said = [line for line in run.stderr.splitlines() if line.startswith("kafka-mc:")]
    assert said == [f"kafka-mc: --property: property {name} raised {error}"]
    assert "Traceback" not in run.stderr
