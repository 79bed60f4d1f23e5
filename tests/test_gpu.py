"""The GPU engine (`checker/gpu`, `--engine gpu`) gives the compiled kernel's counts, verdicts,
coverage and very traces, for kafka-mc's own properties and users' own (lowered: the functions of
`tests/examples/gpu_user_properties.py`). It runs here in numba's CUDA simulator, which numba
chooses when it is imported, so the simulated runs are made in a child process with
NUMBA_ENABLE_CUDASIM=1 and their results come back pickled. Without a GPU and without the
simulator, the engine refuses by name."""

from __future__ import annotations

import json
import os
import pickle
import subprocess
import sys
from pathlib import Path

import pytest

from kafka_mc import exitcodes
from kafka_mc.checker import Budget
from kafka_mc.checker.gpu import GpuUnavailable, gpu_check
from kafka_mc.checker.kernel import kernel_check
from kafka_mc.cli import main
from kafka_mc.control import ControllerConfig, ControllerModel
from kafka_mc.control.epoch_bumps import EpochBumpSystem
from kafka_mc.model import Config
from kafka_mc.properties import ALWAYS, PROPERTIES, Property
from kafka_mc.properties.lowering import NotLowered

EXAMPLES = Path(__file__).parent / "examples"
sys.path.insert(0, str(EXAMPLES))
import gpu_user_properties as users  # noqa: E402

SIMULATOR = {**os.environ, "NUMBA_ENABLE_CUDASIM": "1"}
NO_SIMULATOR = {name: value for name, value in os.environ.items() if name != "NUMBA_ENABLE_CUDASIM"}
CHILD_SECONDS = 900  # a few seconds with numba's cache warm; compiling the kernel's functions cold takes minutes

# users' own properties: a state invariant that fails, a witness and a step invariant that fails
USERS = ("leader_keeps_committed", "a_new_leader_holds_a_record", "no_truncation_drops_a_committed_record")
# name -> (configuration, options of both engines (`properties` by name: `users.with_properties`),
# options of the GPU engine only; `initial_table_slots`, `host_slice` and `segment` set the engine's
# INITIAL_TABLE_SLOTS, HOST_SLICE and SEGMENT for that run: a chunk's new candidates are then gathered in segments
# of a few cells)
RUNS = {
    "hw, a level a few states at a time": (Config("hw", replicas=2, messages=1, crashes=1, elections=1),
                                           {"keep_going": True}, {"chunk": 20, "segment": 7}),
    "hw, to the first violation": (Config("hw", replicas=2, messages=1, crashes=2, elections=1), {}, {}),
    "leader-epoch": (Config("leader-epoch", replicas=2, messages=2, crashes=1, elections=1), {"keep_going": True}, {}),
    "leader-epoch, the visited table grown from one slot": (
        Config("leader-epoch", replicas=2, messages=2, crashes=1, elections=1), {"keep_going": True},
        {"chunk": 200, "initial_table_slots": 1, "segment": 7}),
    "hw, the visited table grown from one slot through the host": (
        Config("hw", replicas=2, messages=1, crashes=1, elections=1), {"keep_going": True},
        {"initial_table_slots": 1, "host_slice": 16, "host_growth": True}),
    "kip-279, unclean, no flush": (Config("kip-279", replicas=2, messages=1, crashes=1, elections=2, unclean=True,
                                          flush=False), {"keep_going": True}, {}),
    "hw, a state budget": (Config("hw", replicas=2, messages=1, crashes=1, elections=1),
                           {"budget": Budget(max_states=100)}, {}),
    "users' properties beside kafka-mc's, hw": (Config("hw", replicas=2, messages=1, crashes=2, elections=1),
                                                {"properties": (*(p.name for p in PROPERTIES), *USERS),
                                                 "keep_going": True}, {}),
    "users' properties, a level a few states at a time": (Config("hw", replicas=2, messages=1, crashes=1, elections=1),
                                                          {"properties": USERS}, {"chunk": 20, "segment": 1}),
    "hw with the controller's epoch bumps": (EpochBumpSystem(Config("hw", replicas=2, messages=1, crashes=2,
                                                                    elections=1)), {"keep_going": True}, {}),
    "kip-966, the leader reading the metadata late": (Config("kip-966", replicas=2, messages=1, crashes=1,
                                                             elections=1, min_isr=2, metadata_lag=True),
                                                      {"keep_going": True}, {}),
}
GROWTHS = "the visited table's growths"  # an entry of the simulated results: per run, how often it grew
CHILD = """
import pickle, sys
GROWTHS = sys.argv[4]
sys.path.insert(0, sys.argv[3])
from gpu_user_properties import with_properties
from kafka_mc.checker.gpu import engine, gpu_check
with open(sys.argv[1], "rb") as given:
    runs = pickle.load(given)
results, growths = {}, {}
default_slots, default_slice, default_segment = engine.INITIAL_TABLE_SLOTS, engine.HOST_SLICE, engine.SEGMENT
make_room = engine.GpuSearch._make_room
def counted(search, incoming):  # the visited table's growths, per run
    before = search.keys.shape[0]
    make_room(search, incoming)
    growths[name] = growths.get(name, 0) + (search.keys.shape[0] != before)
engine.GpuSearch._make_room = counted
through_host = engine.GpuSearch._grow_through_host
def counted_host(search, slots):  # those through the host
    through_host(search, slots)
    growths[name + " (host)"] = growths.get(name + " (host)", 0) + 1
engine.GpuSearch._grow_through_host = counted_host
for name, (config, options, gpu_options) in runs.items():
    gpu_options = dict(gpu_options)
    engine.INITIAL_TABLE_SLOTS = gpu_options.pop("initial_table_slots", default_slots)
    engine.HOST_SLICE = gpu_options.pop("host_slice", default_slice)
    engine.SEGMENT = gpu_options.pop("segment", default_segment)
    results[name] = gpu_check(config, **with_properties(options), **gpu_options)
results[GROWTHS] = growths
with open(sys.argv[2], "wb") as taken:
    pickle.dump(results, taken)
"""


