"""The Spark engine: level-synchronous breadth-first search spread across Spark executors, for
any model (`model.interface.Model`) or a `Config` of the replication model.

Each BFS level is a handful of Spark jobs; the driver only loops over levels and reads back
small aggregates (counts, the least key of each property), never a frontier or the visited set.

For the replication model with kafka-mc's own properties the executors run the compiled kernel
(`checker.spark_kernel`: Arrow batches of packed states, no Python per state); for any other
model, or a property the kernel lacks (a user's own predicate), they run the model itself, row by
row, through its `model.interface.Capabilities` (the model's own packing, fingerprint, owner hash
and action slots where it has them, else pickle, `hash` and a successor's position). The two
encode states differently, so a checkpoint names the one it was written with.

A level on disk (`DIR/level-NNNNN/`, Parquet, one file per partition) holds the new states of
that depth: `owner` (a hash to partition by: the model's `owner_hash`; with the kernel, the
fingerprint), `fp` (the 64-bit fingerprint, signed), `key` (the edge key, below), `parent` (the
parent's fingerprint), `slot` (the action slot; for depth 0 the initial-state index), `state` (the
state, packed: the kernel's packed row, or the model's `pack_state`) and `props` (a bit per
property the state violates, for invariants, or reaches, for state witnesses).

One level:
1. the frontier is read back from Parquet (lineage is cut there);
2. executors generate successors in batches (the kernel, or the model shipped with the job),
   as class representatives under symmetry (the replication model's), and deduplicate them within
   the batch, keeping the edge of least key: an edge's key is a 64-bit mix of its parent's
   fingerprint and its action slot (`edge_key`), ties broken by parent and slot, so which
   shortest path a state keeps does not depend on the partitioning or on the order of rows;
3. successors are shuffled by the owner hash (`repartition(P, "owner")`), duplicates are
   removed by key (`groupBy(owner, fp)`, least key wins), and states already visited are
   removed by left-anti joins against the visited set, kept as a few runs of levels, each
   cached, partitioned by the same owner hash and sorted by (owner, fp), so every join is
   partition-local and needs no sort of the visited set (the candidates are sorted once);
   two runs covering as many levels are merged, as a binary counter, so a level has at most
   log2(depth) + 1 joins (one join per level ran out of execution memory past 20 levels);
4. executors check the properties on the new states; the level is written as Parquet;
   the driver reads back its count and the least key of each property's states.

Every count, verdict and shortest length equals the local engine's; the traces are shortest
ones too, but the local engine keeps the least path in its own order, so the two may show
different (equally short) traces.

Counterexamples: the driver looks the violating state up by key in its level, then its
parent by fingerprint in the level before, down to depth 0 (one small filtered read per
level), and replays the path's slots through the model, each turned into its action out of the
state it leaves (`Capabilities.action_at`; `bfs.path_trace`).

A run can be resumed from its checkpoint directory: `DIR/kafka-mc-checkpoint.json` names the
model and its configuration, and `DIR/level-NNNNN.json` is written once level N is complete.
Every file of it, the driver's too, goes through Spark's Hadoop filesystem layer
(`checker.spark_storage`), so DIR may be a local path or any URI that Spark's Hadoop reaches
(`hdfs://`, `s3a://`, `file://`).
"""

from __future__ import annotations

import contextlib
import json
import os
import sys
import tempfile
import threading
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any, Callable, Iterable

from kafka_mc.control.replication import ReplicationSystem, model_of
from kafka_mc.model import Config
from kafka_mc.model.interface import Model, capabilities, next_state
from kafka_mc.model.symmetry import canonical
from kafka_mc.properties import ALWAYS, Property
from kafka_mc.properties.user import UserPropertyError

from .bfs import Budget, Progress, path_trace, search_result, stop_reason
from .interrupts import Interrupted, deferred_interrupts
from .result import CheckResult, Stats, Trace
from .shipping import ship
from .spark_kernel import edge_key, kernel_checker, kernel_expander, seed_rows
from .spark_storage import HadoopDirectory, StorageError, directory

if TYPE_CHECKING:
    from pyspark.sql import DataFrame

CHECKPOINT_FILE = "kafka-mc-checkpoint.json"
CHECKPOINT_FORMAT = 2
LEVEL_COLUMNS = ("owner", "fp", "key", "parent", "slot", "state", "props")
_FLUSH = 200_000  # successors deduplicated in one Python worker before they are handed to Spark


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


