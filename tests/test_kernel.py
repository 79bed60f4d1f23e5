"""The compiled kernel is held to the explicit model by the conformance harness (the same
successors, with their action slots, in slot order, and the same property values on every
reachable state of `kafka_mc.testing.CONFORMANCE_CONFIGS`), and `kernel_check` gives the BFS
engine's counts, verdicts and traces."""

from __future__ import annotations

import dataclasses
from pathlib import Path

import numpy as np
import pytest

from kafka_mc.checker import Budget, check
from kafka_mc.checker.kernel import kernel_check
from kafka_mc.checker.kernel.batch import KernelBatch, KernelEncoding
from kafka_mc.checker.kernel.engine import KernelStats, collision_probability
from kafka_mc.checker.kernel.explore import table_keys
from kafka_mc.checker.kernel.transitions import ACTION_NAMES
from kafka_mc.control import ControllerConfig, ControllerModel
from kafka_mc.control.replication import ReplicationSystem
from kafka_mc.model import Config, ReplicationModel
from kafka_mc.model.replication import ACTION_NAMES as MODEL_ACTION_NAMES
from kafka_mc.properties import ALWAYS, INVARIANTS, PROPERTIES
from kafka_mc.testing import CONFORMANCE_CONFIGS, check_conformance, reachable_states

def _name(config: Config) -> str:
    options = [f"r{config.replicas}", f"m{config.messages}", f"c{config.crashes}", f"e{config.elections}",
               f"acks{config.acks}", f"isr{config.min_isr}"]
    options += ["unclean"] * config.unclean + ["noflush"] * (not config.flush) + [f"p{config.partitions}"]
    options += [f"disks{config.disk_failures}"] * bool(config.disk_failures) + [f"delays{config.delays}"] * bool(
        config.delays) + ["lag"] * config.metadata_lag
    return "-".join([config.protocol, *options])


@pytest.mark.parametrize("config", CONFORMANCE_CONFIGS, ids=_name)
def test_the_kernel_computes_the_models_successors_and_property_values_on_every_reachable_state(config):
    """One configuration of the conformance list at a time (tests/test_conformance.py holds the list
    to covering every action and protocol choice)."""
    report = check_conformance(KernelEncoding(), [config], require_coverage=False)
    assert report.states > 100
    assert report.ok, report.summary()


def test_the_kernel_and_the_model_have_the_same_actions():
    assert set(ACTION_NAMES) == set(MODEL_ACTION_NAMES)


def _outcome(result):
    return (result.stats.distinct_states, result.stats.states_generated, result.stats.depth, result.complete,
            result.stopped_because, result.violations, result.witnesses, result.witness_traces)


@pytest.mark.parametrize("config, keep_going", [
    (Config("hw"), False),
    (Config("hw"), True),
    (Config("leader-epoch", replicas=3, messages=1, crashes=1, elections=1), True),
    (Config("kip-279", messages=2, crashes=2, elections=2, acks="1", flush=False), True),
    (Config("diverging-epoch", messages=1, crashes=1, elections=1, partitions=1, unclean=True), True),
    (Config("kafka-13141", replicas=3, messages=1, crashes=1, elections=1, partitions=1, acks="0"), False),
    (Config("kafka-15583", replicas=3, messages=1, crashes=1, elections=1, min_isr=2), True),
    (Config("kip-966", replicas=3, messages=1, crashes=1, elections=1, min_isr=2, unclean=True), True),
], ids=lambda value: _name(value) if isinstance(value, Config) else f"keep_going={value}")
def test_kernel_check_equals_the_bfs_engine(config, keep_going):
    kernel, reference = kernel_check(config, keep_going=keep_going), check(config, keep_going=keep_going)
    assert _outcome(kernel) == _outcome(reference)
    assert kernel.engine == "kernel"


