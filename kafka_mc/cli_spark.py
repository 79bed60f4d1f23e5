"""`kafka-mc check --engine spark` (and the Spark search of `kafka-mc control` and `check
--controller-failures`): the option checks, the run, and its report (cli.py only dispatches)."""

from __future__ import annotations

import json
import re
import sys
from functools import partial
from pathlib import Path
from typing import Optional

import typer

from kafka_mc import exitcodes
from kafka_mc.checker import Budget
from kafka_mc.cli_common import (Exit, OutputFormat, number, out_dir, print_result, verdict_code,
                                 write_violation_reports)
from kafka_mc.control.epoch_bumps import EpochBumpSystem
from kafka_mc.control.replication import ReplicationSystem
from kafka_mc.counterexamples.views import result_view
from kafka_mc.properties.user import UserPropertyError
from kafka_mc.progress import ProgressReporter

# the master URLs Spark accepts (SparkSubmit: yarn, or spark://, k8s://, local...)
MASTER_URL = re.compile(r"local(\[(\*|[1-9]\d*)(,[1-9]\d*)?\])?|local-cluster\[[1-9]\d*,[1-9]\d*,[1-9]\d*\]"
                        r"|yarn|spark://\S+|k8s://\S+")
SPARK_FLAGS = ("--spark-master", "--spark-partitions", "--checkpoint-dir", "--resume")


def spark_options_given(spark_master: Optional[str], spark_partitions: Optional[str],
                        checkpoint_dir: Optional[str], resume: Optional[str]) -> list[str]:
    """The Spark options the user set, by flag."""
    given = (spark_master is not None, spark_partitions is not None, checkpoint_dir is not None, resume is not None)
    return [flag for flag, is_given in zip(SPARK_FLAGS, given) if is_given]


def spark_master_url(spark_master: Optional[str]) -> str:
    """The --spark-master value, local[*] when not given; a clear error when it is not a master URL."""
    master = spark_master if spark_master is not None else "local[*]"
    if not MASTER_URL.fullmatch(master):
        raise Exit(exitcodes.BAD_INPUT, f"--spark-master: {master!r} is not a Spark master URL; give local, "
                                        "local[N], local[*], spark://HOST:PORT, yarn or k8s://HOST:PORT")
    return master


def spark_system_search(spark_master: Optional[str], spark_partitions: Optional[str]):
    """`checker.spark.spark_check` on the Spark master the options name, for a model's search
    (`kafka-mc control`, `check --controller-failures`)."""
    # deferred: the Spark engine (numpy, ~80 ms; pyspark when the job starts) loads for --engine spark only
    from kafka_mc.checker.spark import spark_check

    return partial(spark_check, master=spark_master_url(spark_master),
                   partitions=number("--spark-partitions", spark_partitions, positive=True))


def run_spark(system: ReplicationSystem | EpochBumpSystem, *, keep_going: bool, symmetry: bool, budget: Budget,
              quiet: bool,
              spark_master: Optional[str], spark_partitions: Optional[str], checkpoint_dir: Optional[str],
              resume: Optional[str], output_format: OutputFormat,
              out: Optional[Path]) -> None:
    """Check the replication model `system` (with the controller's epoch bumps or without) for its
    properties on Spark (on the compiled kernel; a user's own that does not lower on the
    executors' Python), print the result as `check` does (JSON adds master, executors,
    partitions, what the executors ran and why), and leave with the verdict's exit code.
    `checkpoint_dir` and `resume` are local paths or URIs (`hdfs://`, `s3a://`, `file://`): a
    local one is checked here, before Spark starts; another by the engine, once its session is up."""
    # deferred: the Spark engine (numpy, ~80 ms; pyspark when the job starts) loads for --engine spark only
    from kafka_mc.checker.spark import CheckpointError, checkpoint_config, run_spark_check
    from kafka_mc.checker.spark_storage import StorageError, local_path, uri_of

    config, properties = system.config, tuple(system.properties)
    partitions = number("--spark-partitions", spark_partitions, positive=True)
    master = spark_master_url(spark_master)
    if resume is not None:
        if checkpoint_dir is not None and uri_of(checkpoint_dir) != uri_of(resume):
            raise Exit(exitcodes.BAD_INPUT, "--resume DIR continues in DIR: do not give another --checkpoint-dir")
        if local_path(resume) is not None:
            try:
                saved, saved_symmetry, saved_keep_going = checkpoint_config(resume, system.name)
            except CheckpointError as error:
                raise Exit(exitcodes.BAD_INPUT, f"--resume: {error}") from None
            if (saved, saved_symmetry, saved_keep_going) != (config, symmetry, keep_going):
                raise Exit(exitcodes.BAD_INPUT, f"--resume: {resume} is a checkpoint of another run "
                                                f"({saved.to_dict()}, symmetry={saved_symmetry}, "
                                                f"keep_going={saved_keep_going}); give the same options")
    elif checkpoint_dir is not None:
        local = local_path(checkpoint_dir)
        if local is not None:
            out_dir(local, "--checkpoint-dir")  # a folder that can be written, and empty: nothing is replaced
            if local.exists() and any(local.iterdir()):
                raise Exit(exitcodes.BAD_INPUT, f"--checkpoint-dir {checkpoint_dir} exists and is not an empty "
                                                "directory (to continue a run, give --resume)")
    reporter = ProgressReporter(enabled=not quiet)
    try:
        result, run = run_spark_check(system, keep_going=keep_going, symmetry=symmetry, master=master,
                                      partitions=partitions, checkpoint_dir=checkpoint_dir, resume=resume,
                                      budget=budget, progress=lambda p: reporter.note(reporter.describe(p)))
    except (CheckpointError, StorageError) as error:
        raise Exit(exitcodes.BAD_INPUT, f"--resume/--checkpoint-dir: {error}") from None
    except UserPropertyError as error:  # a lowered property, evaluated by the driver where the kernel flagged it
        raise Exit(exitcodes.BAD_SPEC, f"--property: {error}") from None
    finally:
        reporter.close()
    try:  # a user's property that raised on the model's executors was counted failing there: it raises here again
        for violation in result.violations:
            violation.trace.broken(properties)
    except UserPropertyError as error:
        raise Exit(exitcodes.BAD_SPEC, f"--property: {error}") from None
    written = write_violation_reports(result, out) if out else []
    if output_format.value == "json":
        view = result_view(result, system.name)
        view.update(master=run.master, executors=run.executors, partitions=run.partitions,
                    executors_ran="kernel" if run.kernel else "model", model_because=run.model_because,
                    checkpoint_dir=checkpoint_dir or resume,
                    resumed_from_depth=run.resumed_from_depth, reports=[str(path) for path in written])
        print(json.dumps(view, indent=2))
    else:
        print_result(result, (), output_format, written, model=system.name)
        if not run.kernel and not quiet:
            print(f"kafka-mc: note: the executors ran the model itself, state by state, not the compiled kernel: "
                  f"{run.model_because}", file=sys.stderr)
    raise typer.Exit(verdict_code(result))
