"""The Spark engine (local[2]) against the local engine: counts, verdicts, shortest traces."""

from __future__ import annotations

import json
import re
import sys
from pathlib import Path

import pytest

from kafka_mc.checker import Budget, check
from kafka_mc.model import Config
from kafka_mc.properties import ALWAYS, PROPERTIES, Property

pyspark = pytest.importorskip("pyspark")

from kafka_mc.checker.spark import (CHECKPOINT_FILE, CheckpointError, read_checkpoint,  # noqa: E402
                                    run_spark_check, session, spark_check)


@pytest.fixture(scope="module")
def spark():
    spark = session("local[2]", 2, app_name="kafka-mc-tests")
    yield spark
    spark.stop()


def assert_same(spark_result, local_result):
    """Everything the issue asks to be identical, and the traces themselves."""
    s, l = spark_result, local_result
    assert (s.stats.distinct_states, s.stats.states_generated, s.stats.depth) == \
        (l.stats.distinct_states, l.stats.states_generated, l.stats.depth)
    assert (s.complete, s.stopped_because, s.witnesses) == (l.complete, l.stopped_because, l.witnesses)
    assert [(v.invariant, len(v.trace)) for v in s.violations] == [(v.invariant, len(v.trace)) for v in l.violations]
    assert {n: len(t) for n, t in s.witness_traces.items()} == {n: len(t) for n, t in l.witness_traces.items()}
    properties = {p.name: p for p in PROPERTIES}
    for violation in s.violations:  # every trace replays without symmetry and ends in a violation
        states = violation.trace.states()
        assert not properties[violation.invariant].holds(states[-1])
    for name, trace in s.witness_traces.items():  # and every witness trace ends where it holds
        states = trace.states()
        prop = properties[name]
        assert prop.holds(states[-2], trace.actions[-1], states[-1]) if prop.on_step else prop.holds(states[-1])


TRUNCATING = Config(protocol="hw", messages=2, crashes=1, elections=1)  # a follower truncates at depth 7
CASES = [
    # (config, keep_going, symmetry, executors run the kernel, partitions: one has no shuffle)
    (Config(protocol="hw", messages=1, crashes=1, elections=1, unclean=True), False, False, True, 2),
    (Config(protocol="hw", messages=1, crashes=1, elections=1, unclean=True), False, True, True, 2),
    (Config(protocol="hw", messages=1, crashes=1, elections=1, unclean=True), False, True, False, 2),
    (Config(protocol="leader-epoch", messages=1, crashes=1, elections=0), True, True, True, 2),
    (TRUNCATING, True, False, True, 2),
    (TRUNCATING, True, False, False, 2),
    (TRUNCATING, True, False, True, 1),
    (Config(protocol="hw", messages=1, crashes=1, elections=1, unclean=True), False, True, False, 1),
]


@pytest.mark.parametrize("config,keep_going,symmetry,kernel,partitions", CASES,
                         ids=["hw", "hw-symmetry", "hw-symmetry-explicit-model", "leader-epoch-keep-going-symmetry",
                              "truncating-keep-going", "truncating-keep-going-explicit-model",
                              "truncating-keep-going-one-partition", "hw-symmetry-explicit-model-one-partition"])
def test_same_as_local_engine(spark, config, keep_going, symmetry, kernel, partitions):
    levels = []
    result, run = run_spark_check(config, keep_going=keep_going, symmetry=symmetry, spark=spark,
                                  progress=levels.append, kernel=kernel, partitions=partitions)
    assert result.engine == "spark" + ("+symmetry" if symmetry else "") and run.kernel == kernel
    assert run.partitions == partitions
    assert_same(result, check(config, keep_going=keep_going, symmetry=symmetry))
    assert levels and levels[-1].distinct_states == result.stats.distinct_states


BUMPED = Config(protocol="hw", messages=1, crashes=2, elections=1)  # a loss with the bump, 10 steps


@pytest.mark.parametrize("symmetry,kernel", [(False, True), (True, True), (False, False)],
                         ids=["kernel", "kernel-symmetry", "explicit-model"])
def test_the_controllers_epoch_bumps_run_on_spark_as_on_the_local_engines(spark, symmetry, kernel):
    """`--epoch-bumps` on Spark: the executors run the kernel with the bump (or the bump model
    itself), with the local engines' counts, verdicts, shortest lengths, and traces of the bump
    model."""
    from kafka_mc.checker.kernel import kernel_check
    from kafka_mc.control.epoch_bumps import EpochBumpSystem

    system = EpochBumpSystem(BUMPED)
    result, run = run_spark_check(system, keep_going=True, symmetry=symmetry, spark=spark, kernel=kernel)
    assert run.kernel == kernel and result.violations
    local = kernel_check(system, keep_going=True, symmetry=symmetry)
    assert_same(result, local)
    plain = check(BUMPED, keep_going=True)  # without the bump: another state space
    assert plain.stats.distinct_states != result.stats.distinct_states
    for violation in result.violations:  # every trace is one of the bump model
        assert violation.trace.model.name == EpochBumpSystem.name