def _expander(model: Model, symmetry: bool, step_props: tuple[Property, ...]):
    """mapPartitions over a frontier (rows: fp, state): every successor once per partition with
    its least edge key, how many times it was generated, and for each step property the least key
    (and parent) of an edge into it where it is found (a witness holds, an invariant is broken)."""
    steps = len(step_props)

    def expand(rows):
        encoded = capabilities(model)
        successors, unpack, pack, fingerprint, owner_hash = (encoded.successors, encoded.unpack_state,
                                                             encoded.pack_state, encoded.fingerprint,
                                                             encoded.owner_hash)
        represent = canonical if symmetry else _identity
        best: dict[int, list] = {}
        for parent_fp, blob in rows:
            state = unpack(blob)
            for slot, action, following in successors(state):
                held = [_holds(p, state, action, following) != (p.kind == ALWAYS) for p in step_props] if steps else ()
                following = represent(following)
                fp = fingerprint(following)
                key = edge_key(parent_fp, slot)
                entry = best.get(fp)
                if entry is None:
                    entry = best[fp] = [owner_hash(following), fp, key, parent_fp, slot, pack(following),
                                        1] + [None] * (2 * steps)
                else:
                    entry[6] += 1
                    if (key, parent_fp, slot) < (entry[2], entry[3], entry[4]):
                        entry[2], entry[3], entry[4] = key, parent_fp, slot
                for index, holds in enumerate(held):
                    if holds and (entry[7 + 2 * index] is None or key < entry[7 + 2 * index]):
                        entry[7 + 2 * index] = key
                        entry[8 + 2 * index] = parent_fp
            if len(best) >= _FLUSH:
                yield from map(tuple, best.values())
                best = {}
        yield from map(tuple, best.values())

    return expand


def _checker(model: Model, properties: tuple[Property, ...], bits: dict[str, int]):
    """mapPartitions over new states: the row with its `props` bitmask."""
    state_props = tuple((bits[p.name], p) for p in properties if not p.on_step and p.name in bits)

    def check(rows):
        unpack = capabilities(model).unpack_state
        for owner, fp, key, parent, slot, blob in rows:
            state = unpack(blob)
            mask = 0
            for bit, prop in state_props:
                if _holds(prop, state) != (prop.kind == ALWAYS):
                    mask |= bit
            yield owner, fp, key, parent, slot, blob, mask

    return check


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
    off (partitioning stays as planned), and joins allowed to reuse a partitioning on a subset of
    their keys (the owner hash). The engine ships the driver's kafka-mc to the executors
    (`shipping.ship`) before its first job."""
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
               .config("spark.sql.requireAllClusterKeysForCoPartition", "false")
               .config("spark.sql.autoBroadcastJoinThreshold", "-1")
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
    """What a checkpoint was started with, as it reads back from JSON."""
    return json.loads(json.dumps({
        "format": CHECKPOINT_FORMAT, "engine": "kafka-mc spark", "model": model.name, "config": model.config.to_dict(),
        "symmetry": symmetry, "keep_going": keep_going, "properties": [p.name for p in model.properties],
        "executors": "kernel" if kernel else "python"}))


def read_checkpoint(location: str | Path, spark=None) -> tuple[dict, int]:
    """The header of a kafka-mc checkpoint and its last complete level; CheckpointError if
    `location` is not one. Without a session `spark`, a local directory only
    (`spark_storage.directory`)."""
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
    if not isinstance(header, dict) or header.get("format") != CHECKPOINT_FORMAT or "config" not in header:
        raise CheckpointError(f"{header_path} is not a kafka-mc checkpoint of format {CHECKPOINT_FORMAT}")
    depth = -1
    while _level_meta(depth + 1) in names:
        depth += 1
    if depth < 0:
        raise CheckpointError(f"{location} holds no complete level to resume from")
    return header, depth


def checkpoint_config(directory: str | Path) -> tuple[Config, bool, bool]:
    """The replication configuration, symmetry and keep_going a local checkpoint was started with."""
    header, _ = read_checkpoint(directory)
    if header.get("model", ReplicationSystem.name) != ReplicationSystem.name:
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
    `kernel`: the executors run the compiled kernel (the default for the replication model when
    it has every property) or, false, the model itself."""
    if partitions is not None and (isinstance(partitions, bool) or not isinstance(partitions, int) or partitions < 1):
        raise ValueError(f"partitions must be a positive integer, not {partitions!r}")
    model = model_of(model, properties)
    names = [p.name for p in model.properties]
    if len(set(names)) != len(names):
        raise ValueError("property names must be distinct")
    replication = isinstance(model, ReplicationSystem)
    if symmetry and not replication:
        raise ValueError(f"symmetry is for the replication model; the {model.name} model is explored without it")
    from .kernel import supports

    if kernel is None:
        kernel = replication and supports(model.properties)
    elif kernel and not (replication and supports(model.properties)):
        raise ValueError("the kernel runs the replication model with kafka-mc's own properties only; run the "
                         "executors with kernel=False")
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

    try:
        files = HadoopDirectory(spark, location)
        totals, start_depth = _open_checkpoint(files, location, header, spark, resumed=resume is not None)
        reached = start_depth or 0
        ship(context)
        count = partitions or context.defaultParallelism
        spark.conf.set("spark.sql.shuffle.partitions", str(count))
        run = SparkRun(master=context.master, executors=_executors(spark), partitions=count,
                       checkpoint_dir=files.uri, resumed_from_depth=start_depth, kernel=kernel)
        with deferred_interrupts(cancel) as interrupt:
            try:
                engine = _Engine(spark, model, symmetry, keep_going, count, files, kernel)
                result = engine.run(totals, start_depth, budget, progress, run, committed)
            except Exception:
                if interrupt.arrived:
                    raise Interrupted(f"after level {reached} (committed): a partial run, no verdict") from None
                raise
        run.executors = max(run.executors, _executors(spark))
        return result, run
    finally:
        if 'engine' in locals():
            engine.release()
        if temporary and 'files' in locals():
            with contextlib.suppress(StorageError):
                files.delete()
        if own_session:
            spark.stop()


