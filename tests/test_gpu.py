"""The GPU engine (`checker/gpu`, `--engine gpu`) gives the compiled kernel's counts, verdicts,
coverage and very traces. It runs here in numba's CUDA simulator, which numba chooses when it is
imported, so the simulated runs are made in a child process with NUMBA_ENABLE_CUDASIM=1 and their
results come back pickled. Without a GPU and without the simulator, the engine refuses by name."""

from __future__ import annotations

import json
import os
import pickle
import subprocess
import sys

import pytest

from kafka_mc import exitcodes
from kafka_mc.checker import Budget
from kafka_mc.checker.gpu import GpuUnavailable, gpu_check
from kafka_mc.checker.kernel import kernel_check
from kafka_mc.cli import main
from kafka_mc.control import ControllerConfig, ControllerModel
from kafka_mc.model import Config
from kafka_mc.properties import ALWAYS, PROPERTIES, Property

SIMULATOR = {**os.environ, "NUMBA_ENABLE_CUDASIM": "1"}
NO_SIMULATOR = {name: value for name, value in os.environ.items() if name != "NUMBA_ENABLE_CUDASIM"}
CHILD_SECONDS = 900  # a few seconds with numba's cache warm; compiling the kernel's functions cold takes minutes

# name -> (configuration, options of both engines, options of the GPU engine only)
RUNS = {
    "hw, a level a few states at a time": (Config("hw", replicas=2, messages=1, crashes=1, elections=1),
                                           {"keep_going": True}, {"chunk": 5}),
    "hw, to the first violation": (Config("hw", replicas=2, messages=1, crashes=2, elections=1), {}, {}),
    "leader-epoch": (Config("leader-epoch", replicas=2, messages=2, crashes=1, elections=1), {"keep_going": True}, {}),
    "kip-279, unclean, no flush": (Config("kip-279", replicas=2, messages=1, crashes=1, elections=2, unclean=True,
                                          flush=False), {"keep_going": True}, {}),
    "hw, a state budget": (Config("hw", replicas=2, messages=1, crashes=1, elections=1),
                           {"budget": Budget(max_states=100)}, {}),
}
CHILD = """
import pickle, sys
from kafka_mc.checker.gpu import gpu_check
with open(sys.argv[1], "rb") as given:
    runs = pickle.load(given)
results = {name: gpu_check(config, **options, **gpu_options) for name, (config, options, gpu_options) in runs.items()}
with open(sys.argv[2], "wb") as taken:
    pickle.dump(results, taken)
"""


@pytest.fixture(scope="module")
def simulated(tmp_path_factory) -> dict:
    """Every run of RUNS by the GPU engine, in the simulator, in one child process."""
    folder = tmp_path_factory.mktemp("gpu")
    (folder / "runs.pickle").write_bytes(pickle.dumps(RUNS))
    done = subprocess.run([sys.executable, "-c", CHILD, "runs.pickle", "results.pickle"], cwd=folder, env=SIMULATOR,
                          capture_output=True, text=True, timeout=CHILD_SECONDS)
    assert done.returncode == 0, done.stderr[-3000:]
    return pickle.loads((folder / "results.pickle").read_bytes())


def summary(result) -> dict:
    stats = result.stats
    return {"distinct": stats.distinct_states, "generated": stats.states_generated, "depth": stats.depth,
            "complete": result.complete, "stopped_because": result.stopped_because,
            "violations": [(v.invariant, len(v.trace)) for v in result.violations], "witnesses": result.witnesses,
            "witness lengths": {name: len(trace) for name, trace in result.witness_traces.items()},
            "coverage": result.coverage}


def traces(result) -> dict:
    return {**{v.invariant: v.trace for v in result.violations}, **result.witness_traces}