@pytest.mark.slow  # the bump on Spark, shorter: test_the_controllers_epoch_bumps_run_on_spark_as_on_the_local_engines
def test_check_epoch_bumps_on_spark_from_the_command_line(tmp_path):
    import subprocess
    import sys

    from kafka_mc.checker.kernel import kernel_check
    from kafka_mc.control.epoch_bumps import EpochBumpSystem

    argv = ["--protocol", "hw", "--messages", "1", "--crashes", "2", "--elections", "1", "--keep-going", "--symmetry",
            "--epoch-bumps", "--format", "json", "--quiet"]
    run = subprocess.run([sys.executable, "-m", "kafka_mc", "check", "--engine", "spark", "--spark-master", "local[1]",
                          *argv], capture_output=True, text=True, cwd=tmp_path, timeout=600)
    local = kernel_check(EpochBumpSystem(BUMPED), keep_going=True, symmetry=True)
    assert run.returncode == 12, run.stderr[-3000:]
    view = json.loads(run.stdout)
    assert view["model"] == "replication-epoch-bumps" and view["distinct_states"] == local.stats.distinct_states
    assert {v["invariant"]: v["length"] for v in view["violations"]} == \
        {v.invariant: len(v.trace) for v in local.violations}


def test_a_step_witness_reached_by_any_edge_key_is_reported():
    """Edge keys are signed: a level's least key of a step witness may be negative (a run once
    dropped those as if the witness had not been reached)."""
    from kafka_mc.checker.spark_kernel import edge_key

    assert check(TRUNCATING, keep_going=True).witnesses["FollowerTruncated"]
    assert min(edge_key(fp, slot) for fp in (-3, 5, 2 ** 40) for slot in range(8)) < 0 < \
        max(edge_key(fp, slot) for fp in (-3, 5, 2 ** 40) for slot in range(8))


def test_edge_keys_of_arrays_equal_edge_key():
    import numpy as np

    from kafka_mc.checker.spark_kernel import edge_key, edge_keys

    parents = np.array([-(2 ** 63), -1, 0, 7, 2 ** 63 - 1, 123456789], dtype=np.int64)
    slots = np.array([0, 3, 11, 5, 1, 63], dtype=np.int64)
    assert edge_keys(parents, slots).tolist() == [edge_key(int(p), int(s)) for p, s in zip(parents, slots)]


def test_budget_stops_incomplete(spark):
    config = Config(protocol="hw", messages=1, crashes=1, elections=1)
    budget = Budget(max_states=40)
    result = spark_check(config, spark=spark, budget=budget)
    local = check(config, budget=budget)
    assert not result.complete and result.stopped_because == local.stopped_because
    assert (result.stats.distinct_states, result.stats.depth) == (local.stats.distinct_states, local.stats.depth)


class Interrupted(Exception):
    """What a level hook raises to stop a run once a level is committed, as a killed driver would."""


def interrupted_after(level: int, model, directory, spark, **options) -> tuple[dict, int]:
    """Run `model` with its checkpoint in `directory`, stopped once `level` is committed: the
    checkpoint's header and last complete level (`read_checkpoint`)."""
    def stop_at(depth):
        if depth == level:
            raise Interrupted

    with pytest.raises(Interrupted):
        run_spark_check(model, spark=spark, checkpoint_dir=directory, level_hook=stop_at, **options)
    return read_checkpoint(directory)


def test_checkpoint_dir_and_resume_after_interruption(spark, tmp_path):
    """A run interrupted after level 3 resumes from its checkpoint with the same result."""
    config = Config(protocol="hw", messages=1, crashes=1, elections=1, unclean=True)
    directory = tmp_path / "run"

    header, last = interrupted_after(3, config, directory, spark)
    assert last == 3 and header["config"] == config.to_dict()
    with pytest.raises(CheckpointError, match="already holds"):
        spark_check(config, spark=spark, checkpoint_dir=directory)
    with pytest.raises(CheckpointError, match="another configuration"):
        spark_check(Config(protocol="hw"), spark=spark, resume=directory)
    with pytest.raises(CheckpointError, match="started with the kernel executors"):
        spark_check(config, spark=spark, resume=directory, kernel=False)
    result, run = run_spark_check(config, spark=spark, resume=directory)
    assert run.resumed_from_depth == 3
    assert_same(result, check(config))