def test_two_threads_give_the_same_results_as_one():
    config = Config("leader-epoch", replicas=3, messages=1, crashes=1, elections=1, unclean=True)
    one, two = kernel_check(config, keep_going=True), kernel_check(config, keep_going=True, workers=2)
    assert _outcome(one) == _outcome(two)
    assert two.engine == "kernel (2 threads)"


def _search_arrays(config: Config, threads: int) -> dict:
    """A whole search by the kernel with `threads` threads: its raw node numbering (every node's
    parent and action slot, every level's frontier in order), the first node of each property,
    the coverage counts, the counts and the traces."""
    import numba
    from kafka_mc.checker.kernel.engine import _Search, compile_kernel

    compile_kernel()
    before = numba.get_num_threads()
    numba.set_num_threads(min(threads, numba.config.NUMBA_NUM_THREADS))
    try:
        search, frontiers = _Search(config, PROPERTIES), []
        while search.frontier_count:
            search.run_level()
            frontiers.append(search.frontier.copy())
    finally:
        numba.set_num_threads(before)
    assert int(search.shard_counts.sum()) == search.distinct == table_keys(search.table) == search.links.count
    parents, slots = search.links.arrays()
    return {"parents": parents.tolist(), "slots": slots.tolist(),
            "frontiers": np.concatenate(frontiers).tolist(), "found_nodes": search.found_nodes.tolist(),
            "found_slots": search.found_slots.tolist(), "enabled": search.enabled.tolist(),
            "counts": (search.distinct, search.generated, len(frontiers)), "table_slots": [len(shard) for shard in search.table],
            "traces": {name: (trace.initial, tuple(trace.actions)) for name, trace in search.found().items()}}


def test_the_node_numbering_and_parent_links_do_not_depend_on_the_number_of_threads():
    """The visited table is inserted into shard by shard in parallel: the same new states, numbered
    the same, with the same parent links, next frontiers and first occurrences as with one thread."""
    config = Config("leader-epoch", replicas=3, messages=2, crashes=1, elections=1)  # about 10^5 states
    one, two = _search_arrays(config, 1), _search_arrays(config, 2)
    assert one["counts"][0] > 50_000 and len(one["traces"]) == 3 and "FollowerTruncated" in one["traces"]
    assert one == two


def test_a_table_grown_from_one_slot_a_shard_gives_the_same_search(monkeypatch):
    from kafka_mc.checker.kernel import engine
    from kafka_mc.checker.kernel.explore import SHARDS

    config = Config("leader-epoch", replicas=3, messages=1, crashes=1, elections=1, unclean=True)
    roomy, initial_slots = _search_arrays(config, 2), engine.INITIAL_TABLE_SLOTS
    monkeypatch.setattr(engine, "INITIAL_TABLE_SLOTS", 1)  # one slot in each shard: it grows from the seed on
    grown = _search_arrays(config, 2)
    assert sum(roomy["table_slots"]) == initial_slots and sum(grown["table_slots"]) > 8 * SHARDS
    assert {**grown, "table_slots": None} == {**roomy, "table_slots": None}


def test_inserting_a_batch_finds_the_keys_that_inserting_them_one_by_one_finds_new():
    from kafka_mc.checker.kernel.explore import SHARDS, insert, insert_all, new_table, table_keys

    rng = np.random.default_rng(7)
    keys = rng.integers(0, 2 ** 64, size=3000, dtype=np.uint64)
    keys = np.concatenate([keys, keys[rng.integers(0, 3000, size=2000)], np.array([0, 1, 0], dtype=np.uint64)])
    rng.shuffle(keys)
    table, counts = new_table(1), np.zeros(SHARDS, dtype=np.int64)
    first_half = insert_all(table, counts, keys[:2500])
    second_half = insert_all(table, counts, keys[2500:])
    seen: set[int] = set()
    expected = []
    for key in keys.tolist():
        expected.append(max(key, 1) not in seen)  # the fingerprint 0 is stored as 1
        seen.add(max(key, 1))
    assert np.concatenate([first_half, second_half]).tolist() == expected
    assert int(counts.sum()) == len(seen) == table_keys(table)
    assert not insert(table, np.uint64(0)) and not insert(table, keys[-1])  # one key at a time: the same table


