"""The Spark engine's checkpoint directory through Spark's Hadoop filesystem layer
(`checker/spark_storage.py`): a local directory named by a path or a `file://` URI, a run
checkpointed and resumed at `file://` URIs through the CLI, and a scheme this Spark cannot reach."""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest

from kafka_mc import exitcodes
from kafka_mc.checker import Budget, check
from kafka_mc.cli import main
from kafka_mc.model import Config

pyspark = pytest.importorskip("pyspark")

from kafka_mc.checker.spark import read_checkpoint, session  # noqa: E402
from kafka_mc.checker.spark_storage import (HadoopDirectory, LocalDirectory, StorageError, directory,  # noqa: E402
                                            local_path, uri_of)

CONFIG = Config(protocol="hw", messages=1, crashes=1, elections=1)
SPARK_CHECK = ["check", "--engine", "spark", "--spark-master", "local[2]", "--protocol", "hw", "--messages", "1",
               "--crashes", "1", "--elections", "1", "--quiet", "--format", "json"]


def run(capsys, *argv):
    code = main(list(argv))
    out, err = capsys.readouterr()
    assert "Traceback" not in out + err
    return code, out, err


def test_locations_without_a_session(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    assert uri_of("run") == f"file://{tmp_path}/run" and uri_of("hdfs://nn:8020/run") == "hdfs://nn:8020/run"
    assert local_path("run") == Path("run") and local_path(f"file://{tmp_path}/run") == tmp_path / "run"
    assert local_path("s3a://bucket/run") is None
    with pytest.raises(StorageError, match="s3a://bucket/run: a directory of the scheme s3a:// is read through Spark"):
        directory("s3a://bucket/run")


def test_a_directory_through_hadoops_filesystem_at_a_path_or_a_file_uri(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    spark = session("local[1]", 1, app_name="kafka-mc-storage-tests")
    try:
        for location, where in (("plain", tmp_path / "plain"), (f"file://{tmp_path}/uri", tmp_path / "uri")):
            files = HadoopDirectory(spark, location)
            assert files.uri == f"file://{where}" and not files.exists() and not files.is_dir()
            files.mkdirs()
            assert files.is_dir() and files.names() == []
            files.write_text("header.json", '{"a": 1}')
            files.write_text("header.json", '{"a": 2}')  # replaced, whole
            assert files.read_text("header.json") == LocalDirectory(where).read_text("header.json") == '{"a": 2}'
            # the temporary it was written to is gone (Hadoop's local filesystem keeps a .crc beside it)
            assert [name for name in os.listdir(where) if not name.endswith(".crc")] == ["header.json"]
            HadoopDirectory(spark, files.uri_at("level-00001")).write_text("part", "x")
            assert files.names() == ["header.json", "level-00001"] and not files.is_dir("header.json")
            files.delete("level-00001")
            assert files.names() == ["header.json"]
            files.delete()
            assert not files.exists() and not where.exists()
        with pytest.raises(StorageError, match=r"s3a://bucket/run: this Spark has no filesystem for the scheme "
                                               r"s3a:// .*org\.apache\.hadoop:hadoop-aws:"):
            HadoopDirectory(spark, "s3a://bucket/run")
    finally:
        spark.stop()


def test_a_run_checkpointed_and_resumed_at_file_uris_through_the_cli(capsys, tmp_path):
    """Stopped by its state budget, a run with --checkpoint-dir file://... leaves its header and
    levels there; --resume file://... finishes it with the local engine's result."""
    uri = f"file://{tmp_path}/run"
    stopped = check(CONFIG, budget=Budget(max_states=40))
    code, out, _ = run(capsys, *SPARK_CHECK, "--checkpoint-dir", uri, "--max-states", "40")
    assert code == exitcodes.INCOMPLETE and not stopped.complete and json.loads(out)["checkpoint_dir"] == uri
    header, last = read_checkpoint(uri)  # a file:// checkpoint reads without a session
    assert header["config"] == CONFIG.to_dict() and last == stopped.stats.depth
    assert {f"level-{depth:05d}{suffix}" for depth in range(last + 1) for suffix in ("", ".json")} | \
        {"kafka-mc-checkpoint.json"} <= set(os.listdir(tmp_path / "run"))
    code, _, err = run(capsys, *SPARK_CHECK, "--checkpoint-dir", uri)
    assert code == exitcodes.BAD_INPUT and "exists and is not an empty directory" in err
    code, out, _ = run(capsys, *SPARK_CHECK, "--resume", uri)
    local = check(CONFIG)
    view = json.loads(out)
    assert code == (exitcodes.VIOLATION if local.violations else exitcodes.OK) and view["resumed_from_depth"] == last
    assert (view["distinct_states"], view["states_generated"], view["depth"]) == \
        (local.stats.distinct_states, local.stats.states_generated, local.stats.depth)


def test_a_scheme_this_spark_has_no_filesystem_for_is_refused_by_name(capsys):
    code, out, err = run(capsys, *SPARK_CHECK, "--checkpoint-dir", "s3a://bucket/run")
    assert code == exitcodes.BAD_INPUT and not out
    assert "--resume/--checkpoint-dir: s3a://bucket/run: this Spark has no filesystem for the scheme s3a://" in err
    assert "org.apache.hadoop:hadoop-aws:" in err