@pytest.mark.parametrize("partitions", [2, 1])
def test_visited_sets_lost_with_their_machine_are_read_back_from_the_checkpoint(spark, tmp_path, partitions):
    """The executors keep each partition's visited set beside them; where it is gone (a resumed
    run on other machines, a lost executor), the level runs again with the visited sets read from
    the checkpoint, for the same result (one partition's level reads its input without a shuffle)."""
    from kafka_mc.checker.spark_level import cache_dir

    config = Config(protocol="hw", messages=1, crashes=1, elections=1, unclean=True)
    directory = tmp_path / "run"

    header, _ = interrupted_after(3, config, directory, spark, partitions=partitions)
    assert header["partitions"] == partitions
    assert cache_dir(header["uid"]).is_dir()  # kept for the resumed run
    import shutil

    shutil.rmtree(cache_dir(header["uid"]))
    result, run = run_spark_check(config, spark=spark, resume=directory)
    assert run.resumed_from_depth == 3 and run.levels_from_disk == 1
    assert_same(result, check(config))
    assert not cache_dir(header["uid"]).exists()  # a complete run leaves none


def test_least_edges_keeps_the_least_key_then_parent_then_slot():
    import numpy as np

    from kafka_mc.checker.spark_level import least_edges

    fps = np.array([5, 3, 5, 3, 9, 5, 3], dtype=np.int64)
    keys = np.array([7, -2, 7, 4, 0, 8, -2], dtype=np.int64)  # fp 5: two edges of key 7; fp 3: two of key -2
    parents = np.array([4, 6, 4, 1, 2, 0, 6], dtype=np.int64)
    slots = np.array([3, 9, 1, 0, 0, 0, 2], dtype=np.int64)
    assert least_edges(fps, keys, parents, slots).tolist() == [6, 2, 4]  # by fingerprint: 3, 5, 9
    assert least_edges(fps[:0], keys[:0], parents[:0], slots[:0]).tolist() == []


def test_the_radix_sort_orders_as_numpys_stable_sort():
    """`least_edges` sorts a batch's fingerprints with a radix sort of its own (numba): the same
    order as numpy's stable argsort, signed values, ties and extremes included."""
    import numpy as np

    from kafka_mc.checker.spark_level import _compiled

    rng = np.random.default_rng(5)
    for size in (0, 1, 2, 1000, 40_000):
        values = rng.integers(-2 ** 63, 2 ** 63 - 1, size=size, dtype=np.int64)
        if size > 10:
            values[::5] = values[1]  # ties
            values[:4] = (-2 ** 63, 2 ** 63 - 1, 0, -1)
        assert _compiled("radix_order")(values).tolist() == np.argsort(values, kind="stable").tolist()
    same = np.full(300, 42, dtype=np.int64)  # one value: every pass skipped, the order stands
    assert _compiled("radix_order")(same).tolist() == list(range(300))


@pytest.mark.parametrize("widths", ["fixed", "varying"])
def test_payloads_packed_in_one_buffer_unpack_to_the_rows_chosen(widths):
    """The expansion packs its candidates' columns and states (the kernel's of one width, a model's
    pickles of any) straight into the CANDIDATES payloads, the level task its new states into the STATES
    payloads; each unpacks to the rows it was given."""
    import numpy as np
    import pyarrow as pa

    from kafka_mc.checker.spark_level import fixed_width, flat_bytes, pack_payloads, take_bytes, unpack_payload

    rng = np.random.default_rng(7)
    blobs = [bytes(rng.integers(0, 256, size=16 if widths == "fixed" else int(rng.integers(0, 40)),
                                dtype=np.uint8)) for _ in range(300)]
    arrays = [pa.array(blobs[:120], pa.binary()), pa.array(blobs[100:], pa.binary()).slice(20)]  # an offset too
    offsets, data = flat_bytes(arrays)
    assert [bytes(data[offsets[i]:offsets[i + 1]]) for i in range(len(offsets) - 1)] == blobs
    assert fixed_width(offsets) == (16 if widths == "fixed" else 0)
    columns = tuple(rng.integers(-2 ** 63, 2 ** 63 - 1, size=300, dtype=np.int64) for _ in range(4)) + (
        rng.integers(0, 2 ** 31 - 1, size=300, dtype=np.int64),)
    parts = [np.array([5, 0, 299, 17]), np.array([], dtype=np.int64), np.arange(100, 260)]
    payloads = pack_payloads(columns, offsets, data, parts)
    assert len(payloads) == len(parts)
    for part, payload in zip(parts, payloads):
        *numbers, states = unpack_payload(payload.as_buffer())
        assert [column.tolist() for column in numbers] == [column[part].tolist() for column in columns]
        assert states.to_pylist() == [blobs[i] for i in part]
    rows = np.array([3, 3, 250, 0])
    assert take_bytes(offsets, data, fixed_width(offsets), rows).to_pylist() == [blobs[i] for i in rows]