def test_every_shard_of_a_filled_table_stays_between_the_loads_it_grows_at():
    """A shard grows by GROWTH when the next keys would take it past MAX_LOAD, so once grown its load
    stays between MAX_LOAD / GROWTH and MAX_LOAD: the table's bytes per fingerprint stay at most
    8 * GROWTH / MAX_LOAD (10.7), whatever the count (`benchmarks/visited_memory.py`: 10^9)."""
    from kafka_mc.checker.kernel.explore import GROWTH, MAX_LOAD, SHARDS, insert_all, new_table, table_slots

    rng = np.random.default_rng(11)
    table, counts = new_table(1 << 16), np.zeros(SHARDS, dtype=np.int64)
    for _ in range(5):
        assert insert_all(table, counts, rng.integers(1, 2 ** 64, size=1 << 16, dtype=np.uint64)).all()
    loads = counts / np.array([len(shard) for shard in table])
    assert loads.max() <= MAX_LOAD and loads.min() >= MAX_LOAD / GROWTH - 0.01
    assert table_slots(table) * 8 / counts.sum() <= 8 * GROWTH / MAX_LOAD + 0.1


def test_parent_links_kept_in_pages_read_back_as_appended(monkeypatch):
    from kafka_mc.checker.kernel import links

    monkeypatch.setattr(links, "PAGE", 7)  # parts that cross pages, and a page partly filled
    kept, parents, slots = links.ParentLinks(), np.arange(30, dtype=np.uint32) * 3, np.arange(30, dtype=np.uint8) % 4
    for low, high in ((0, 3), (3, 3), (3, 17), (17, 30)):
        kept.extend(parents[low:high], slots[low:high])
    assert kept.count == 30 and kept.nbytes == 5 * 7 * 5
    assert [kept.parent(node) for node in range(30)] == parents.tolist()
    assert [kept.slot(node) for node in range(30)] == slots.tolist()
    assert [a.tolist() for a in kept.arrays()] == [parents.tolist(), slots.tolist()]
    assert kept.slot_counts(9, 5).tolist() == np.bincount(slots[9:], minlength=5).tolist()


def test_a_budget_stops_the_kernel_where_it_stops_the_bfs_engine():
    config, budget = Config("leader-epoch", replicas=3, messages=1, crashes=1, elections=1), Budget(max_states=3000)
    kernel, reference = kernel_check(config, budget=budget), check(config, budget=budget)
    assert _outcome(kernel) == _outcome(reference)
    assert not kernel.complete and "budget" in kernel.stopped_because


def test_a_subset_of_the_properties_is_checked_alone():
    config = Config("hw")
    chosen = tuple(p for p in PROPERTIES if p.name in ("NoLogDivergence", "LeaderChanged"))
    kernel, reference = kernel_check(config, chosen, keep_going=True), check(config, chosen, keep_going=True)
    assert _outcome(kernel) == _outcome(reference)
    assert kernel.violated == ("NoLogDivergence",)


