"""The Spark engine: level-synchronous breadth-first search spread across Spark executors, for
any model (`model.interface.Model`) or a `Config` of the replication model.

Each BFS level is one Spark job with one shuffle (none with one partition); the driver only loops over levels and reads
one small summary per partition (counts, the least key of each property's states, through an
accumulator), never a frontier or the visited set.

For the replication model (with the controller's epoch bumps or without) the executors run the
compiled kernel (`checker.spark_kernel`: batches of packed states, no Python per state),
users' own properties lowered to the kernel's programs (`checker.kernel.user_properties`; the
driver evaluates the user's function where one is found, as `kernel_check` does); for any other
model, or a user's property that does not lower, they run the model itself, state
by state, through its `model.interface.Capabilities` (the model's own packing, fingerprint, owner
hash and action slots where it has them, else pickle, `hash` and a successor's position). Both
run in the one level task (`checker.spark_level`); they encode states differently, so a checkpoint
names the one it was written with.

A level on disk (`DIR/level-NNNNN/`, Parquet, one file per partition; `spark_level.LEVEL_COLUMNS`)
is a few large rows per partition: its new states of that depth in batches (`STATES`: each batch's
property bits, fingerprints, edge keys, parents' fingerprints and action slots, packed into one
binary value, ascending by fingerprint, with the batch's least and greatest fingerprint as columns;
not their packed states, which the CANDIDATES of the level before hold), the same fingerprints
again, sorted (`VISITED`: the partition's part of the visited set that the level added), and the
next level's candidates (`CANDIDATES`: packed states too), packed the same way. A state
is the kernel's packed row, or the model's `pack_state`; its owner (a hash to partition by) the
model's `owner_hash`, with the kernel the fingerprint; an edge's key is below.

One level (the job of `_Engine.level`):
1. the CANDIDATES rows of level `depth - 1` are read back from Parquet (lineage is cut there);
2. the one shuffle: `repartition(P, "owner")`, so partition p holds every candidate it owns (with
   one partition, `coalesce(1)`: the one task reads them all, and the level is a single stage);
3. partition p's task (`spark_level.level_step`) keeps, for each fingerprint, its edge of least
   key (an edge's key is a 64-bit mix of its parent's fingerprint and its action slot, `edge_key`,
   ties broken by parent and slot, so which shortest path a state keeps does not depend on the
   partitioning or on the order of rows; numpy: one sort), drops those in p's visited set (a
   sorted int64 array, a galloping search in numba: `spark_level.positions`), checks the
   properties on the new states, and returns them as STATES rows with their VISITED rows;
4. the same task expands its new states (the kernel, or the model shipped with the job), as class
   representatives under symmetry, keeps each successor once per batch, and again across the
   task's batches (`spark_level.Candidates`), with the edge of least key, drops those its machine
   knows visited (`spark_level.unvisited`), and returns the rest as the next level's CANDIDATES
   rows, each a batch of one partition's candidates; Spark writes all of it as level `depth`, and
   the task adds its summary to the level's accumulator. The task's rows are made by a thread of
   its own while Spark's JVM writes those before them (`spark_level.made_ahead`). The expansion's counts and step
   properties are counted with the next level (`_Totals.ahead`), as the local engine counts them.

p's visited set through the last level is also kept beside the executors, as a file in the
temporary directory of the machine that ran p's task (memory-mapped, shared by that machine's
executors): a task that does not find it there reports a miss, and the driver runs the level
again with every partition's VISITED rows of the earlier levels read from the checkpoint into
the shuffle (`SparkRun.levels_from_disk` counts those levels). A run that is decided, or whose
checkpoint is temporary, removes those files.

Every count, verdict and shortest length equals the local engine's; the traces are shortest
ones too, but the local engine keeps the least path in its own order, so the two may show
different (equally short) traces.

Counterexamples: the driver looks the violating state up by fingerprint in its level, then its
parent in the level before, down to depth 0 (one filtered read per level, of the STATES rows
whose range holds a wanted fingerprint), and replays the path's slots through the model, each
turned into its action out of the state it leaves (`Capabilities.action_at`; `bfs.path_trace`).

A run can be resumed from its checkpoint directory: `DIR/kafka-mc-checkpoint.json` names the
model, its configuration, the partition count P (a resumed run keeps it) and a uid naming the
executors' files, and `DIR/level-NNNNN.json` is written once level N is complete. Every file of
the checkpoint, the driver's too, goes through Spark's Hadoop filesystem layer
(`checker.spark_storage`; the levels through Spark's Parquet writer and reader), so DIR may be a
local path or any URI that Spark's Hadoop reaches (`hdfs://`, `s3a://`, `file://`).
"""

from __future__ import annotations

import contextlib
import json
import os
import sys
import tempfile
import threading
import time
import uuid
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any, Callable, Iterable, Iterator

from kafka_mc.control.epoch_bumps import EpochBumpSystem
from kafka_mc.control.replication import ReplicationSystem, model_of
from kafka_mc.model import Config
from kafka_mc.model.interface import Model, capabilities, next_state
from kafka_mc.model.symmetry import canonical
from kafka_mc.properties import ALWAYS, Property, shipped
from kafka_mc.properties.user import UserPropertyError