@pytest.mark.parametrize("given", ["rows", "arrow"])
def test_an_expansions_candidates_leave_once_each_with_their_least_edge_and_state(given):
    """`Candidates` stores the states it is given (the kernel's rows taken straight into its store, or a
    model's Arrow array), flushes when `limit` wait, and sends each fingerprint once per flush with the
    state of its least edge, grouped by partition; the next expansion in the process reuses its store,
    whose old bytes change nothing."""
    import numpy as np

    from kafka_mc.checker.spark_level import Candidates

    rng = np.random.default_rng(11)
    first = expansion_rows(Candidates(("test", 0, 3), _level_schema(), limit=50), given, rng)
    store = first.data
    first.release()
    second = Candidates(("test", 0, 3), _level_schema(), limit=50)
    assert second.data is store and len(store) > 0
    expansion_rows(second, given, rng)


def _level_schema():
    import pyarrow as pa

    from kafka_mc.checker.spark_level import LEVEL_COLUMNS

    types = {"slot": pa.int32(), "payload": pa.binary()}
    return pa.schema([(name, types.get(name, pa.int64())) for name in LEVEL_COLUMNS])


def expansion_rows(candidates, given, rng):
    """Four random batches through `candidates`, and its flushes checked; `candidates`."""
    import numpy as np
    import pyarrow as pa

    from kafka_mc.checker.spark_level import CANDIDATES, PAYLOAD, SLOT, spark_partition, unpack_payload

    sent, batches = {}, []
    for _ in range(4):
        rows = rng.integers(-2 ** 40, 2 ** 40, size=(30, 3), dtype=np.int64)
        fps = np.sort(rng.choice(np.arange(40, dtype=np.int64), size=20, replace=False))
        chosen = rng.choice(30, size=20, replace=False)
        keys = rng.integers(-100, 100, size=20, dtype=np.int64)
        parents, slots = rng.integers(0, 5, size=20, dtype=np.int64), np.arange(20, dtype=np.int64)
        for fp, key, parent, slot, row in zip(fps, keys, parents, slots, rows[chosen]):
            edge = (int(key), int(parent), int(slot))
            if int(fp) not in sent or edge < sent[int(fp)][0]:
                sent[int(fp)] = (edge, row.tobytes())
        states = (rows, chosen) if given == "rows" else (pa.array([row.tobytes() for row in rows[chosen]],
                                                                  pa.binary()), None)
        batches += list(candidates.add(fps, fps, keys, parents, slots, *states))
    batches += list(candidates.flush())
    got: dict[int, list] = {}
    for batch in batches:
        for row in np.flatnonzero(batch.column(SLOT).to_numpy() == CANDIDATES):
            owners, fps, keys, parents, slots, states = unpack_payload(batch.column(PAYLOAD)[row].as_buffer())
            assert len(set(spark_partition(owners, 3).tolist())) == 1  # one partition's
            for fp, key, parent, slot, state in zip(fps, keys, parents, slots, states.to_pylist()):
                got.setdefault(int(fp), []).append(((int(key), int(parent), int(slot)), state))
    flushes = 2  # 50 waiting after the third batch, then the rest
    assert all(1 <= len(entries) <= flushes for entries in got.values())
    assert {fp: min(entries) for fp, entries in got.items()} == sent
    return candidates


def test_a_levels_fingerprints_merge_into_the_visited_set_as_numpys_insert():
    import numpy as np

    from kafka_mc.checker.spark_level import inserted, positions

    rng = np.random.default_rng(5)
    for size, more in [(0, 4), (6, 0), (0, 0), (50, 50), (3_000, 200)]:
        visited = np.sort(rng.choice(np.arange(-10 ** 6, 10 ** 6, dtype=np.int64), size=size, replace=False))
        new = np.setdiff1d(rng.integers(-10 ** 6, 10 ** 6, size=more, dtype=np.int64), visited)
        new = np.concatenate([new, visited[:1] - 1, visited[-1:] + 1]) if size else new  # both ends
        new = np.unique(new)
        where, _ = positions(visited, new)
        assert inserted(visited, where, new).tolist() == np.insert(visited, where, new).tolist()