@pytest.mark.parametrize("config", [
    Config("hw", messages=2, crashes=2, elections=1),
    Config("leader-epoch", replicas=3, messages=1, crashes=1, elections=1, unclean=True),
    Config("kafka-13141", replicas=3, messages=1, crashes=1, elections=1, partitions=1, acks="0"),
    Config("kip-966", replicas=3, messages=0, crashes=1, elections=1, min_isr=2, delays=1, metadata_lag=True),
], ids=_name)
def test_symmetry_gives_the_bfs_engines_counts_verdicts_and_shortest_lengths(config):
    kernel, reference = kernel_check(config, keep_going=True, symmetry=True), check(config, keep_going=True,
                                                                                    symmetry=True)
    assert kernel.engine == "kernel+symmetry"
    assert (kernel.stats.distinct_states, kernel.stats.states_generated, kernel.stats.depth) == \
        (reference.stats.distinct_states, reference.stats.states_generated, reference.stats.depth)
    assert kernel.violated == reference.violated and kernel.witnesses == reference.witnesses
    assert [len(v.trace) for v in kernel.violations] == [len(v.trace) for v in reference.violations]
    for violation in kernel.violations:  # concrete traces: they replay without symmetry and break the invariant
        last = violation.trace.states()[-1]
        assert not next(p for p in INVARIANTS if p.name == violation.invariant).holds(last)
    for trace in kernel.witness_traces.values():
        trace.states()
    assert {name: len(trace) for name, trace in kernel.witness_traces.items()} == \
        {name: len(trace) for name, trace in reference.witness_traces.items()}


def test_a_property_without_a_python_function_is_refused_by_name():
    own = dataclasses.replace(INVARIANTS[0], name="Own", holds=lambda state: True)
    with pytest.raises(ValueError, match="property Own has no Python function the kernel could lower"):
        kernel_check(Config("hw", messages=1), (own,))


def test_the_kernel_reports_compile_time_apart_and_tlcs_collision_estimate():
    result = kernel_check(Config("hw"), keep_going=True)
    assert isinstance(result.stats, KernelStats) and result.stats.compile_seconds >= 0
    stats = result.stats
    assert stats.collision_probability == pytest.approx(
        stats.distinct_states * (stats.states_generated - stats.distinct_states) / 2 ** 64)
    assert collision_probability(10 ** 8, 3 * 10 ** 8) == pytest.approx(1.0842e-3, rel=1e-3)


def test_the_batch_interface_expands_and_checks_slices_of_packed_states():
    config = Config("kip-279", messages=1, crashes=1, elections=1, partitions=1)
    batch, model = KernelBatch(config), ReplicationModel(config)
    states = list(reachable_states(config))[:500]
    rows = np.stack([batch.pack(state) for state in states])
    assert [batch.state(row) for row in rows] == states
    parents, slots, fingerprints, successors, truncated = batch.expand(rows)
    expected = [(index, slot, following) for index, state in enumerate(states)
                for slot, following in model.indexed_successors(state)]
    assert [(int(p), int(s), batch.state(row)) for p, s, row in zip(parents, slots, successors)] == expected
    assert np.array_equal(fingerprints, batch.fingerprints(successors))
    assert len(set(batch.fingerprints(rows).tolist())) == len(states)
    flags = batch.flags(rows)
    for state, flag in zip(states, flags):
        for prop in PROPERTIES:
            if not prop.on_step:
                bit = bool(flag >> batch.property_names.index(prop.name) & 1)
                assert bit == (prop.holds(state) if prop.kind != ALWAYS else not prop.holds(state))
    assert truncated.dtype == np.bool_ and len(truncated) == len(expected)


def test_the_kernel_shipped_in_a_zip_is_cached_by_its_sources_not_by_the_zips_path(tmp_path, monkeypatch):
    """Every Spark job ships kafka-mc in a new zip: the kernel's cache must not depend on where."""
    import zipfile

    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "cache"))
    from kafka_mc.checker.kernel.cache import ShippedKernelLocator

    def shipped(name: str, source: bytes):
        path = tmp_path / name / "kafka_mc-x.zip"
        path.parent.mkdir()
        with zipfile.ZipFile(path, "w") as archive:
            archive.writestr("kafka_mc/checker/kernel/explore.py", source)
            archive.writestr("kafka_mc/model/state.py", b"# not the kernel")
        return str(path / "kafka_mc/checker/kernel/explore.py")

    def function():
        pass

    first, second = (ShippedKernelLocator.from_function(function, shipped(job, b"x = 1")) for job in ("a", "b"))
    changed = ShippedKernelLocator.from_function(function, shipped("c", b"x = 2"))
    assert first.get_cache_path() == second.get_cache_path() != changed.get_cache_path()
    assert first.get_cache_path().startswith(str(tmp_path / "cache" / "kafka-mc" / "kernel"))
    assert first.get_source_stamp() == second.get_source_stamp() != changed.get_source_stamp()
    assert ShippedKernelLocator.from_function(function, str(tmp_path / "a" / "kafka_mc-x.zip" / "kafka_mc/model/state.py")) is None
    assert ShippedKernelLocator.from_function(function, __file__) is None  # not in a zip: numba's own locators


