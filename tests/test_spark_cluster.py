"""The Spark engine on a real standalone cluster (a master and two workers on 127.0.0.1, started
from the installed pyspark), through the CLI; a driver killed mid-run and resumed; a worker
killed mid-run. Executors get kafka-mc from this machine's installation (same Python)."""

from __future__ import annotations

import json
import os
import signal
import socket
import subprocess
import sys
import threading
import time
import urllib.request
from pathlib import Path

import pytest

from kafka_mc.checker import check
from kafka_mc.cli import main
from kafka_mc.model import Config

pyspark = pytest.importorskip("pyspark")

from kafka_mc.checker.spark import run_spark_check, session  # noqa: E402

from test_spark import assert_same  # noqa: E402

SPARK_HOME = Path(pyspark.__file__).parent
CONFIG = Config(protocol="hw", messages=1, crashes=1, elections=1, unclean=True)
CLI_OPTIONS = ["--protocol", "hw", "--messages", "1", "--crashes", "1", "--elections", "1", "--unclean"]


def _free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return probe.getsockname()[1]


def _environment() -> dict:
    return dict(os.environ, SPARK_HOME=str(SPARK_HOME), SPARK_LOCAL_IP="127.0.0.1",
                PYSPARK_PYTHON=sys.executable, PYSPARK_DRIVER_PYTHON=sys.executable)


class Cluster:
    """A standalone master and two one-core workers on 127.0.0.1 (`memory`: each worker's)."""

    def __init__(self, root: Path, memory: str = "1g"):
        self.root, self.port, self.ui = root, _free_port(), _free_port()
        self.url = f"spark://127.0.0.1:{self.port}"
        self.workers: list[subprocess.Popen] = []
        self.master = self._start("master", "org.apache.spark.deploy.master.Master", "--host", "127.0.0.1",
                                  "--port", str(self.port), "--webui-port", str(self.ui))
        try:
            self._wait(lambda: self.status() is not None, "the master")
            self.workers = [self._start(f"worker{i}", "org.apache.spark.deploy.worker.Worker", "--host", "127.0.0.1",
                                        "--cores", "1", "--memory", memory, "--webui-port", str(_free_port()),
                                        "--work-dir", str(root / f"work{i}"), self.url) for i in range(2)]
            self._wait(lambda: (self.status() or {}).get("aliveworkers") == 2, "two workers")
        except BaseException:  # no master or worker outlives a cluster that did not come up
            self.stop()
            raise

    def _start(self, name, cls, *args):
        log = open(self.root / f"{name}.log", "w")
        # a process group of its own: a worker is killed with the executor it started
        return subprocess.Popen([str(SPARK_HOME / "bin" / "spark-class"), cls, *args], stdout=log,
                                stderr=subprocess.STDOUT, env=_environment(), start_new_session=True)

    def status(self):
        try:
            with urllib.request.urlopen(f"http://127.0.0.1:{self.ui}/json/", timeout=2) as answer:
                return json.load(answer)
        except (OSError, ValueError):  # not up yet, or its page not whole yet
            return None

    @staticmethod
    def _wait(condition, what, seconds=90):
        deadline = time.monotonic() + seconds
        while not condition():
            if time.monotonic() > deadline:
                raise RuntimeError(f"{what} did not come up")
            time.sleep(0.5)

    @staticmethod
    def kill(process: subprocess.Popen) -> None:
        if process.poll() is None:
            os.killpg(process.pid, signal.SIGKILL)
        process.wait(timeout=30)

    def stop(self) -> None:
        for process in [*self.workers, self.master]:
            if process.poll() is None:
                os.killpg(process.pid, signal.SIGTERM)
        for process in [*self.workers, self.master]:
            try:
                process.wait(timeout=20)
            except subprocess.TimeoutExpired:
                os.killpg(process.pid, signal.SIGKILL)


@pytest.fixture(scope="module")
def cluster(tmp_path_factory):
    cluster = Cluster(tmp_path_factory.mktemp("spark-cluster"))
    yield cluster
    cluster.stop()


def _cli(*args: str, **options) -> subprocess.Popen:
    return subprocess.Popen([sys.executable, "-m", "kafka_mc", *args], stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE, text=True, env=_environment(), start_new_session=True,
                            **options)


