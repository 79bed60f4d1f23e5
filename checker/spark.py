"""The Spark engine: level-synchronous breadth-first search spread across Spark executors, for
any model (`model.interface.Model`) or a `Config` of the replication model.

Each BFS level is one Spark job with one shuffle; the driver only loops over levels and reads
one small summary per partition (counts, the least key of each property's states, through an
accumulator), never a frontier or the visited set.

For the replication model (with the controller's epoch bumps or without) the executors run the
compiled kernel (`checker.spark_kernel`: Arrow batches of packed states, no Python per state),
users' own properties lowered to the kernel's programs (`checker.kernel.user_properties`; the
driver evaluates the user's function where one is found, as `kernel_check` does); for any other
model, or a user's property that does not lower, they run the model itself, state
by state, through its `model.interface.Capabilities` (the model's own packing, fingerprint, owner
hash and action slots where it has them, else pickle, `hash` and a successor's position). Both
feed the one level step (`checker.spark_level`); they encode states differently, so a checkpoint
names the one it was written with.

A level on disk (`DIR/level-NNNNN/`, Parquet, one file per partition; `spark_level.LEVEL_COLUMNS`)
holds the new states of that depth, each partition's sorted by fingerprint: `owner` (a hash to
partition by: the model's `owner_hash`; with the kernel, the fingerprint), `fp` (the 64-bit
fingerprint, signed), `key` (the edge key, below), `parent` (the parent's fingerprint), `slot`
(the action slot; for depth 0 the initial-state index), `state` (the state, packed: the kernel's
packed row, or the model's `pack_state`) and `props` (a bit per property the state violates, for
invariants, or reaches, for state witnesses); and the same fingerprints again, sorted, a few
`VISITED` rows per partition (`visited`: int64 bytes): the partition's part of the visited set
that the level added.

One level (the job of `_Engine.level`):
1. level `depth - 1` is read back from Parquet (lineage is cut there);
2. executors expand it in Arrow batches (`mapInArrow`: the kernel, or the model shipped with the
   job), as class representatives under symmetry (the replication model's), keep each successor
   once per batch, and again across a task's batches (`spark_level.Candidates`), with the edge
   of least key (an edge's key is a 64-bit mix of its parent's fingerprint and its action slot,
   `edge_key`, ties broken by parent and slot, so which shortest path a state keeps does not
   depend on the partitioning or on the order of rows), and drop those their machine knows
   visited (`spark_level.unvisited`), sending the rest as a few large rows, each a batch of one
   partition's candidates (`CANDIDATES`);
3. the one shuffle: `repartition(P, "owner")`, so partition p holds every candidate it owns;
4. partition p's task (`spark_level.level_step`) keeps, for each fingerprint, its edge of least
   key (numpy: one sort), drops those in p's visited set (a sorted int64 array, a galloping search
   in numba: `spark_level.positions`),
   checks the properties on the new states, and returns them with their VISITED rows, which
   Spark writes as the level; it adds its summary to the level's accumulator.

p's visited set through the last level is also kept beside the executors, as a file in the
temporary directory of the machine that ran p's task (memory-mapped, shared by that machine's
executors): a task that does not find it there reports a miss, and the driver runs the level
again with every partition's VISITED rows of the earlier levels read from the checkpoint into
the shuffle (`SparkRun.levels_from_disk` counts those levels). A run that is decided, or whose
checkpoint is temporary, removes those files.

Every count, verdict and shortest length equals the local engine's; the traces are shortest
ones too, but the local engine keeps the least path in its own order, so the two may show
different (equally short) traces.

Counterexamples: the driver looks the violating state up by key in its level, then its
parent by fingerprint in the level before, down to depth 0 (one small filtered read per
level), and replays the path's slots through the model, each turned into its action out of the
state it leaves (`Capabilities.action_at`; `bfs.path_trace`).

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
from .spark_level import LEVEL_COLUMNS, VISITED, Candidates, SummaryList, arrow_schema, drop_cache, level_step
from .spark_storage import HadoopDirectory, StorageError, directory

if TYPE_CHECKING:
    from .kernel.user_properties import Program

CHECKPOINT_FILE = "kafka-mc-checkpoint.json"
# a level's write: no _SUCCESS file (the level's JSON marks it complete), each task's file moved in
# place when the task commits (not again by the driver when the job does), and no dictionary encoding
# (fingerprints, keys and parents are random: Parquet's dictionary of each column filled up, then fell back)
WRITE_OPTIONS = {"mapreduce.fileoutputcommitter.marksuccessfuljobs": "false",
                 "mapreduce.fileoutputcommitter.algorithm.version": "2",
                 "parquet.enable.dictionary": "false"}
CHECKPOINT_FORMAT = 3  # 3: the visited set as sorted fingerprints per partition and level (2: rows, anti-joins)


def level_schema():
    """The Spark schema of a level's rows (`spark_level.LEVEL_COLUMNS`); `parent` and `visited` nullable."""
    from pyspark.sql.types import BinaryType, IntegerType, LongType, StructField, StructType

    types = {"owner": LongType(), "fp": LongType(), "key": LongType(), "parent": LongType(),
             "slot": IntegerType(), "state": BinaryType(), "props": LongType(), "visited": BinaryType()}
    return StructType([StructField(name, types[name], name in ("parent", "visited")) for name in LEVEL_COLUMNS])


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