from .bfs import Budget, Progress, path_trace, search_result, stop_reason
from .interrupts import Interrupted, deferred_interrupts
from .result import CheckResult, Stats, Trace
from .shipping import ship
from .spark_kernel import edge_key, kernel_expander, kernel_flags, seed_rows
from .spark_level import (CANDIDATES, LEVEL_COLUMNS, STATES, VISITED, Candidates, SummaryList, drop_cache, level_step,
                          read_states, seed_payloads)
from .spark_storage import HadoopDirectory, StorageError, directory
from .temporary import process_folder

if TYPE_CHECKING:
    from .kernel.user_properties import Program

CHECKPOINT_FILE = "kafka-mc-checkpoint.json"
# a level's write: no _SUCCESS file (the level's JSON marks it complete), each task's file moved in
# place when the task commits (not again by the driver when the job does), no dictionary encoding
# (fingerprints, keys and parents are random: Parquet's dictionary of each column filled up, then fell
# back), a row group per row (each a batch of states or candidates), so that a read of one kind of row
# (the next level's candidates, a lookup's batch of states) skips the others by the row groups' statistics,
# and no compression (random fingerprints and packed states gain little from it, and the level task's
# Python waited on the JVM compressing them)
WRITE_OPTIONS = {"mapreduce.fileoutputcommitter.marksuccessfuljobs": "false",
                 "mapreduce.fileoutputcommitter.algorithm.version": "2",
                 "parquet.enable.dictionary": "false",
                 "parquet.block.row.count.limit": "1",
                 "compression": "uncompressed"}
CHECKPOINT_FORMAT = 4  # 4: a level holds its states and the next level's candidates as batches (3: a row per
# state, the level expanded by a job of its own; 2: the visited set as rows, anti-joins)


def level_schema():
    """The Spark schema of a level's rows (`spark_level.LEVEL_COLUMNS`); `parent` nullable."""
    from pyspark.sql.types import BinaryType, IntegerType, LongType, StructField, StructType

    types = {"owner": LongType(), "fp": LongType(), "key": LongType(), "parent": LongType(),
             "slot": IntegerType(), "props": LongType(), "payload": BinaryType()}
    return StructType([StructField(name, types[name], name == "parent") for name in LEVEL_COLUMNS])


class CheckpointError(ValueError):
    """A checkpoint directory that cannot be resumed (or reused)."""


# -------------------------------------------------------------- executor-side functions


def _identity(state):
    return state


def _holds(prop: Property, *arguments) -> bool:
    """Whether `prop` holds; a user's property that raises (`UserPropertyError`) counts as failing
    here, so the run stops with a trace to where it raised: the driver evaluates the property again
    along that trace and reports its error (`kafka_mc/cli_spark.py`), as the local engines do."""
    try:
        return prop.holds(*arguments)
    except UserPropertyError:
        return False


def _expander(model: Model, symmetry: bool, step_props: tuple[tuple[int, Property], ...]):
    """The expansion of any model for a level task (`spark_level.level_step`): `expand(frontier,
    candidates)` gives `candidates` (`spark_level.Candidates`) the successors of each batch of
    `frontier` (fingerprints, packed states as an Arrow binary column), each once per batch with
    its least edge key, and yields the CANDIDATES rows they flush; it notes how many successors
    each batch generated, and for each step property still wanted (`step_props`: its index among
    the step properties, and it) the least key and parent of an edge where it is found (a witness
    holds, an invariant is broken)."""

    def expand(frontier: Iterator[tuple[Any, Any]], candidates: Candidates) -> Iterator[Any]:
        import numpy as np
        import pyarrow as pa

        encoded = capabilities(model)
        successors, unpack, pack, fingerprint, owner_hash = (encoded.successors, encoded.unpack_state,
                                                             encoded.pack_state, encoded.fingerprint,
                                                             encoded.owner_hash)
        represent = canonical if symmetry else _identity
        for parent_fps, blobs in frontier:
            best: dict[int, list] = {}
            generated = 0
            found: dict[int, tuple[int, int]] = {}
            for parent_fp, blob in zip(parent_fps.tolist(), blobs.to_pylist()):
                state = unpack(blob)
                for slot, action, following in successors(state):
                    generated += 1
                    key = edge_key(parent_fp, slot)
                    for index, prop in step_props:
                        if _holds(prop, state, action, following) != (prop.kind == ALWAYS) and \
                                (index not in found or (key, parent_fp) < found[index]):
                            found[index] = (key, parent_fp)
                    following = represent(following)
                    fp = fingerprint(following)
                    entry = best.get(fp)
                    if entry is None:
                        best[fp] = [owner_hash(following), key, parent_fp, slot, following]
                    elif (key, parent_fp, slot) < (entry[1], entry[2], entry[3]):
                        entry[1], entry[2], entry[3] = key, parent_fp, slot
            candidates.note(generated, found)
            entries = [best[fp] for fp in sorted(best)]
            fps = np.array(sorted(best), dtype=np.int64)
            owners = np.array([entry[0] for entry in entries], dtype=np.int64)
            if entries:
                keys, parents, slots = (np.array([entry[column] for entry in entries], dtype=np.int64)
                                        for column in (1, 2, 3))
                states = pa.array([pack(entry[4]) for entry in entries], pa.binary())
                yield from candidates.add(owners, fps, keys, parents, slots, states)

    return expand