@pytest.mark.parametrize("name", RUNS)
def test_the_simulated_gpu_engine_gives_the_kernels_result(name, simulated):
    config, options, _ = RUNS[name]
    gpu, cpu = simulated[name], kernel_check(config, **options)
    assert gpu.engine == "gpu (CUDA simulator)"
    assert summary(gpu) == summary(cpu)
    assert gpu.stats.collision_probability == cpu.stats.collision_probability
    assert traces(gpu).keys() == traces(cpu).keys() and traces(gpu)
    for property_name, trace in traces(gpu).items():  # the same parent chosen for every state on the way
        expected = traces(cpu)[property_name]
        assert (trace.initial, trace.actions) == (expected.initial, expected.actions), property_name
        assert trace.states() == expected.states(), property_name


def test_the_simulated_gpu_engine_runs_from_the_command_line(capsys, tmp_path):
    argv = ["check", "--protocol", "hw", "--messages", "1", "--crashes", "2", "--elections", "1", "--coverage",
            "--format", "json", "--quiet"]
    done = subprocess.run([sys.executable, "-m", "kafka_mc", *argv, "--engine", "gpu"], cwd=tmp_path, env=SIMULATOR,
                          capture_output=True, text=True, timeout=CHILD_SECONDS)
    assert done.returncode == exitcodes.VIOLATION, done.stderr[-3000:]
    assert main([*argv, "--engine", "kernel"]) == exitcodes.VIOLATION
    gpu, cpu = json.loads(done.stdout), json.loads(capsys.readouterr().out)
    assert gpu["engine"] == "gpu (CUDA simulator)" and cpu["engine"] == "kernel"
    timing = ("engine", "seconds", "states_per_second", "compile_seconds")
    assert {k: v for k, v in gpu.items() if k not in timing} == {k: v for k, v in cpu.items() if k not in timing}


def test_without_a_gpu_or_the_simulator_the_engine_refuses_in_one_line(tmp_path):
    from numba import cuda

    if cuda.is_available():  # this process runs without the simulator
        pytest.skip("this machine has a CUDA GPU")
    done = subprocess.run([sys.executable, "-m", "kafka_mc", "check", "--engine", "gpu", "--protocol", "hw",
                           "--messages", "1", "--quiet"], cwd=tmp_path, env=NO_SIMULATOR, capture_output=True,
                          text=True, timeout=CHILD_SECONDS)
    assert done.returncode == exitcodes.BAD_INPUT and done.stdout == ""
    assert done.stderr.splitlines() == [
        ("kafka-mc: --engine gpu: no CUDA GPU found (numba.cuda.is_available() is false); run on a machine with an "
         "NVIDIA GPU (and numba-cuda installed), or set NUMBA_ENABLE_CUDASIM=1 for the (slow) simulator")]
    with pytest.raises(GpuUnavailable, match="no CUDA GPU found"):  # here too: this process has no simulator
        gpu_check(Config("hw", replicas=2, messages=1, crashes=0, elections=0))


def test_what_the_gpu_engine_lacks_is_refused_by_name(capsys):
    config = Config("hw", replicas=2, messages=1, crashes=1, elections=1)
    with pytest.raises(ValueError, match="the GPU engine has no symmetry reduction"):
        gpu_check(config, symmetry=True)
    with pytest.raises(ValueError, match="the GPU engine takes no worker count"):
        gpu_check(config, workers=2)
    mine = Property("LeaderNeverB", ALWAYS, "a test's property", lambda state: state.controller.leader != 1)
    with pytest.raises(ValueError, match="the GPU engine checks kafka-mc's own properties only, not LeaderNeverB"):
        gpu_check(config, (*PROPERTIES, mine))
    with pytest.raises(ValueError, match="the GPU engine encodes the replication model only, not the controller"):
        gpu_check(ControllerModel(ControllerConfig()))
    assert main(["check", "--engine", "gpu", "--symmetry", "--quiet"]) == exitcodes.BAD_INPUT
    assert "--symmetry: not with --engine gpu (only with --engine kernel or python or spark)" in capsys.readouterr().err