def test_a_level_tasks_rows_are_made_ahead_in_order_and_at_most_room_ahead():
    """The level task's rows are made by a thread of their own while the task hands the earlier
    ones to Spark: all of them, in order; never more than `room` waiting; the producer's error
    raised to the consumer after the rows before it; a consumer that stops closes the producer."""
    import threading
    import time

    from kafka_mc.checker.spark_level import made_ahead

    made, closed, threads = [], [], set()

    def produce(count: int, failing: bool = False):
        try:
            for item in range(count):
                threads.add(threading.get_ident())
                made.append(item)
                yield item
            if failing:
                raise ValueError("the producer failed")
        finally:
            closed.append(count)

    assert list(made_ahead(lambda: produce(50))) == list(range(50)) and closed == [50]
    assert threading.get_ident() not in threads

    made.clear()
    rows = made_ahead(lambda: produce(1000), room=3)
    assert next(rows) == 0
    deadline = time.monotonic() + 10
    while len(made) < 5 and time.monotonic() < deadline:  # one taken, three waiting, one held by the full queue
        time.sleep(0.01)
    time.sleep(0.1)
    assert len(made) == 5
    rows.close()
    assert closed[-1] == 1000 and len(made) == 5  # the producer stopped and its generator was closed
    assert not any(thread.name == "kafka-mc-level-rows" for thread in threading.enumerate())

    got = []
    with pytest.raises(ValueError, match="the producer failed"):
        for item in made_ahead(lambda: produce(4, failing=True)):
            got.append(item)
    assert got == [0, 1, 2, 3]


def test_a_levels_states_leave_in_batches_that_lookups_read_back():
    """The level task packs its new states, ascending by fingerprint, BATCH to a STATES row with the
    row's least and greatest fingerprint (what a trace's lookup filters on), without their packed
    states; `read_states` gives each state's key, parent, slot and property bits back by fingerprint."""
    import numpy as np
    import pyarrow as pa

    from kafka_mc.checker.spark_level import (BATCH, FP, KEY, LEVEL_COLUMNS, PAYLOAD, SLOT, STATES, read_states,
                                              state_rows, unpack_payload)

    types = {"slot": pa.int32(), "payload": pa.binary()}
    schema = pa.schema([(name, types.get(name, pa.int64())) for name in LEVEL_COLUMNS])
    rng = np.random.default_rng(3)
    count = BATCH + 100
    fps = rng.choice(np.arange(-10 ** 9, 10 ** 9, dtype=np.int64), size=count + 50, replace=False)
    columns = (rng.integers(0, 8, size=count + 50), fps, rng.integers(-2 ** 63, 2 ** 63 - 1, size=count + 50),
               rng.integers(-2 ** 63, 2 ** 63 - 1, size=count + 50), rng.integers(0, 60, size=count + 50))
    rows = np.argsort(fps)[:count]  # the new states among the candidates, ascending by fingerprint
    batch = state_rows(7, 4, columns, rows, schema)
    assert batch.num_rows == 2 and set(batch.column(SLOT).to_pylist()) == {STATES}
    assert batch.column(FP).to_pylist() == [int(fps[rows[0]]), int(fps[rows[BATCH]])]
    assert batch.column(KEY).to_pylist() == [int(fps[rows[BATCH - 1]]), int(fps[rows[-1]])]
    assert all(set(unpack_payload(payload.as_buffer())[5].to_pylist()) == {b""} for payload in batch.column(PAYLOAD))
    states = read_states([payload.as_buffer() for payload in batch.column(PAYLOAD)])
    assert states == {int(fps[row]): (int(columns[2][row]), int(columns[3][row]), int(columns[4][row]),
                                      int(columns[0][row])) for row in rows}


def test_an_expansion_sweeps_a_partitions_visited_set_of_the_level_before_while_its_own_is_not_there(tmp_path,
                                                                                                  monkeypatch):
    """An expansion drops the candidates its machine knows visited: through the level just made where
    that partition's task has run, through the level before where it has not yet, and none where
    the machine has neither."""
    import tempfile

    import numpy as np

    from kafka_mc.checker import spark_level
    from kafka_mc.checker.spark_level import by_partition, save_visited, spark_partition, unvisited

    monkeypatch.setattr(tempfile, "tempdir", str(tmp_path))
    fps = np.arange(0, 300, dtype=np.int64)
    targets = spark_partition(fps, 3)
    mine = [fps[targets == partition] for partition in range(3)]
    save_visited("sweep", 0, 5, mine[0][::2])  # partition 0's task has run: its set through level 5
    save_visited("sweep", 1, 4, mine[1][::3])  # partition 1's has not: its set through level 4
    order, bounds = by_partition(targets, 3)
    keep = unvisited("sweep", 5, fps, order, bounds)
    dropped = set(fps[~keep].tolist())
    assert dropped == set(mine[0][::2].tolist()) | set(mine[1][::3].tolist())  # partition 2: none here
    spark_level._MAPPED.clear()