def _python_flags(model: Model, properties: tuple[Property, ...], bits: dict[str, int]):
    """A function, built on the executor, of a binary column of packed states to their property
    masks: bit `bits[name]` for every state property `name` a state violates (an invariant) or
    reaches (a state witness), evaluated on the model's own states."""
    state_props = tuple((bits[p.name], p) for p in properties if not p.on_step and p.name in bits)

    def build():
        unpack = capabilities(model).unpack_state

        def flags(states: Any) -> Any:
            import numpy as np

            mask = np.zeros(len(states), dtype=np.int64)
            for row, blob in enumerate(states.to_pylist()):
                state = unpack(blob)
                for bit, prop in state_props:
                    if _holds(prop, state) != (prop.kind == ALWAYS):
                        mask[row] |= bit
            return mask

        return flags

    return build


# ----------------------------------------------------------------------------- session


@dataclass
class SparkRun:
    """What the run ran on, for the JSON summary."""

    master: str = ""
    executors: int = 0
    partitions: int = 0
    checkpoint_dir: str = ""
    resumed_from_depth: int | None = None
    kernel: bool = True  # the executors ran the compiled kernel (or else the explicit model)
    model_because: str = ""  # why they ran the model: a property that does not lower, another model, asked
    levels_from_disk: int = 0  # levels run again with the visited sets read from the checkpoint
    level_seconds: list[float] = field(default_factory=list)


_LOG4J = """rootLogger.level = warn
rootLogger.appenderRef.stderr.ref = console
appender.console.type = Console
appender.console.name = console
appender.console.target = SYSTEM_ERR
appender.console.layout.type = PatternLayout
appender.console.layout.pattern = %d{HH:mm:ss} %p %c{1}: %m%n
logger.shutdown.name = org.apache.spark.util.ShutdownHookManager
logger.shutdown.level = error
logger.native.name = org.apache.hadoop.util.NativeCodeLoader
logger.native.level = error
logger.blockmanager.name = org.apache.spark.storage.BlockManagerMasterEndpoint
logger.blockmanager.level = error
logger.tsm.name = org.apache.spark.scheduler.TaskSetManager
logger.tsm.level = error
logger.ts.name = org.apache.spark.scheduler.TaskSchedulerImpl
logger.ts.level = error
logger.standalone.name = org.apache.spark.scheduler.cluster.StandaloneSchedulerBackend
logger.standalone.level = error
logger.utils.name = org.apache.spark.util.Utils
logger.utils.level = error
"""


def session(master: str = "local[*]", partitions: int | None = None, app_name: str = "kafka-mc",
            extra: dict | None = None):
    """A SparkSession configured for the engine: quiet (WARN, no console progress bar), the
    executors' Python the driver's own unless `PYSPARK_PYTHON` names another, adaptive execution
    off (partitioning stays as planned), Python workers reused between tasks, a row to an Arrow
    batch. The engine ships the driver's kafka-mc to the executors (`shipping.ship`) before its
    first job."""
    from pyspark.sql import SparkSession

    # PySpark takes the executors' Python from this variable alone (pyspark/context.py, `pythonExec`,
    # 3.5 and 4.x; the spark.pyspark.python setting is read only by spark-submit): without it they
    # run whatever `python3` is first on PATH, which may lack pyarrow or be absent.
    os.environ.setdefault("PYSPARK_PYTHON", sys.executable)
    log4j = Path(tempfile.gettempdir()) / "kafka-mc-spark-log4j2.properties"
    if not log4j.exists() or log4j.read_text() != _LOG4J:
        log4j.write_text(_LOG4J)
    java_options = f"-Dlog4j2.configurationFile=file:{log4j} -Dlog4j.configurationFile=file:{log4j}"
    builder = (SparkSession.builder.master(master).appName(app_name)
               .config("spark.ui.showConsoleProgress", "false")
               .config("spark.ui.enabled", "false")
               .config("spark.driver.extraJavaOptions", java_options)
               .config("spark.executor.extraJavaOptions", java_options)
               .config("spark.sql.adaptive.enabled", "false")
               .config("spark.locality.wait", "0")
               .config("spark.python.worker.reuse", "true")
               # a level's rows are each a batch of up to 65,536 states (megabytes): one to an Arrow batch, so
               # the level task's Python takes each as it comes, and the JVM builds no Arrow batch of a whole
               # level (spark_levels 3,4,2,1 on local[1], alternated: 55.2 and 54.1 s against 62.1 and 58.9 s)
               .config("spark.sql.execution.arrow.maxRecordsPerBatch", "1"))
    if partitions:
        builder = builder.config("spark.sql.shuffle.partitions", str(partitions))
    for key, value in (extra or {}).items():
        builder = builder.config(key, value)
    spark = builder.getOrCreate()
    spark.sparkContext.setLogLevel("WARN")
    return spark