@pytest.fixture(scope="module")
def simulated(tmp_path_factory) -> dict:
    """Every run of RUNS by the GPU engine, in the simulator, in one child process."""
    folder = tmp_path_factory.mktemp("gpu")
    (folder / "runs.pickle").write_bytes(pickle.dumps(RUNS))
    done = subprocess.run([sys.executable, "-c", CHILD, "runs.pickle", "results.pickle", str(EXAMPLES), GROWTHS], cwd=folder,
                          env=SIMULATOR, capture_output=True, text=True, timeout=CHILD_SECONDS)
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
    gpu, cpu = simulated[name], kernel_check(config, **users.with_properties(options))
    assert gpu.engine == "gpu (CUDA simulator)"
    assert summary(gpu) == summary(cpu)
    assert gpu.stats.collision_probability == cpu.stats.collision_probability
    assert traces(gpu).keys() == traces(cpu).keys() and traces(gpu)
    for property_name, trace in traces(gpu).items():  # the same parent chosen for every state on the way
        expected = traces(cpu)[property_name]
        assert (trace.initial, trace.actions) == (expected.initial, expected.actions), property_name
        assert trace.states() == expected.states(), property_name


def test_the_visited_table_grows_where_it_fills(simulated):
    """The runs that start from one slot grow their tables (and still give the kernel's result, above), one
    of them through the host (the old table freed before the new is filled from the host); the others, a few
    thousand states each, fit the initial table."""
    grown = simulated[GROWTHS]
    assert grown.get("leader-epoch, the visited table grown from one slot", 0) >= 10
    through_host = "hw, the visited table grown from one slot through the host"
    assert grown.get(through_host, 0) >= 5 and grown.get(through_host + " (host)", 0) == grown[through_host]
    assert grown.get("leader-epoch", 0) == 0
    # the others grow on the device
    assert [name for name in grown if name.endswith(" (host)")] == [through_host + " (host)"]


def test_users_properties_are_found_beside_kafka_mcs(simulated):
    found = simulated["users' properties beside kafka-mc's, hw"]
    assert {v.invariant: len(v.trace) for v in found.violations} == {
        "no_truncation_drops_a_committed_record": 7, "leader_keeps_committed": 10, "NoAckedDataLoss": 10,
        "NoCommittedDataLoss": 10, "NoConsumedRecordLost": 10}
    assert found.witnesses["a_new_leader_holds_a_record"]
    assert len(found.witness_traces["a_new_leader_holds_a_record"]) == 4


@pytest.mark.parametrize("properties", [(), (f"{EXAMPLES / 'gpu_user_properties.py'}:leader_keeps_committed",)],
                         ids=["kafka-mc's own properties", "a user's property"])
def test_the_simulated_gpu_engine_runs_from_the_command_line(properties, capsys, tmp_path):
    argv = ["check", "--protocol", "hw", "--messages", "1", "--crashes", "2", "--elections", "1", "--coverage",
            "--format", "json", "--quiet", *(f"--property={spec}" for spec in properties)]
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
    with pytest.raises(ValueError, match="host_growth must be True, False or None, not 1"):
        gpu_check(config, host_growth=1)
    mine = Property("LeaderNeverB", ALWAYS, "a test's property", lambda state: state.controller.leader != 1)
    with pytest.raises(ValueError, match="property LeaderNeverB has no Python function the kernel could lower"):
        gpu_check(config, (*PROPERTIES, mine))  # one without its Python function (`predicate`)
    with pytest.raises(NotLowered, match="property waits_for_a_leader: the statement while cannot be lowered"):
        gpu_check(config, users.chosen(("waits_for_a_leader",)))
    with pytest.raises(ValueError, match=r"property every_two_records_compared lowers to 5,561 instructions under "
                                         r"Config\(.*\), more than the GPU engine's kernels hold \(4,096\): check "
                                         r"it with --engine kernel") as too_long:
        gpu_check(Config("hw", replicas=5, messages=6, crashes=0, elections=0),
                  users.chosen(("every_two_records_compared",)))
    assert isinstance(too_long.value, NotLowered)  # which the command line reports as a property it cannot run
    with pytest.raises(ValueError, match="the GPU engine encodes the replication model only, not the controller"):
        gpu_check(ControllerModel(ControllerConfig()))
    assert main(["check", "--engine", "gpu", "--symmetry", "--quiet"]) == exitcodes.BAD_INPUT
    assert "--symmetry: not with --engine gpu (only with --engine kernel or python or spark)" in capsys.readouterr().err