def test_the_kernel_shipped_in_a_zip_uses_the_drivers_cache_of_the_same_sources_where_the_machine_has_it(
        tmp_path, monkeypatch):
    """An executor on the driver's machine loads what the driver compiled (local mode compiles once); a
    cache of other sources, or one this machine does not have, is not used."""
    import zipfile

    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "cache"))
    from kafka_mc.checker.kernel.cache import DRIVER_CACHE_ENTRY, ShippedKernelLocator

    def function():
        pass

    def located(name: str, driver: Path) -> str:
        path = tmp_path / name / "kafka_mc-x.zip"
        path.parent.mkdir()
        with zipfile.ZipFile(path, "w") as archive:
            archive.writestr("kafka_mc/checker/kernel/explore.py", b"x = 1")
            archive.writestr(f"kafka_mc/checker/kernel/{DRIVER_CACHE_ENTRY}", str(driver))
        return ShippedKernelLocator.from_function(function, str(path / "kafka_mc/checker/kernel/explore.py"))

    digest = located("probe", tmp_path / "nowhere").get_source_stamp()
    same = tmp_path / "driver" / f"sources-{digest[:32]}"
    other = tmp_path / "driver" / f"sources-{'0' * 32}"
    same.mkdir(parents=True)
    other.mkdir()
    assert located("same", same).get_cache_path() == str(same)
    user_cache = str(tmp_path / "cache" / "kafka-mc" / "kernel" / digest[:32])
    assert located("other", other).get_cache_path() == user_cache
    assert located("absent", tmp_path / "driver" / "gone" / f"sources-{digest[:32]}").get_cache_path() == user_cache


def test_the_shipped_zip_names_the_drivers_kernel_cache():
    import zipfile

    from kafka_mc.checker.kernel.cache import DRIVER_CACHE_ENTRY, SOURCES_CACHE
    from kafka_mc.checker.shipping import build_zip

    with zipfile.ZipFile(build_zip()) as archive:
        assert archive.read(f"kafka_mc/checker/kernel/{DRIVER_CACHE_ENTRY}").decode() == str(SOURCES_CACHE)


def test_the_shipped_zip_is_removed_when_the_driver_exits():
    import subprocess
    import sys
    from pathlib import Path

    written = subprocess.run(
        [sys.executable, "-c", "import kafka_mc.checker.kernel; from kafka_mc.checker.shipping import build_zip; "
                               "path = build_zip(); assert path.is_file(); print(path)"],
        capture_output=True, text=True, check=True).stdout.strip()
    assert written.endswith(".zip")
    assert not Path(written).exists() and not Path(written).parent.exists()

PROBE = "from numba import njit\n\n@njit(cache=True)\ndef double(x):\n    return 2 * x\n"
SHIPPED_RUN = """
import importlib, sys
import kafka_mc.checker
from kafka_mc.checker.numba_cache import register_shipped_locator

register_shipped_locator()
kafka_mc.checker.__path__.append(sys.argv[1] + "/kafka_mc/checker")  # as a Spark worker imports the zip's
double = importlib.import_module("kafka_mc.checker.probe").double
assert double(21) == 42 and ".zip" in double.py_func.__code__.co_filename
print(double.stats.cache_hits and "loaded" or double.stats.cache_misses and "compiled")
"""


