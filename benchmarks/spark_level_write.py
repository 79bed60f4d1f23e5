"""What the JVM costs a level's states: the level task's output taken from Python and written by Spark,
as a row per state (checkpoint format 3) and in batches (format 4, the engine's `STATES` rows).

    python benchmarks/spark_level_write.py                    # 1,330,000 states, local[1]
    python benchmarks/spark_level_write.py --rows 500000 --runs 7 --json write.json

One session (`checker.spark.session`, the engine's settings). A `mapInArrow` whose Python hands over
the same Arrow batches in every job (built once per worker: random fingerprints, keys and parents,
action slots, states of `--state-bytes` random bytes, zero property bits), in one of two layouts:

- a row per state (owner, fp, key, parent, slot, state, props, visited: format 3's rows), in batches of
  `spark_level.BATCH` rows;
- the level's schema (`checker.spark.level_schema`), the states packed `spark_level.BATCH` to a row
  by `spark_level.state_rows`, as the engine writes them (since 30 November 2026 without their packed
  states, which `--state-bytes` then sizes for the rows only);

each written by Spark's `noop` writer (the batches made rows, nothing written) and as Parquet: the
batches with the engine's options (`checker.spark.WRITE_OPTIONS`), the rows with format 3's (the same
without a row group a row, which would give each row one, and Spark's default compression, snappy).

The default is the peak level of leader-epoch r=3 m=4 c=2 e=1 (1,327,155 new states; 40 bytes a packed
state). Each shape runs `--runs` times after one warm-up; the median is reported, and per state.
"""

from __future__ import annotations

import argparse
import os
import shutil
import sys
import tempfile
import time

from bench import machine, save_figures, spread

from kafka_mc.checker.spark import WRITE_OPTIONS, level_schema, session
from kafka_mc.checker.spark_level import BATCH, arrow_schema, state_rows

# format 3's write: the engine's options without a row group a row, with Spark's default compression
ROW_OPTIONS = {key: value for key, value in WRITE_OPTIONS.items()
               if key not in ("parquet.block.row.count.limit", "compression")}
SHAPES = {  # name: (batched, written as Parquet)
    "a row per state, rows only": (False, False),
    "a row per state": (False, True),
    "in batches, rows only": (True, False),
    "in batches": (True, True),
}


def row_schema():
    """Format 3's row per state."""
    from pyspark.sql.types import BinaryType, IntegerType, LongType, StructField, StructType

    types = {"owner": LongType(), "fp": LongType(), "key": LongType(), "parent": LongType(), "slot": IntegerType(),
             "state": BinaryType(), "props": LongType(), "visited": BinaryType()}
    return StructType([StructField(name, kind, name in ("parent", "visited")) for name, kind in types.items()])


def level_rows(rows: int, state_bytes: int, schema, batched: bool):
    """A mapInArrow function handing over the same level's states in every task of its worker."""

    def hand_over(batches):
        import sys as worker_sys

        import numpy as np
        import pyarrow as pa

        for _ in batches:
            pass
        built = worker_sys.__dict__.setdefault("_kafka_mc_level_rows", {})
        key = (rows, state_bytes, batched)
        if key not in built:
            rng, arrow, made = np.random.default_rng(0), arrow_schema(schema), []
            for start in range(0, rows, BATCH):
                count = min(BATCH, rows - start)
                fps = np.sort(rng.integers(-2 ** 63, 2 ** 63 - 1, count))
                keys, parents = rng.integers(-2 ** 63, 2 ** 63 - 1, count), rng.integers(-2 ** 63, 2 ** 63 - 1, count)
                slots, props = rng.integers(0, 30, count).astype(np.int32), np.zeros(count, dtype=np.int64)
                ends = np.arange(0, state_bytes * (count + 1), state_bytes, dtype=np.int64)
                data = rng.integers(0, 256, state_bytes * count, dtype=np.uint8)
                if batched:
                    made.append(state_rows(0, 20, (props, fps, keys, parents, slots), np.arange(count), arrow))
                    continue
                states = pa.Array.from_buffers(pa.binary(), count, [None, pa.py_buffer(ends.astype(np.int32)),
                                                                    pa.py_buffer(data)])
                made.append(pa.RecordBatch.from_arrays(
                    [pa.array(fps), pa.array(fps), pa.array(keys), pa.array(parents), pa.array(slots), states,
                     pa.array(props), pa.nulls(count, pa.binary())], schema=arrow))
            built[key] = made
        yield from built[key]

    return hand_over


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--master", default="local[1]")
    parser.add_argument("--rows", type=int, default=1_330_000, help="the level's states (default 1,330,000)")
    parser.add_argument("--state-bytes", type=int, default=40, help="bytes of a packed state (default 40)")
    parser.add_argument("--runs", type=int, default=5, help="timed runs of each shape (default 5)")
    parser.add_argument("--json", help="write the figures to this file")
    options = parser.parse_args(argv)
    for name in ("rows", "state_bytes", "runs"):
        if getattr(options, name) < 1:
            parser.error(f"--{name.replace('_', '-')} must be at least 1, not {getattr(options, name)}")
    spark = session(options.master, 1)
    folder = tempfile.mkdtemp(prefix="kafka-mc-level-write-")
    figures = {"master": options.master, "rows": options.rows, "state_bytes": options.state_bytes,
               "runs": options.runs, "machine": f"{machine()}, load average "
                                                f"{os.getloadavg()[0]:.1f} at the start", "shapes": {}}
    try:
        for name, (batched, parquet) in SHAPES.items():
            schema = level_schema() if batched else row_schema()
            hand_over = level_rows(options.rows, options.state_bytes, schema, batched)
            seconds = []
            for run in range(options.runs + 1):  # the first is a warm-up
                frame = spark.range(1, numPartitions=1).mapInArrow(hand_over, schema)
                started = time.perf_counter()
                if not parquet:
                    frame.write.format("noop").mode("overwrite").save()
                else:
                    writing = WRITE_OPTIONS if batched else ROW_OPTIONS
                    frame.write.mode("overwrite").options(**writing).parquet(f"{folder}/level")
                if run:
                    seconds.append(time.perf_counter() - started)
            shape = figures["shapes"][name] = spread(seconds)
            shape["us_per_state"] = shape["median_s"] / options.rows * 1e6
            print(f"{name:30} median {shape['median_s']:.3f} s ({shape['us_per_state']:.2f} us a state), "
                  f"least {shape['min_s']:.3f} s, most {shape['max_s']:.3f} s")
        save_figures(figures, options.json)
    finally:
        spark.stop()
        shutil.rmtree(folder, ignore_errors=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
