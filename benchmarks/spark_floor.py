"""The floor of a Spark level: what Spark's own machinery costs a job of the engine's shape when the
Python in it does nothing, beside two shapes the engine does not use.

    python benchmarks/spark_floor.py                       # local[1], 24 jobs of each shape
    python benchmarks/spark_floor.py --master local[2] --jobs 40 --json floor.json

Each shape runs `--jobs` times in a row in one session (`checker.spark.session`, the engine's
settings), on one row, and the first `--warm-up` jobs of each are left out:

- `level`: the engine's level (`checker.spark._Engine.level`): the level before read from Parquet,
  `mapInArrow`, the shuffle (`repartition` by owner), `mapInArrow`, the Parquet write with the
  engine's committer options;
- `one stage`: the same without the shuffle and the second `mapInArrow`;
- `rdd`: two stages of Python over an RDD (`partitionBy`), collected, no files.

The engine's fixed cost a level (`benchmarks/spark_bench.py`, "s/level") can come no lower than
`level` here.
"""

from __future__ import annotations

import argparse
import os
import shutil
import sys
import tempfile
import time

from bench import machine, save_figures, spread

from kafka_mc.checker.spark import WRITE_OPTIONS, session


def _identity(batches):
    yield from batches


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--master", default="local[1]")
    parser.add_argument("--jobs", type=int, default=24, help="jobs of each shape (default 24)")
    parser.add_argument("--warm-up", type=int, default=4, help="first jobs of each shape left out (default 4)")
    parser.add_argument("--json", help="write the figures to this file")
    options = parser.parse_args(argv)
    if options.jobs <= options.warm_up:
        parser.error(f"--jobs must be more than --warm-up ({options.warm_up}), not {options.jobs}")
    from pyspark.sql.types import BinaryType, LongType, StructField, StructType

    spark = session(options.master, 1)
    schema = StructType([StructField("owner", LongType()), StructField("state", BinaryType())])
    folder = tempfile.mkdtemp(prefix="kafka-mc-spark-floor-")
    try:
        spark.createDataFrame([(1, b"state")], schema).write.parquet(f"{folder}/level-0")

        def level(index: int) -> None:
            frame = spark.read.schema(schema).parquet(f"{folder}/level-{index - 1}").mapInArrow(_identity, schema)
            (frame.repartition(1, "owner").mapInArrow(_identity, schema)
             .write.mode("overwrite").options(**WRITE_OPTIONS).parquet(f"{folder}/level-{index}"))

        def one_stage(index: int) -> None:
            (spark.read.schema(schema).parquet(f"{folder}/level-0").mapInArrow(_identity, schema)
             .write.mode("overwrite").options(**WRITE_OPTIONS).parquet(f"{folder}/stage-{index}"))

        def rdd(index: int) -> None:
            (spark.sparkContext.parallelize(range(2), 1).map(lambda x: (x, x)).partitionBy(1)
             .mapPartitions(lambda rows: [sum(1 for _ in rows)]).collect())

        figures = {"master": options.master, "jobs": options.jobs, "warm_up": options.warm_up,
                   "machine": f"{machine()}, load average "
                              f"{os.getloadavg()[0]:.1f} at the start", "shapes": {}}
        for name, job in (("level", level), ("one stage", one_stage), ("rdd", rdd)):
            seconds = []
            for index in range(1, options.jobs + 1):
                started = time.perf_counter()
                job(index)
                seconds.append(time.perf_counter() - started)
            kept = seconds[options.warm_up:]
            shape = figures["shapes"][name] = spread(kept)
            print(f"{name:10} median {shape['median_s']:.3f} s, least {shape['min_s']:.3f} s, "
                  f"most {shape['max_s']:.3f} s ({len(kept)} jobs)")
        save_figures(figures, options.json)
    finally:
        spark.stop()
        shutil.rmtree(folder, ignore_errors=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