def test_the_engine_computes_sparks_partition_of_every_owner(spark):
    """A level's rows reach their partition, and executors keep visited sets per partition,
    by Spark's own hash partitioning, which `spark_partition` computes."""
    import numpy as np
    from pyspark.sql import functions as F

    from kafka_mc.checker.spark_level import routes, spark_partition

    owners = [0, 1, -1, 2 ** 63 - 1, -(2 ** 63), 123456789012345] + list(range(-50, 50, 7))
    for partitions in (1, 2, 3, 7):
        frame = spark.createDataFrame([(o,) for o in owners], "owner long").repartition(partitions, "owner")
        placed = dict(frame.select("owner", F.spark_partition_id().alias("p")).collect())
        assert [placed[o] for o in owners] == spark_partition(np.array(owners), partitions).tolist()
        assert spark_partition(np.array(routes(partitions)), partitions).tolist() == list(range(partitions))


def test_a_control_model_run_is_checkpointed_and_resumed(spark, tmp_path):
    """Any model runs on the one engine with checkpoints: the rebalance model (state and step
    properties, pickled states, slots by position) interrupted after level 2 resumes with the local
    engine's result."""
    from kafka_mc.control import RebalanceConfig, RebalanceModel

    system = RebalanceModel(RebalanceConfig(partitions=6, imbalance_percentage=50))
    directory = tmp_path / "run"

    header, last = interrupted_after(2, system, directory, spark, keep_going=True)
    assert last == 2 and (header["model"], header["config"], header["executors"]) == \
        ("rebalance", system.config.to_dict(), "python")
    with pytest.raises(CheckpointError, match="another configuration"):
        spark_check(RebalanceModel(RebalanceConfig(partitions=6, imbalance_percentage=40)), keep_going=True,
                    spark=spark, resume=directory)
    with pytest.raises(CheckpointError, match="another configuration"):
        spark_check(Config(), spark=spark, resume=directory)
    with pytest.raises(ValueError, match="symmetry is for the replication model; the rebalance model"):
        spark_check(system, symmetry=True, spark=spark, resume=directory)
    result, run = run_spark_check(system, keep_going=True, spark=spark, resume=directory)
    local = check(system, keep_going=True)
    assert run.resumed_from_depth == 2 and not run.kernel and result.complete == local.complete
    assert (result.stats.distinct_states, result.stats.states_generated, result.stats.depth) == \
        (local.stats.distinct_states, local.stats.states_generated, local.stats.depth)
    assert [(v.invariant, len(v.trace)) for v in result.violations] == \
        [(v.invariant, len(v.trace)) for v in local.violations]
    assert {n: len(t) for n, t in result.witness_traces.items()} == {n: len(t) for n, t in local.witness_traces.items()}
    properties = {p.name: p for p in system.properties}
    for name, trace in [*((v.invariant, v.trace) for v in result.violations), *result.witness_traces.items()]:
        states = trace.states()  # each trace replays and decides its property at its last step
        holds = properties[name].check(states[-2], trace.actions[-1], states[-1])
        assert holds != (properties[name].kind == ALWAYS), name


def test_resume_refuses_what_is_not_a_checkpoint(spark, tmp_path):
    with pytest.raises(CheckpointError, match="not a kafka-mc checkpoint"):
        spark_check(Config(), spark=spark, resume=tmp_path)
    (tmp_path / CHECKPOINT_FILE).write_text(json.dumps({"format": 1, "config": Config().to_dict()}))
    with pytest.raises(CheckpointError, match="not a kafka-mc checkpoint of format 4"):
        spark_check(Config(), spark=spark, resume=tmp_path)
    # a checkpoint of the format before the visited set was kept as sorted fingerprints
    (tmp_path / CHECKPOINT_FILE).write_text(json.dumps({"format": 2, "engine": "kafka-mc spark",
                                                        "config": Config().to_dict()}))
    with pytest.raises(CheckpointError, match="is a kafka-mc checkpoint of format 2, written by an earlier kafka-mc; "
                                              "this one resumes format 4 only"):
        spark_check(Config(), spark=spark, resume=tmp_path)
    # and of the format before a level held the next level's candidates
    (tmp_path / CHECKPOINT_FILE).write_text(json.dumps({"format": 3, "engine": "kafka-mc spark",
                                                        "config": Config().to_dict()}))
    with pytest.raises(CheckpointError, match="is a kafka-mc checkpoint of format 3, written by an earlier kafka-mc; "
                                              "this one resumes format 4 only"):
        spark_check(Config(), spark=spark, resume=tmp_path)
    (tmp_path / CHECKPOINT_FILE).write_text(json.dumps({"format": 4, "config": Config().to_dict()}))
    with pytest.raises(CheckpointError, match="no complete level"):
        spark_check(Config(), spark=spark, resume=tmp_path)