def _executors(spark) -> int:
    """Executors registered with the driver (the driver itself in local mode)."""
    try:
        infos = spark.sparkContext._jsc.sc().statusTracker().getExecutorInfos()
        count = len(infos)
    except Exception:  # pragma: no cover - a Spark without the status tracker
        return 0
    return count if spark.sparkContext.master.startswith("local") else max(count - 1, 0)


# ------------------------------------------------------------------------- checkpoints


def _level_dir(depth: int) -> str:
    return f"level-{depth:05d}"


def _level_meta(depth: int) -> str:
    return f"level-{depth:05d}.json"


def _header(model: Model, symmetry: bool, keep_going: bool, kernel: bool) -> dict:
    """What a checkpoint is started with, as it reads back from JSON (`partitions` and `uid` are
    added when it is created)."""
    return json.loads(json.dumps({
        "format": CHECKPOINT_FORMAT, "engine": "kafka-mc spark", "model": model.name, "config": model.config.to_dict(),
        "symmetry": symmetry, "keep_going": keep_going, "properties": [p.name for p in model.properties],
        "executors": "kernel" if kernel else "python"}))


def read_checkpoint(location: str | Path, spark=None) -> tuple[dict, int]:
    """The header of a kafka-mc checkpoint and its last complete level; CheckpointError if
    `location` is not one, or one of another format. Without a session `spark`, a local
    directory only (`spark_storage.directory`)."""
    files = directory(location, spark)
    header_path = f"{str(location).rstrip('/')}/{CHECKPOINT_FILE}"
    if not files.is_dir():
        raise CheckpointError(f"{location} is not a directory")
    names = set(files.names())
    if CHECKPOINT_FILE not in names:
        raise CheckpointError(f"{location} is not a kafka-mc checkpoint (no {CHECKPOINT_FILE})")
    try:
        header = json.loads(files.read_text(CHECKPOINT_FILE))
    except (OSError, ValueError) as error:
        raise CheckpointError(f"{header_path} cannot be read: {error}") from None
    if isinstance(header, dict) and isinstance(header.get("format"), int) and header["format"] < CHECKPOINT_FORMAT \
            and header.get("engine") == "kafka-mc spark":
        raise CheckpointError(f"{location} is a kafka-mc checkpoint of format {header['format']}, written by an "
                              f"earlier kafka-mc; this one resumes format {CHECKPOINT_FORMAT} only")
    if not isinstance(header, dict) or header.get("format") != CHECKPOINT_FORMAT or "config" not in header:
        raise CheckpointError(f"{header_path} is not a kafka-mc checkpoint of format {CHECKPOINT_FORMAT}")
    depth = -1
    while _level_meta(depth + 1) in names:
        depth += 1
    if depth < 0:
        raise CheckpointError(f"{location} holds no complete level to resume from")
    return header, depth


def checkpoint_config(directory: str | Path, model: str = ReplicationSystem.name) -> tuple[Config, bool, bool]:
    """The replication configuration, symmetry and keep_going a local checkpoint of the model named
    `model` (the replication model, or `EpochBumpSystem.name`) was started with."""
    header, _ = read_checkpoint(directory)
    if header.get("model", ReplicationSystem.name) != model:
        raise CheckpointError(f"{directory} is a checkpoint of the {header['model']} model")
    try:
        return Config(**header["config"]), bool(header["symmetry"]), bool(header["keep_going"])
    except (TypeError, ValueError) as error:
        raise CheckpointError(f"{directory}: the checkpoint's configuration is not valid: {error}") from None


# ------------------------------------------------------------------------------ engine


@dataclass
class _Totals:
    generated: int = 0
    new_states: int = 0
    frontier: int = 0
    depth: int = 0
    found: dict = field(default_factory=dict)  # name -> {"level", "key", "parent" (step witnesses)}
    seconds: float = 0.0
    stopped_because: str = ""
    done: bool = False
    # the last level's expansion, counted with the next level (as the local engine counts it):
    # the successors it generated, and the step properties it found
    ahead: dict = field(default_factory=lambda: {"generated": 0, "found": {}})

    def to_json(self) -> dict:
        return dict(self.__dict__)


def kernel_programs(model: Model) -> tuple[dict[str, Program] | None, str]:
    """The kernel's programs of the replication model's users' properties, by name
    (`kernel.user_properties.lowered_program`), or None and why, for a property that does not lower."""
    from .kernel.engine import lowering_config
    from .kernel.user_properties import NotLowered, lowered_program

    config = lowering_config(model.config, isinstance(model, EpochBumpSystem))
    try:
        return {p.name: lowered_program(p, config) for p in model.properties if not shipped(p)}, ""
    except (NotLowered, ValueError) as error:
        return None, str(error)