def _same_as_local(view: dict, config: Config) -> None:
    local = check(config)
    assert (view["distinct_states"], view["states_generated"], view["depth"]) == \
        (local.stats.distinct_states, local.stats.states_generated, local.stats.depth)
    assert view["complete"] == local.complete and view["witnesses"] == local.witnesses
    assert [(v["invariant"], v["length"]) for v in view["violations"]] == \
        [(v.invariant, len(v.trace)) for v in local.violations]


def test_bad_spark_options_exit_151(tmp_path, capsys):
    assert main(["check", "--engine", "spark", "--spark-partitions", "0"]) == 151
    assert "--spark-partitions must be an integer from 1 to 100,000" in capsys.readouterr().err
    assert main(["check", "--engine", "spark", "--resume", str(tmp_path)]) == 151
    assert "not a kafka-mc checkpoint" in capsys.readouterr().err
    (tmp_path / "notes.txt").write_text("mine")
    for where, says in ((tmp_path, "exists and is not an empty directory"),
                        (tmp_path / "notes.txt", "it exists and is not a folder"),
                        (tmp_path / "notes.txt" / "below", "is a file, not a folder")):
        assert main(["check", "--engine", "spark", "--checkpoint-dir", str(where)]) == 151
        assert says in capsys.readouterr().err
    assert (tmp_path / "notes.txt").read_text() == "mine"
    assert main(["check", "--spark-master", "local[1]"]) == 151
    assert "only with --engine spark" in capsys.readouterr().err
    assert main(["check", "--engine", "spark", "--workers", "2"]) == 151


@pytest.mark.slow  # a standalone cluster of three JVMs
def test_cli_on_the_standalone_cluster(cluster):
    """Executors run the installed kafka-mc; the result equals the local engine's."""
    run = _cli("check", "--engine", "spark", "--spark-master", cluster.url, "--spark-partitions", "2",
               "--format", "json", *CLI_OPTIONS)
    stdout, stderr = run.communicate(timeout=300)
    assert run.returncode == 12, stderr
    view = json.loads(stdout)
    assert view["engine"] == "spark" and view["master"] == cluster.url
    assert view["executors"] == 2 and view["partitions"] == 2
    _same_as_local(view, CONFIG)
    assert "depth 1:" in stderr and "states/s" in stderr


@pytest.mark.slow  # a standalone cluster of three JVMs
def test_driver_killed_then_resumed(cluster, tmp_path):
    directory = tmp_path / "checkpoint"
    run = _cli("check", "--engine", "spark", "--spark-master", "local[2]", "--checkpoint-dir", str(directory),
               "--keep-going", *CLI_OPTIONS)
    deadline = time.monotonic() + 240
    while not (directory / "level-00002.json").exists():
        assert run.poll() is None and time.monotonic() < deadline, run.stderr.read() if run.poll() else "too slow"
        time.sleep(0.2)
    Cluster.kill(run)  # the driver and its JVM, mid-run
    assert not (directory / "level-00012.json").exists()
    resumed = _cli("check", "--engine", "spark", "--spark-master", cluster.url, "--resume", str(directory),
                   "--keep-going", "--format", "json", *CLI_OPTIONS)
    stdout, stderr = resumed.communicate(timeout=300)
    assert resumed.returncode == 12, stderr
    view = json.loads(stdout)
    assert view["resumed_from_depth"] >= 2
    local = check(CONFIG, keep_going=True)
    assert (view["distinct_states"], view["states_generated"], view["depth"], view["complete"]) == \
        (local.stats.distinct_states, local.stats.states_generated, local.stats.depth, local.complete)
    assert [(v["invariant"], v["length"]) for v in view["violations"]] == \
        [(v.invariant, len(v.trace)) for v in local.violations]


@pytest.mark.slow  # a standalone cluster of three JVMs
def test_worker_killed_mid_run(cluster):
    """Last: it leaves the cluster with one worker."""
    spark = session(cluster.url, 2, app_name="kafka-mc-worker-kill", extra={"spark.driver.host": "127.0.0.1", "spark.driver.bindAddress": "127.0.0.1"})
    killer = []

    def kill_soon(depth):
        if depth == 1 and not killer:  # during level 2
            killer.append(threading.Timer(0.3, Cluster.kill, (cluster.workers[0],)))
            killer[0].start()

    try:
        result, run = run_spark_check(CONFIG, spark=spark, level_hook=kill_soon)
    finally:
        spark.stop()
    killer[0].join()
    assert cluster.workers[0].poll() is not None  # it was killed
    assert run.executors >= 1
    assert_same(result, check(CONFIG))