def test_matrix_cells_as_spark_jobs_equal_local_cells(spark):
    from kafka_mc.checker.matrix import Axes, run_matrix, run_matrix_on_spark

    axes = Axes(protocols=("hw", "leader-epoch"), acks=("all",), min_isr=(1,), unclean=(False, True), flush=(True,))
    bounds = Config(messages=1, crashes=1, elections=1, partitions=0)
    finished = []
    on_spark = run_matrix_on_spark(axes, bounds, spark=spark, progress=finished.append)
    local = run_matrix(axes, bounds)
    assert [cell.name for cell in on_spark] == [cell.name for cell in local] and len(finished) == len(local)
    assert any(cell.result.violations for cell in local)
    for spark_cell, local_cell in zip(on_spark, local):
        assert spark_cell.result.violations == local_cell.result.violations
        assert (spark_cell.result.stats.distinct_states, spark_cell.decided) == \
            (local_cell.result.stats.distinct_states, local_cell.decided)


def test_executors_without_kafka_mc_run_the_copy_shipped_with_the_job(tmp_path):
    """Executors whose Python has kafka-mc's dependencies but not kafka-mc still check: they
    import the driver's kafka-mc from the zip shipped with the job."""
    import os
    import subprocess
    import sys
    from pathlib import Path

    import numba

    dependencies = Path(numba.__file__).parent.parent  # site-packages, read without its .pth files
    bare = tmp_path / "bare-python"
    bare.write_text(f'#!/bin/sh\nPYTHONPATH="{dependencies}" exec "{sys.executable}" -S "$@"\n')
    bare.chmod(0o755)
    cannot = subprocess.run([str(bare), "-c", "import numba, pyarrow; import kafka_mc"], capture_output=True,
                            text=True, cwd=tmp_path)
    assert "No module named 'kafka_mc'" in cannot.stderr  # the executors' Python has no kafka-mc
    argv = ["--protocol", "hw", "--messages", "1", "--crashes", "1", "--elections", "1", "--unclean", "--format", "json"]
    run = subprocess.run([sys.executable, "-m", "kafka_mc", "check", "--engine", "spark", "--spark-master", "local[2]",
                          *argv], capture_output=True, text=True, env={**os.environ, "PYSPARK_PYTHON": str(bare)},
                         cwd=tmp_path, timeout=600)
    local = check(Config(protocol="hw", messages=1, crashes=1, elections=1, unclean=True))
    assert run.returncode == 12, run.stderr[-3000:]  # violated, as locally
    view = json.loads(run.stdout)
    assert (view["distinct_states"], view["states_generated"]) == \
        (local.stats.distinct_states, local.stats.states_generated)
    assert [v["invariant"] for v in view["violations"]] == [v.invariant for v in local.violations]


def test_a_step_invariant_is_found_where_it_breaks_as_the_local_engine_finds_it(spark):
    def shrinks(before, action, after):  # defined here, so the executors get it by value
        return all(len(b.log) <= len(a.log) for b, a in zip(before.replicas, after.replicas))

    STEP_INVARIANTS = (Property("NoLogShrinks", ALWAYS, "a test's step invariant", shrinks, on_step=True),
                       Property("EpochNeverDecreases", ALWAYS, "a test's step invariant",
                                lambda before, action, after: after.controller.epoch >= before.controller.epoch,
                                on_step=True))
    result, _ = run_spark_check(TRUNCATING, STEP_INVARIANTS, keep_going=True, spark=spark, kernel=False)
    local = check(TRUNCATING, STEP_INVARIANTS, keep_going=True)
    assert result.violated == local.violated == ("NoLogShrinks",)
    assert len(result.violations[0].trace) == len(local.violations[0].trace) == 6
    states = result.violations[0].trace.states()
    assert not STEP_INVARIANTS[0].holds(states[-2], result.violations[0].trace.actions[-1], states[-1])


def test_executors_run_the_drivers_python_without_it_on_path(tmp_path):
    """With the driver's Python not on PATH and PYSPARK_PYTHON unset, the executors still run the
    driver's Python (the `python3` found on PATH may lack pyarrow, or be absent)."""
    import os
    import subprocess
    import sys

    env = {key: value for key, value in os.environ.items() if key != "PYSPARK_PYTHON"}
    env["PATH"] = os.pathsep.join(folder for folder in ("/usr/bin", "/bin") if os.path.isdir(folder))
    argv = ["--protocol", "hw", "--messages", "1", "--crashes", "1", "--elections", "1", "--format", "json", "--quiet"]
    run = subprocess.run([sys.executable, "-m", "kafka_mc", "check", "--engine", "spark", "--spark-master", "local[1]",
                          *argv], capture_output=True, text=True, env=env, cwd=tmp_path, timeout=600)
    local = check(Config(protocol="hw", messages=1, crashes=1, elections=1))
    assert run.returncode == (12 if local.violations else 0), run.stderr[-3000:]
    assert json.loads(run.stdout)["distinct_states"] == local.stats.distinct_states