def spark_check(model: Model | Config, properties: Iterable[Property] | None = None, *, keep_going: bool = False,
                symmetry: bool = False, master: str = "local[*]", partitions: int | None = None,
                checkpoint_dir: str | Path | None = None, resume: str | Path | None = None,
                budget: Budget = Budget(), progress: Callable[[Progress], None] | None = None,
                spark=None, kernel: bool | None = None) -> CheckResult:
    """`checker.bfs.check` on Spark, for the same models and with the same arguments: the same
    counts, verdicts and shortest traces."""
    return run_spark_check(model, properties, keep_going=keep_going, symmetry=symmetry, master=master,
                           partitions=partitions, checkpoint_dir=checkpoint_dir, resume=resume, budget=budget,
                           progress=progress, spark=spark, kernel=kernel)[0]


def run_spark_check(model: Model | Config, properties: Iterable[Property] | None = None, *, keep_going: bool = False,
                    symmetry: bool = False, master: str = "local[*]", partitions: int | None = None,
                    checkpoint_dir: str | Path | None = None, resume: str | Path | None = None,
                    budget: Budget = Budget(), progress: Callable[[Progress], None] | None = None,
                    spark=None, level_hook: Callable[[int], None] | None = None,
                    kernel: bool | None = None) -> tuple[CheckResult, SparkRun]:
    """`spark_check`, also returning what it ran on. `resume` is a checkpoint directory of an
    interrupted run of the same model and configuration (it is then also the checkpoint
    directory). `level_hook(depth)` is called after each level is committed (tests use it).
    `kernel`: the executors run the compiled kernel (the default for the replication model, with the
    controller's epoch bumps or without, when
    it has every property) or, false, the model itself."""
    if partitions is not None and (isinstance(partitions, bool) or not isinstance(partitions, int) or partitions < 1):
        raise ValueError(f"partitions must be a positive integer, not {partitions!r}")
    model = model_of(model, properties)
    names = [p.name for p in model.properties]
    if len(set(names)) != len(names):
        raise ValueError("property names must be distinct")
    replication = isinstance(model, (ReplicationSystem, EpochBumpSystem))
    if symmetry and not replication:
        raise ValueError(f"symmetry is for the replication model; the {model.name} model is explored without it")
    programs, why = kernel_programs(model) if replication else (None, f"the {model.name} model")
    chosen = kernel is not None  # else the kernel where it runs the properties, or as the resumed run chose
    if kernel is None:
        kernel = programs is not None
    elif kernel and programs is None:
        raise ValueError(f"the kernel runs the replication model (with the epoch bumps or without) and properties that "
                         f"lower, not {why}; run the executors with kernel=False")
    header = _header(model, symmetry, keep_going, kernel)

    own_session = spark is None
    if own_session:
        spark = session(master, partitions)
    location = resume if resume is not None else checkpoint_dir
    temporary = location is None
    if location is None:
        location = str(process_folder("spark"))  # removed below; a killed run's, by the next run
    context = spark.sparkContext

    def cancel() -> None:  # at Ctrl-C: the running job fails at once, the session is then stopped in order
        def quietly() -> None:
            # the killed tasks' errors are the interrupt's, not the user's to read: every logger off,
            # those _LOG4J sets to `error` too (setLogLevel sets the root logger's level only)
            try:
                log4j = context._jvm.org.apache.logging.log4j
                log4j.core.config.Configurator.setAllLevels(log4j.LogManager.ROOT_LOGGER_NAME, log4j.Level.OFF)
                context.cancelAllJobs()
            except Exception:  # the run already stopped between jobs, and its session with it
                pass

        threading.Thread(target=quietly, daemon=True).start()

    reached = 0  # the last level committed

    def committed(depth: int) -> None:
        nonlocal reached
        reached = depth
        if interrupt.arrived:
            raise Interrupted(f"after level {depth} (committed): a partial run, no verdict")
        if level_hook is not None:
            level_hook(depth)

    finished = False  # decided, or its checkpoint is not kept: the executors' visited sets go too
    try:
        files = HadoopDirectory(spark, location)
        header = _open_checkpoint(files, location, header, spark, resume is not None,
                                  partitions or context.defaultParallelism, chosen)
        kernel = header["executors"] == "kernel"
        totals, start_depth = header.pop("totals"), header.pop("last")
        reached = start_depth or 0
        ship(context)
        count = header["partitions"]
        spark.conf.set("spark.sql.shuffle.partitions", str(count))
        if not kernel and programs is not None:
            why = "kernel=False" if chosen else "the resumed checkpoint was written by the model's executors"
        run = SparkRun(master=context.master, executors=_executors(spark), partitions=count,
                       checkpoint_dir=files.uri, resumed_from_depth=start_depth, kernel=kernel,
                       model_because="" if kernel else why)
        with deferred_interrupts(cancel) as interrupt:
            try:
                engine = _Engine(spark, model, symmetry, keep_going, count, files, programs if kernel else None,
                                 header["uid"])
                result = engine.run(totals, start_depth, budget, progress, run, committed)
            except Exception:
                if interrupt.arrived:
                    raise Interrupted(f"after level {reached} (committed): a partial run, no verdict") from None
                raise
        finished = not engine.resumable
        run.executors = max(run.executors, _executors(spark))
        return result, run
    finally:
        if 'engine' in locals() and (finished or temporary):
            engine.release()
        if temporary and 'files' in locals():
            with contextlib.suppress(StorageError):
                files.delete()
        if own_session:
            spark.stop()