def _expander(model: Model, symmetry: bool, step_props: tuple[tuple[int, Property], ...],
              place: tuple[str, int, int], schema):
    """mapInArrow over level `depth - 1` (fp, state), for any model: the successors of its
    batches, each once per batch with its least edge key, gathered and deduplicated again across
    batches by `spark_level.Candidates`, less those this machine knows visited, into the level's
    candidates, then the bookkeeping rows: how many successors were
    generated, and for each step property still wanted (`step_props`: its index among the step
    properties, and it) the least key and parent of an edge where it is found (a witness holds,
    an invariant is broken). `place`: the checkpoint's uid, the level `depth` and the partition
    count."""

    def expand(batches: Iterator[Any]) -> Iterator[Any]:
        import numpy as np
        import pyarrow as pa

        encoded = capabilities(model)
        successors, unpack, pack, fingerprint, owner_hash = (encoded.successors, encoded.unpack_state,
                                                             encoded.pack_state, encoded.fingerprint,
                                                             encoded.owner_hash)
        represent = canonical if symmetry else _identity
        candidates = Candidates(place, arrow_schema(schema))
        for batch in batches:
            best: dict[int, list] = {}
            generated = 0
            found: dict[int, tuple[int, int]] = {}
            for parent_fp, blob in zip(batch.column(0).to_pylist(), batch.column(1).to_pylist()):
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
        yield from candidates.flush()

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
    off (partitioning stays as planned), Python workers reused between tasks. The engine ships
    the driver's kafka-mc to the executors (`shipping.ship`) before its first job."""
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
               .config("spark.sql.execution.arrow.maxRecordsPerBatch", "65536"))
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
        location = tempfile.mkdtemp(prefix="kafka-mc-spark-")
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

    def _read_level(self, *depths: int, states: bool = True):
        """Levels' Parquet: their states or (`states` false) their VISITED rows."""
        frame = self.spark.read.schema(self.level_schema).parquet(*(self.files.uri_at(_level_dir(d)) for d in depths))
        return frame.where("slot >= 0") if states else frame.where(f"slot = {VISITED}")

    def _flags(self, settled: set[str]) -> tuple[dict[str, int], Callable[[], Callable]]:
        """The property bits still wanted, and the executors' function of packed states to them."""
        bits = {name: bit for name, bit in self.bits.items() if name not in settled}
        if self.kernel:
            return bits, kernel_flags(self.config, self.symmetry, self.bumps, bits,
                                      {name: self.programs[name] for name in bits if name in self.programs})
        return bits, _python_flags(self.model, self.state_props, bits)

    def _write_level(self, candidates, depth: int, settled: set[str], from_disk: bool) -> list[dict] | None:
        """One Spark job: `candidates` (level rows) shuffled by owner into the partitions, each
        deduplicated against its visited set by `spark_level.level_step`, written as level
        `depth`. The partitions' summaries, or None when a partition's visited set was not on the
        machine that ran it."""
        bits, flags = self._flags(settled)
        summaries = self.spark.sparkContext.accumulator([], SummaryList())
        step = level_step(depth, self.uid, self.count, from_disk, flags, bits, summaries, self.level_schema)
        (candidates.repartition(self.count, "owner").mapInArrow(step, self.level_schema)
         .write.mode("overwrite").options(**WRITE_OPTIONS).parquet(self.files.uri_at(_level_dir(depth))))
        reports = {report["partition"]: report for report in summaries.value}
        if len(reports) != self.count:
            raise RuntimeError(f"level {depth}: {self.count - len(reports)} of {self.count} partitions sent no summary")
        if any(report["miss"] for report in reports.values()):
            return None
        return list(reports.values())

    def _summary(self, depth: int, reports: list[dict]) -> tuple[int, int, dict[str, dict]]:
        """(generated, new states, found) of a level from its partitions' summaries: per property,
        the least key of its states, or of an edge into them for a step witness (ties: the least
        parent), whatever the partitioning."""
        found: dict[str, dict] = {}
        for name in self.bits:
            keys = [report["found"][name] for report in reports if name in report["found"]]
            if keys:
                found[name] = {"level": depth, "key": min(keys)}
        for index, prop in enumerate(self.step_props):
            pairs = [tuple(report["steps"][index]) for report in reports if index in report["steps"]]
            if pairs:
                key, parent = min(pairs)
                found[prop.name] = {"level": depth - 1, "key": key, "parent": parent}
        return (sum(report["generated"] for report in reports), sum(report["new"] for report in reports), found)

    def seed(self, totals: _Totals) -> None:
        initial_states = self.model.initial_states()
        rows = seed_rows(self.config, self.symmetry, self.bumps) if self.kernel else self._seed_rows(initial_states)
        reports = self._write_level(self.spark.createDataFrame(rows, self.level_schema), 0, set(), False)
        if reports is None:  # pragma: no cover - level 0 reads no visited set
            raise RuntimeError("level 0: a partition missed its visited set")
        _, new_states, found = self._summary(0, reports)
        totals.generated, totals.new_states, totals.frontier = len(initial_states), new_states, new_states
        for name, entry in found.items():
            totals.found.setdefault(name, entry)

    def _seed_rows(self, initial_states: list) -> list[tuple]:
        """The level-0 candidate rows of the distinct initial states, packed by the model."""
        represent, encoded = canonical if self.symmetry else _identity, self.encoded
        seen, rows = set(), []
        for index, state in enumerate(initial_states):
            state = represent(state)
            fp = encoded.fingerprint(state)
            if fp not in seen:
                seen.add(fp)
                rows.append((encoded.owner_hash(state), fp, index, None, index, encoded.pack_state(state), 0, None))
        return rows

    def _successors(self, depth: int, settled: set[str]):
        """The candidates of level `depth`: the successors of level `depth - 1`, each once per
        executor batch with its least edge key, and the batches' bookkeeping rows."""
        frontier = self._read_level(depth - 1).select("fp", "state")
        place = (self.uid, depth, self.count)
        if self.kernel:
            steps = tuple((index, self.programs.get(p.name)) for index, p in enumerate(self.step_props)
                          if p.name not in settled)
            expand = kernel_expander(self.config, self.symmetry, self.bumps, steps, place, self.level_schema)
        else:
            wanted = tuple((index, p) for index, p in enumerate(self.step_props) if p.name not in settled)
            expand = _expander(self.model, self.symmetry, wanted, place, self.level_schema)
        return frontier.mapInArrow(expand, self.level_schema)

    def level(self, depth: int, settled: set[str]) -> tuple[int, int, dict]:
        """Expand level `depth - 1` into level `depth`, in one Spark job writing it (two when a
        partition's visited set is not on the machine that ran it: the level runs again with the
        visited sets read from the checkpoint): (generated, new states, found)."""
        reports = self._write_level(self._successors(depth, settled), depth, settled, False)
        if reports is None:
            self.levels_from_disk += 1
            candidates = self._successors(depth, settled).unionByName(self._read_level(*range(depth), states=False))
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
            generated, new_states, level_found = self.level(level_number, set(found))
            totals.generated += generated
            totals.new_states += new_states
            totals.frontier = new_states
            totals.depth += 1 if new_states else 0
            for name, entry in sorted(level_found.items()):
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
        """Shortest traces by lookups: the state by its key in its level, then each parent by its
        fingerprint in the level before, one filtered read per level for every trace at once."""
        from pyspark.sql import functions as F

        if not found:
            return {}
        paths: dict[str, list[int]] = {name: [] for name in found}  # name -> slots, last first (then the initial index)
        want_key: dict[int, dict[int, list[str]]] = {}  # level -> key -> names
        want_fp: dict[int, dict[int, list[str]]] = {}  # level -> fp -> names
        for name, entry in found.items():
            if "parent" in entry:  # a step witness: the path to the edge's parent, then the edge
                want_fp.setdefault(entry["level"], {}).setdefault(entry["parent"], []).append(name)
            else:
                want_key.setdefault(entry["level"], {}).setdefault(entry["key"], []).append(name)
        top = max(set(want_key) | set(want_fp))
        for level in range(top, -1, -1):
            keys, fps = want_key.get(level, {}), want_fp.get(level, {})
            if not keys and not fps:
                continue
            condition = F.lit(False)
            if keys:
                condition = condition | F.col("key").isin(list(keys))
            if fps:
                condition = condition | F.col("fp").isin(list(fps))
            rows = self._read_level(level).where(condition).select("fp", "key", "parent", "slot").collect()
            for row in rows:
                names = keys.get(row["key"], []) + fps.get(row["fp"], [])
                for name in set(names):
                    paths[name].append(row["slot"])
                    if level > 0:
                        want_fp.setdefault(level - 1, {}).setdefault(row["parent"], []).append(name)
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