USERS = ("NoCommittedDataLoss", "leader_keeps_committed", "a_new_leader_holds_a_record",
         "no_truncation_drops_a_committed_record", "FollowerTruncated")


@pytest.mark.parametrize("symmetry", [False, True], ids=["plain", "symmetry"])
def test_users_properties_run_lowered_on_the_kernels_executors_as_on_the_local_engine(spark, symmetry):
    """A state invariant, a state witness and a step invariant of a user's (`tests/examples/
    gpu_user_properties.py`) beside kafka-mc's own: the executors run the kernel, their programs
    flag the same states and steps as the Python engine's functions (both invariants broken, the
    witness reached), and each trace ends where its function says so."""
    sys.path.insert(0, str(Path(__file__).parent / "examples"))
    from gpu_user_properties import chosen

    properties = chosen(USERS)
    result, run = run_spark_check(BUMPED, properties, keep_going=True, symmetry=symmetry, spark=spark)
    local = check(BUMPED, properties, keep_going=True, symmetry=symmetry)
    assert run.kernel
    assert (result.stats.distinct_states, result.stats.states_generated, result.stats.depth) == \
        (local.stats.distinct_states, local.stats.states_generated, local.stats.depth)
    assert [(v.invariant, len(v.trace)) for v in result.violations] == \
        [(v.invariant, len(v.trace)) for v in local.violations] == \
        [("no_truncation_drops_a_committed_record", 7), ("NoCommittedDataLoss", 10), ("leader_keeps_committed", 10)]
    assert result.witnesses == local.witnesses == {"a_new_leader_holds_a_record": True, "FollowerTruncated": True}
    assert {n: len(t) for n, t in result.witness_traces.items()} == \
        {n: len(t) for n, t in local.witness_traces.items()}
    by_name = {p.name: p for p in properties}
    for name, trace in [(v.invariant, v.trace) for v in result.violations] + list(result.witness_traces.items()):
        states, prop = trace.states(), by_name[name]
        holds = prop.holds(states[-2], trace.actions[-1], states[-1]) if prop.on_step else prop.holds(states[-1])
        assert holds == (prop.kind != ALWAYS), name


def test_a_users_property_that_does_not_lower_runs_on_the_models_executors(spark):
    """The executors run the model itself for a property the kernel cannot run, and asked for the
    kernel, the engine refuses it naming the construct."""
    def waits_for_a_leader(state):  # defined here, so the executors get it by value
        while state.leader is None:
            return True
        return True

    from kafka_mc.properties.user import user_property

    properties = (user_property(waits_for_a_leader, "waits_for_a_leader"),)
    config = Config(protocol="hw", messages=1, crashes=1, elections=1)
    result, run = run_spark_check(config, properties, spark=spark)
    assert not run.kernel and result.complete and not result.violations
    assert re.fullmatch(r"property waits_for_a_leader: the statement while cannot be lowered "
                        r"\(test_spark.py, line \d+, in waits_for_a_leader\)", run.model_because)
    assert result.stats.distinct_states == check(config, properties).stats.distinct_states
    with pytest.raises(ValueError, match="waits_for_a_leader.*while"):
        run_spark_check(config, properties, spark=spark, kernel=True)


def test_a_run_whose_users_property_ran_on_the_models_executors_resumes_on_them(spark, tmp_path):
    """A checkpoint written by the model's executors for a property that lowers (as every one was before
    users' properties ran on the kernel) resumes on them unless the kernel is asked for."""
    def leader_keeps_committed(state):  # defined here, so the model's executors get it by value
        leader = state.leader
        return leader is None or all(offset < leader.leo and leader.log[offset].msg == msg
                                     for offset, msg in state.committed)

    from kafka_mc.properties.user import user_property

    config = Config(protocol="hw", messages=1, crashes=1, elections=1)
    properties = (user_property(leader_keeps_committed, "leader_keeps_committed"),)
    directory = tmp_path / "run"
    header, _ = interrupted_after(2, config, directory, spark, properties=properties, kernel=False)
    assert header["executors"] == "python"
    with pytest.raises(CheckpointError, match="started with the python executors"):
        run_spark_check(config, properties, spark=spark, resume=directory, kernel=True)
    result, run = run_spark_check(config, properties, spark=spark, resume=directory)
    assert not run.kernel and run.resumed_from_depth == 2
    assert run.model_because == "the resumed checkpoint was written by the model's executors"
    local = check(config, properties)
    assert (result.stats.distinct_states, result.violated) == (local.stats.distinct_states, local.violated)