def _open_checkpoint(files: HadoopDirectory, location: str | Path, header: dict, spark, resumed: bool,
                     partitions: int, executors_chosen: bool) -> dict:
    """Open the checkpoint directory: resumed, where it must be one of this run (then levels past
    its last complete one are removed), or new, where it must be empty (its header written, with
    `partitions` and a new `uid`). The header in force, with `totals` and `last` (the last
    complete level, None for a new run) added: a resumed run keeps its checkpoint's partitions, and
    (`executors_chosen` false) its executors where they ran the model (a run started before users'
    properties ran on the kernel)."""
    if resumed:
        saved, last = read_checkpoint(location, spark)
        # a checkpoint written before the header named its model is of the replication model
        saved_model = saved.get("model", ReplicationSystem.name)
        if saved_model != header["model"] or saved["config"] != header["config"] or \
                saved["symmetry"] != header["symmetry"]:
            raise CheckpointError(f"{location} is a checkpoint of another configuration "
                                  f"(the {saved_model} model, {saved['config']}, symmetry {saved['symmetry']})")
        if saved["properties"] != header["properties"]:
            raise CheckpointError(f"{location} was checked with other properties ({', '.join(saved['properties'])})")
        if saved["keep_going"] != header["keep_going"]:
            raise CheckpointError(f"{location} was started with keep_going={saved['keep_going']}")
        if saved["executors"] == "python" and not executors_chosen:
            header = dict(header, executors="python")  # started before its properties ran on the kernel
        if saved["executors"] != header["executors"]:
            raise CheckpointError(f"{location} was started with the {saved['executors']} executors")
        if not isinstance(saved.get("partitions"), int) or saved["partitions"] < 1 or \
                not isinstance(saved.get("uid"), str):
            raise CheckpointError(f"{location}: its header names no partitions or uid")
        for name in files.names():  # a level the interrupted run had not finished
            if name.startswith("level-") and int(name[6:11]) > last:
                files.delete(name)
        return dict(saved, totals=_Totals(**json.loads(files.read_text(_level_meta(last)))), last=last)
    if files.exists():
        if not files.is_dir():
            raise CheckpointError(f"{location} is not a directory")
        names = files.names()
        if CHECKPOINT_FILE in names:
            raise CheckpointError(f"{location} already holds a kafka-mc checkpoint: resume it, or choose another "
                                  "directory")
        if names:
            raise CheckpointError(f"{location} is not empty")
    header = dict(header, partitions=partitions, uid=uuid.uuid4().hex)
    files.mkdirs()
    files.write_text(CHECKPOINT_FILE, json.dumps(header, indent=1))
    return dict(header, totals=_Totals(), last=None)