def test_a_module_shipped_in_a_zip_is_compiled_once_whatever_the_zips_path(tmp_path):
    """Each Spark job ships kafka-mc in a new zip; numba's own locator keyed the Spark engine's
    compiled helpers on the zip's path and time, so every job's workers compiled them again and left a
    cache folder behind. Keyed on the module's source, a second job loads what the first compiled."""
    import os
    import subprocess
    import sys
    import zipfile

    from kafka_mc.checker.numba_cache import ShippedModuleLocator

    def shipped(job: str, source: str, member: str = "kafka_mc/checker/probe.py") -> str:
        path = tmp_path / job / "kafka_mc-x.zip"
        path.parent.mkdir()
        with zipfile.ZipFile(path, "w") as archive:
            archive.writestr(member, source)
        return str(path / member)

    def run(job: str, source: str = PROBE) -> str:
        environment = dict(os.environ, XDG_CACHE_HOME=str(tmp_path / "cache"))
        zipped = shipped(job, source).removesuffix("/kafka_mc/checker/probe.py")
        done = subprocess.run([sys.executable, "-c", SHIPPED_RUN, zipped],
                              capture_output=True, text=True, env=environment, timeout=120)
        assert done.returncode == 0, done.stderr
        return done.stdout.strip()

    assert [run("a"), run("b"), run("c", PROBE + "# changed\n")] == ["compiled", "loaded", "compiled"]
    assert sorted(os.listdir(tmp_path / "cache" / "kafka-mc" / "shipped")) and \
        not (tmp_path / "cache" / "numba").exists()

    def function():
        pass

    assert ShippedModuleLocator.from_function(function, shipped("kernel", PROBE, "kafka_mc/checker/kernel/x.py")) \
        is None  # the kernel's own locator's
    assert ShippedModuleLocator.from_function(function, shipped("other", PROBE, "elsewhere/probe.py")) is None
    assert ShippedModuleLocator.from_function(function, __file__) is None  # not in a zip: numba's own locators



def test_importing_the_kernel_starts_numbas_parallel_backend():
    """A kernel function loaded from numba's cache may not start the parallel backend itself (an
    entry compiled beside a cached parallel callee lacks the hook that does): the kernel package
    starts it, or such an entry runs the parallel loop with no threads (a segmentation fault)."""
    import subprocess
    import sys

    done = subprocess.run([sys.executable, "-c", "import kafka_mc.checker.kernel\n"
                           "from numba.np.ufunc import parallel\nprint(parallel._is_initialized)"],
                          capture_output=True, text=True, timeout=120)
    assert done.returncode == 0 and done.stdout.strip() == "True", done.stderr


def test_the_kernel_takes_the_replication_model_and_refuses_another_by_name():
    config = Config("hw", replicas=2, messages=1, crashes=1, elections=1)
    by_config, by_model = kernel_check(config, keep_going=True), kernel_check(ReplicationSystem(config), keep_going=True)
    assert (by_model.stats.distinct_states, by_model.violated) == (by_config.stats.distinct_states, by_config.violated)
    with pytest.raises(ValueError, match="the compiled kernel encodes the replication model only, not the controller"):
        kernel_check(ControllerModel(ControllerConfig()))


def test_importing_the_kernel_does_not_wait_for_another_processs_compile():
    """Importing prunes stale caches under the compile lock only when it is free: a process compiling
    the kernel for minutes must not hold up every other import (a fresh interpreter here)."""
    import subprocess
    import sys

    from kafka_mc.checker.kernel.cache import compile_lock

    with compile_lock():
        done = subprocess.run([sys.executable, "-c", "import kafka_mc.checker.kernel"], capture_output=True,
                              text=True, timeout=60)
    assert done.returncode == 0, done.stderr