def _open_checkpoint(files: HadoopDirectory, location: str | Path, header: dict, spark,
                     resumed: bool) -> tuple[_Totals, int | None]:
    """Open the checkpoint directory: resumed, where it must be one of this run (its totals and last
    complete level, then levels past that one removed), or new, where it must be empty (its header
    written)."""
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
        if saved["executors"] != header["executors"]:
            raise CheckpointError(f"{location} was started with the {saved['executors']} executors")
        for name in files.names():  # a level the interrupted run had not finished
            if name.startswith("level-") and int(name[6:11]) > last:
                files.delete(name)
        return _Totals(**json.loads(files.read_text(_level_meta(last)))), last
    if files.exists():
        if not files.is_dir():
            raise CheckpointError(f"{location} is not a directory")
        names = files.names()
        if CHECKPOINT_FILE in names:
            raise CheckpointError(f"{location} already holds a kafka-mc checkpoint: resume it, or choose another "
                                  "directory")
        if names:
            raise CheckpointError(f"{location} is not empty")
    files.mkdirs()
    files.write_text(CHECKPOINT_FILE, json.dumps(header, indent=1))
    return _Totals(), None


class _Engine:
    def __init__(self, spark, model: Model, symmetry: bool, keep_going: bool, count: int, files: HadoopDirectory,
                 kernel: bool):
        self.spark, self.model, self.kernel = spark, model, kernel
        self.config, self.properties, self.encoded = model.config, model.properties, capabilities(model)
        self.symmetry, self.keep_going, self.count, self.files = symmetry, keep_going, count, files
        self.invariants = {p.name for p in model.properties if p.kind == ALWAYS}
        self.state_props = tuple(p for p in model.properties if not p.on_step)
        self.step_props = tuple(p for p in model.properties if p.on_step)
        self.bits = {p.name: 1 << index for index, p in enumerate(self.state_props)}
        self.visited: list[tuple[int, int, DataFrame]] = []  # runs: (first level, last level, cached frame)
        from pyspark.sql.types import (BinaryType, IntegerType, LongType, StructField, StructType)

        level_fields = [StructField("owner", LongType(), False), StructField("fp", LongType(), False),
                        StructField("key", LongType(), False), StructField("parent", LongType(), True),
                        StructField("slot", IntegerType(), False), StructField("state", BinaryType(), False)]
        self.new_schema = StructType(level_fields)
        self.level_schema = StructType(level_fields + [StructField("props", LongType(), False)])
        step_fields = []
        for index in range(len(self.step_props)):
            step_fields += [StructField(f"s{index}_key", LongType(), True),
                            StructField(f"s{index}_parent", LongType(), True)]
        self.successor_schema = StructType(level_fields + [StructField("gen", LongType(), False)] + step_fields)

    # ------------------------------------------------------------------ levels

    def _read_level(self, depth: int, states: bool = True):
        """A level's Parquet: its states or (`states` false) every row, the level's statistics too
        (rows with a negative slot: -1 carries the count of generated successors in `key`, -2-i
        the least key and parent of an edge where step witness i holds)."""
        frame = self.spark.read.schema(self.level_schema).parquet(self.files.uri_at(_level_dir(depth)))
        return frame.where("slot >= 0") if states else frame

    def _remember(self, depth: int) -> None:
        """Add level `depth` to the visited set: runs of levels, each read from Parquet, partitioned
        by owner, sorted by (owner, fp) and cached. Two runs covering as many levels are merged,
        as a binary counter, so there are at most log2(levels) + 1 runs: the joins of a level
        stay few, and each reads its run in join order, without sorting it again."""
        from pyspark import StorageLevel

        first = depth
        while self.visited and self.visited[-1][1] - self.visited[-1][0] == depth - first:
            first, _, merged = self.visited.pop()
            merged.unpersist()
        paths = [self.files.uri_at(_level_dir(level)) for level in range(first, depth + 1)]
        frame = (self.spark.read.schema(self.level_schema).parquet(*paths).where("slot >= 0").select("owner", "fp")
                 .repartition(self.count, "owner").sortWithinPartitions("owner", "fp"))
        self.visited.append((first, depth, frame.persist(StorageLevel.MEMORY_AND_DISK)))

    def _checked(self, new, settled: set[str]):
        """Check the properties on new states (rows of new_schema): rows of level_schema."""
        bits = {name: bit for name, bit in self.bits.items() if name not in settled}
        if self.kernel:
            return new.mapInArrow(kernel_checker(self.config, self.symmetry, bits, self.level_schema),
                                  self.level_schema)
        rows = new.rdd.mapPartitions(_checker(self.model, self.state_props, bits), preservesPartitioning=True)
        return self.spark.createDataFrame(rows, self.level_schema, verifySchema=False)

    def _write(self, frame, depth: int) -> None:
        frame.write.mode("overwrite").parquet(self.files.uri_at(_level_dir(depth)))

    def _level_summary(self, depth: int) -> tuple[int, int, dict[str, dict]]:
        """From a written level, in one read: its count of states, the successors generated to
        reach it, and per property it shows, the least key (and parent, for a step witness)."""
        from pyspark.sql import functions as F

        slot, key = F.col("slot"), F.col("key")
        aggregates = [F.count(F.when(slot >= 0, 1)).alias("n"),
                      F.coalesce(F.sum(F.when(slot == -1, key)), F.lit(0)).alias("generated")]
        for name, bit in self.bits.items():
            aggregates.append(F.min(F.when((slot >= 0) & (F.col("props").bitwiseAND(F.lit(bit)) != 0), key))
                              .alias(name))
        for index in range(len(self.step_props)):
            aggregates += [F.max(F.when(slot == -2 - index, key)).alias(f"k{index}"),
                           F.max(F.when(slot == -2 - index, F.col("parent"))).alias(f"p{index}")]
        row = self._read_level(depth, states=False).agg(*aggregates).first()
        found = {name: {"level": depth, "key": row[name]} for name in self.bits if row[name] is not None}
        for index, prop in enumerate(self.step_props):
            if row[f"k{index}"] is not None:
                found[prop.name] = {"level": depth - 1, "key": row[f"k{index}"], "parent": row[f"p{index}"]}
        return row["n"], row["generated"], found

    def seed(self, totals: _Totals) -> None:
        initial_states = self.model.initial_states()
        rows = seed_rows(self.config, self.symmetry) if self.kernel else self._seed_rows(initial_states)
        frame = self.spark.createDataFrame(rows, self.new_schema).repartition(self.count, "owner")
        self._write(self._checked(frame, set()), 0)
        new_states, _, found = self._level_summary(0)
        totals.generated, totals.new_states, totals.frontier = len(initial_states), new_states, new_states
        for name, entry in found.items():
            totals.found.setdefault(name, entry)

    def _seed_rows(self, initial_states: list) -> list[tuple]:
        """The level-0 rows of the distinct initial states, packed by the model."""
        represent, encoded = canonical if self.symmetry else _identity, self.encoded
        seen, rows = set(), []
        for index, state in enumerate(initial_states):
            state = represent(state)
            fp = encoded.fingerprint(state)
            if fp not in seen:
                seen.add(fp)
                rows.append((encoded.owner_hash(state), fp, index, None, index, encoded.pack_state(state)))
        return rows

    def _successors(self, frontier, settled: set[str]):
        """The successors of a frontier (fp, state), rows of the successor schema, each once per
        executor batch or partition with its least edge key."""
        if self.kernel:
            steps = tuple(p.name not in settled for p in self.step_props)
            return frontier.mapInArrow(kernel_expander(self.config, self.symmetry, steps, self.successor_schema),
                                       self.successor_schema)
        step_props = tuple(p for p in self.step_props if p.name not in settled)
        step_index = [self.step_props.index(p) for p in step_props]
        successors = frontier.rdd.mapPartitions(_expander(self.model, self.symmetry, step_props))
        # the expander writes the step columns of the unsettled step witnesses only: put them in place
        if len(step_props) != len(self.step_props):
            successors = successors.map(_spread_steps(step_index, len(self.step_props)))
        return self.spark.createDataFrame(successors, self.successor_schema, verifySchema=False)

    def level(self, depth: int, settled: set[str]) -> tuple[int, int, dict]:
        """Expand level `depth - 1` into level `depth`, in one job writing it: (generated, new
        states, found)."""
        from functools import reduce

        from pyspark import StorageLevel
        from pyspark.sql import functions as F

        frame = self._successors(self._read_level(depth - 1).select("fp", "state"), settled)
        width = len(self.step_props)
        aggregates = [F.min(F.struct("key", "parent", "slot", "state")).alias("best"), F.sum("gen").alias("gen")]
        for index in range(width):
            aggregates += [F.min(f"s{index}_key").alias(f"s{index}_key"),
                           F.min_by(f"s{index}_parent", f"s{index}_key").alias(f"s{index}_parent")]
        candidates = (frame.repartition(self.count, "owner").groupBy("owner", "fp").agg(*aggregates)
                      .persist(StorageLevel.MEMORY_AND_DISK))  # read by the states and by the statistics
        new = candidates.select("owner", "fp", "best.key", "best.parent", "best.slot", "best.state")
        for _, _, visited in self.visited:
            new = new.join(visited, ["owner", "fp"], "left_anti")
        # the level's statistics travel with it, as rows with a negative slot (the shuffle is reused)
        summary = [F.coalesce(F.sum("gen"), F.lit(0)).alias("s_gen")]
        for index in range(width):
            summary += [F.min(f"s{index}_key").alias(f"s{index}_k"),
                        F.min_by(f"s{index}_parent", f"s{index}_key").alias(f"s{index}_p")]
        stats = candidates.agg(*summary)
        empty, zero = F.lit(b"").cast("binary"), F.lit(0).cast("long")
        null = F.lit(None).cast("long")
        stat_rows = [stats.select(zero.alias("owner"), zero.alias("fp"), F.col("s_gen").alias("key"),
                                  null.alias("parent"), F.lit(-1).alias("slot"), empty.alias("state"),
                                  zero.alias("props"))]
        for index in range(width):
            stat_rows.append(stats.select(zero.alias("owner"), zero.alias("fp"), F.col(f"s{index}_k").alias("key"),
                                          F.col(f"s{index}_p").alias("parent"), F.lit(-2 - index).alias("slot"),
                                          empty.alias("state"), zero.alias("props")))
        try:
            self._write(reduce(lambda a, b: a.unionByName(b), stat_rows, self._checked(new, settled)), depth)
        finally:
            candidates.unpersist()
        new_states, generated, found = self._level_summary(depth)
        return generated, new_states, found

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
        for depth in range(level_number + 1):
            self._remember(depth)
        while totals.frontier and not totals.done:
            found = totals.found
            totals.stopped_because = stop_reason(found, self.invariants, len(self.properties), self.keep_going,
                                                 budget, totals.new_states, time.perf_counter() - started)
            if totals.stopped_because:
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
            self._remember(level_number)
            if progress:
                progress(Progress(totals.depth, totals.generated, totals.new_states, totals.frontier,
                                  totals.seconds))
            if level_hook:
                level_hook(level_number)
        engine = "spark" + ("+symmetry" if self.symmetry else "")
        return search_result(engine, self.config, self.properties, self.traces(totals.found),
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

            represent = KernelBatch(self.config, symmetry=True).represent
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
        for _, _, frame in self.visited:
            try:
                frame.unpersist()
            except Exception:  # the session may be gone
                pass
        self.visited.clear()


def _spread_steps(step_index: list[int], width: int):
    """Move the step columns of the unsettled step witnesses to their places among all of them."""

    def spread(row):
        head, tail = row[:7], row[7:]
        columns = [None] * (2 * width)
        for position, index in enumerate(step_index):
            columns[2 * index], columns[2 * index + 1] = tail[2 * position], tail[2 * position + 1]
        return head + tuple(columns)

    return spread