class _Engine:
    def __init__(self, spark, model: Model, symmetry: bool, keep_going: bool, count: int, files: HadoopDirectory,
                 programs: dict[str, Program] | None, uid: str):
        """`programs`: the users' properties' kernel programs (`kernel_programs`) when the executors
        run the kernel; None when they run the model."""
        self.spark, self.model, self.uid = spark, model, uid
        self.kernel, self.programs = programs is not None, programs or {}
        self.bumps = isinstance(model, EpochBumpSystem)  # the kernel's model with the controller's epoch bumps
        self.config, self.properties, self.encoded = model.config, model.properties, capabilities(model)
        self.symmetry, self.keep_going, self.count, self.files = symmetry, keep_going, count, files
        self.invariants = {p.name for p in model.properties if p.kind == ALWAYS}
        self.state_props = tuple(p for p in model.properties if not p.on_step)
        self.step_props = tuple(p for p in model.properties if p.on_step)
        self.bits = {p.name: 1 << index for index, p in enumerate(self.state_props)}
        self.levels_from_disk = 0  # levels run again with the visited sets read from the checkpoint
        self.resumable = False  # the run stopped with its budget spent
        self.level_schema = level_schema()

    # ------------------------------------------------------------------ levels

    def _read_level(self, *depths: int, slot: int):
        """The rows of one kind (`slot`: STATES, VISITED or CANDIDATES) of levels' Parquet."""
        uris = (self.files.uri_at(_level_dir(depth)) for depth in depths)
        return self.spark.read.schema(self.level_schema).parquet(*uris).where(f"slot = {slot}")

    def _flags(self, settled: set[str]) -> tuple[dict[str, int], Callable[[], Callable]]:
        """The property bits still wanted, and the executors' function of packed states to them."""
        bits = {name: bit for name, bit in self.bits.items() if name not in settled}
        if self.kernel:
            return bits, kernel_flags(self.config, self.symmetry, self.bumps, bits,
                                      {name: self.programs[name] for name in bits if name in self.programs})
        return bits, _python_flags(self.model, self.state_props, bits)

    def _expander(self, settled: set[str]) -> Callable:
        """The executors' expansion of a level's new states, for the step properties still wanted."""
        if self.kernel:
            steps = tuple((index, self.programs.get(p.name)) for index, p in enumerate(self.step_props)
                          if p.name not in settled)
            return kernel_expander(self.config, self.symmetry, self.bumps, steps)
        wanted = tuple((index, p) for index, p in enumerate(self.step_props) if p.name not in settled)
        return _expander(self.model, self.symmetry, wanted)

    def _write_level(self, candidates, depth: int, settled: set[str], from_disk: bool) -> list[dict] | None:
        """One Spark job: `candidates` (CANDIDATES rows) shuffled by owner into the partitions (one
        partition takes them all, read into its one task without a shuffle: `coalesce(1)`), each
        deduplicated against its visited set and expanded by `spark_level.level_step`, written as
        level `depth` with the next level's candidates. The partitions' summaries, or None when a
        partition's visited set was not on the machine that ran it."""
        bits, flags = self._flags(settled)
        summaries = self.spark.sparkContext.accumulator([], SummaryList())
        step = level_step(depth, self.uid, self.count, from_disk, flags, bits, self._expander(settled), summaries,
                          self.level_schema)
        owned = candidates.coalesce(1) if self.count == 1 else candidates.repartition(self.count, "owner")
        (owned.mapInArrow(step, self.level_schema)
         .write.mode("overwrite").options(**WRITE_OPTIONS).parquet(self.files.uri_at(_level_dir(depth))))
        reports = {report["partition"]: report for report in summaries.value}
        if len(reports) != self.count:
            raise RuntimeError(f"level {depth}: {self.count - len(reports)} of {self.count} partitions sent no summary")
        if any(report["miss"] for report in reports.values()):
            return None
        return list(reports.values())

    def _summary(self, depth: int, reports: list[dict]) -> tuple[int, dict[str, dict], dict]:
        """(new states, found, ahead) of a level from its partitions' summaries: per state property,
        the least key of its states (ties: the least fingerprint), whatever the partitioning; and its
        expansion's, for the next level: the successors generated and, per step property, the least
        key of an edge where it is found (ties: the least parent)."""
        found: dict[str, dict] = {}
        for name in self.bits:
            pairs = [tuple(report["found"][name]) for report in reports if name in report["found"]]
            if pairs:
                key, fp = min(pairs)
                found[name] = {"level": depth, "key": key, "fp": fp}
        steps: dict[str, dict] = {}
        for index, prop in enumerate(self.step_props):
            pairs = [tuple(report["steps"][index]) for report in reports if index in report["steps"]]
            if pairs:
                key, parent = min(pairs)
                steps[prop.name] = {"level": depth, "key": key, "parent": parent}
        ahead = {"generated": sum(report["generated"] for report in reports), "found": steps}
        return sum(report["new"] for report in reports), found, ahead

    def seed(self, totals: _Totals) -> None:
        initial_states = self.model.initial_states()
        if self.kernel:
            rows = seed_rows(self.config, self.symmetry, self.bumps, self.count, self.level_schema)
        else:
            rows = self._seed_rows(initial_states)
        reports = self._write_level(self.spark.createDataFrame(rows, self.level_schema), 0, set(), False)
        if reports is None:  # pragma: no cover - level 0 reads no visited set
            raise RuntimeError("level 0: a partition missed its visited set")
        new_states, found, totals.ahead = self._summary(0, reports)
        totals.generated, totals.new_states, totals.frontier = len(initial_states), new_states, new_states
        for name, entry in found.items():
            totals.found.setdefault(name, entry)

    def _seed_rows(self, initial_states: list) -> list[tuple]:
        """Level 0's CANDIDATES rows of the initial states, packed by the model (the level step keeps
        one of each fingerprint, the first: its edge key is its index)."""
        represent, encoded = canonical if self.symmetry else _identity, self.encoded
        states = [represent(state) for state in initial_states]
        return seed_payloads(self.level_schema, self.count, [encoded.owner_hash(state) for state in states],
                             [encoded.fingerprint(state) for state in states], range(len(states)),
                             [encoded.pack_state(state) for state in states])

    def level(self, depth: int, settled: set[str]) -> tuple[int, dict, dict]:
        """Level `depth` from the candidates level `depth - 1` holds, in one Spark job writing it with
        its own expansion (two jobs when a partition's visited set is not on the machine that ran it:
        the level runs again with the visited sets read from the checkpoint): (new states, found,
        ahead), as `_summary` gives them."""
        candidates = self._read_level(depth - 1, slot=CANDIDATES)
        reports = self._write_level(candidates, depth, settled, False)
        if reports is None:
            self.levels_from_disk += 1
            candidates = candidates.unionByName(self._read_level(*range(depth), slot=VISITED))
            reports = self._write_level(candidates, depth, settled, True)
            if reports is None:  # pragma: no cover - the visited sets were in the job's input
                raise RuntimeError(f"level {depth}: a partition missed its visited set")
        return self._summary(depth, reports)

    # -------------------------------------------------------------------- loop

    def run(self, totals: _Totals, start_depth: int | None, budget: Budget,
            progress: Callable[[Progress], None] | None, run: SparkRun,
            level_hook: Callable[[int], None] | None) -> CheckResult:
        started = time.perf_counter() - totals.seconds
        if start_depth is None:
            self.seed(totals)
            level_number = 0
            totals.seconds = time.perf_counter() - started
            self.files.write_text(_level_meta(0), json.dumps(totals.to_json()))
            if level_hook:
                level_hook(0)
        else:
            level_number = start_depth
        while totals.frontier and not totals.done:
            found = totals.found
            elapsed = time.perf_counter() - started
            totals.stopped_because = stop_reason(found, self.invariants, len(self.properties), self.keep_going,
                                                 budget, totals.new_states, elapsed)
            if totals.stopped_because:  # a budget's stop may be resumed with a larger one
                self.resumable = totals.stopped_because == budget.exceeded(totals.new_states, elapsed)
                break
            level_started = time.perf_counter()
            level_number += 1
            ahead = totals.ahead  # the level before's expansion: this level's successors and step witnesses
            new_states, level_found, totals.ahead = self.level(level_number, set(found) | set(ahead["found"]))
            totals.generated += ahead["generated"]
            totals.new_states += new_states
            totals.frontier = new_states
            totals.depth += 1 if new_states else 0
            for name, entry in sorted({**level_found, **ahead["found"]}.items()):
                found.setdefault(name, entry)
            totals.seconds = time.perf_counter() - started
            self.files.write_text(_level_meta(level_number), json.dumps(totals.to_json()))
            run.level_seconds.append(time.perf_counter() - level_started)
            if progress:
                progress(Progress(totals.depth, totals.generated, totals.new_states, totals.frontier,
                                  totals.seconds))
            if level_hook:
                level_hook(level_number)
        run.levels_from_disk = self.levels_from_disk
        engine = "spark" + ("+symmetry" if self.symmetry else "")
        traces = self.traces(totals.found)
        for prop in self.properties:
            if prop.name in self.programs and prop.name in traces:
                from .kernel.user_properties import confirm

                confirm(prop, traces[prop.name], self.symmetry)
        return search_result(engine, self.config, self.properties, traces,
                             not totals.frontier and not totals.stopped_because,
                             Stats(totals.new_states, totals.generated, totals.depth, time.perf_counter() - started),
                             totals.stopped_because)

    def traces(self, found: dict[str, dict]) -> dict[str, Trace]:
        """Shortest traces by lookups: the state by its fingerprint in its level, then each parent by
        its fingerprint in the level before, one read per level for every trace at once (the STATES
        rows whose range of fingerprints holds one wanted)."""
        from pyspark.sql import functions as F

        if not found:
            return {}
        paths: dict[str, list[int]] = {name: [] for name in found}  # name -> slots, last first (then the initial index)
        want: dict[int, dict[int, list[str]]] = {}  # level -> fp -> names
        for name, entry in found.items():
            start = entry["parent"] if "parent" in entry else entry["fp"]  # a step witness: to the edge's parent
            want.setdefault(entry["level"], {}).setdefault(start, []).append(name)
        for level in range(max(want), -1, -1):
            fps = want.get(level, {})
            if not fps:
                continue
            condition = F.lit(False)
            for fp in fps:
                condition = condition | ((F.col("fp") <= fp) & (F.col("key") >= fp))
            states = read_states([row["payload"] for row in
                                  self._read_level(level, slot=STATES).where(condition).select("payload").collect()])
            for fp, names in fps.items():
                _, parent, slot, _ = states[fp]
                for name in set(names):
                    paths[name].append(slot)
                    if level > 0:
                        want.setdefault(level - 1, {}).setdefault(parent, []).append(name)
        represent: Callable[[Any], Any] = canonical if self.symmetry else _identity
        if self.kernel and self.symmetry:
            from .kernel.batch import KernelBatch

            represent = KernelBatch(self.config, symmetry=True, bumps=self.bumps).represent
        traces = {}
        for name, path in paths.items():
            initial, *slots = reversed(path)
            entry = found[name]
            edge = (entry["parent"], entry["key"]) if "parent" in entry else None
            traces[name] = path_trace(self.model, initial, self._actions(initial, slots, edge, represent),
                                      self.symmetry, represent)
        return traces

    def _actions(self, initial: int, slots: list[int], edge: tuple[int, int] | None,
                 represent: Callable[[Any], Any]) -> list:
        """The actions of a path of slots from the initial state `initial`, replayed over class
        representatives; then, for a step witness, the action of its `edge` (parent fingerprint,
        key) out of the path's last state."""
        encoded = self.encoded
        state = represent(self.model.initial_states()[initial])
        actions = []
        for slot in slots:
            actions.append(encoded.action_at(state, slot))
            state = represent(next_state(self.model, state, actions[-1]))
        if edge is not None:
            parent_fp, key = edge
            actions.append(next(action for slot, action, _ in encoded.successors(state)
                                if edge_key(parent_fp, slot) == key))
        return actions

    def release(self) -> None:
        """Remove the visited sets kept beside the executors: this machine's, and (best effort,
        a task per core) those of a cluster's other machines."""
        drop_cache(self.uid)
        context = self.spark.sparkContext
        if not context.master.startswith("local"):
            uid = self.uid
            with contextlib.suppress(Exception):  # the session may be gone
                tasks = max(2 * context.defaultParallelism, self.count)
                context.parallelize(range(tasks), tasks).foreach(lambda _: drop_cache(uid))
