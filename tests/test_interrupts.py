"""Stopping a run early. Ctrl-C on a running check: exit 130 within a few seconds, one line saying
so (with how far the run got where the engine knows), no traceback, no process left behind. A time
budget: honoured inside a level, not only between levels."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time

import pytest

from kafka_mc import exitcodes

LARGE = ["--replicas", "3", "--messages", "4", "--crashes", "3", "--elections", "2", "--keep-going"]


def _interrupt_once_running(argv: list[str], *, group: bool = False, linger: float = 0.5) -> tuple[int, str, float]:
    """Start `kafka-mc argv`, wait for its first progress line (so the search itself runs), send
    SIGINT to it (or to its process group); its exit code, stderr and the seconds it took to stop.
    Every process it started must be gone `linger` seconds after it exits."""
    process = subprocess.Popen([sys.executable, "-m", "kafka_mc", *argv], stdout=subprocess.DEVNULL,
                               stderr=subprocess.PIPE, text=True, start_new_session=True,
                               preexec_fn=lambda: signal.signal(signal.SIGINT, signal.SIG_DFL))
    assert process.stderr is not None
    lines = []
    for line in process.stderr:  # the first progress line: the run has started
        lines.append(line)
        if line.startswith(("depth", "run ")):
            break
    assert process.poll() is None, "".join(lines)
    started = time.monotonic()
    if group:
        os.killpg(process.pid, signal.SIGINT)
    else:
        process.send_signal(signal.SIGINT)
    rest = process.stderr.read()
    code = process.wait(timeout=60)
    seconds = time.monotonic() - started
    gone_by = time.monotonic() + linger
    while True:
        left = subprocess.run(["pgrep", "-s", str(process.pid)], capture_output=True, text=True).stdout.split()
        if not left or time.monotonic() >= gone_by:
            break
        time.sleep(0.1)
    assert not left, f"processes left behind: {left}"
    return code, rest, seconds


@pytest.mark.parametrize("engine, group", [("kernel", False), ("python", False), ("python --workers 2", True)])
def test_ctrl_c_stops_a_check_with_exit_130_and_one_line(engine, group):
    code, err, seconds = _interrupt_once_running(["check", "--engine", *engine.split(), *LARGE], group=group)
    assert code == exitcodes.INTERRUPTED and seconds < 5, err
    assert "Traceback" not in err and "internal error" not in err
    lines = [line for line in err.splitlines() if line.startswith("kafka-mc:")]
    assert len(lines) == 1 and lines[0].startswith("kafka-mc: interrupted"), err
    if engine == "kernel":  # the kernel says how far it got
        assert "distinct states to depth" in lines[0] and "a partial run, no verdict" in lines[0]


@pytest.mark.parametrize("argv", [["check", "--engine", "z3", "--depth", "30"],
                                  ["simulate", "--runs", "1000000", "--keep-going"]])
def test_ctrl_c_stops_z3_and_simulation_with_exit_130_and_one_line(argv):
    """Z3 takes Ctrl-C itself during a query and answers unknown: that is an interrupt, never a
    verdict and never 'incomplete'."""
    code, err, seconds = _interrupt_once_running(argv)
    assert code == exitcodes.INTERRUPTED and seconds < 5, err
    said = [line for line in err.splitlines() if line.startswith("kafka-mc:")]
    assert said == ["kafka-mc: interrupted: a partial run, no verdict"], err


@pytest.mark.parametrize("engine, workers", [("python", 1), ("python", 2), ("kernel", 1)])
def test_a_time_budget_stops_a_run_inside_a_level(engine, workers):
    """Half a second of budget on a configuration whose levels take longer than that: the run
    stops within a second or so of it, incomplete, and says why."""
    from kafka_mc.checker import Budget, check
    from kafka_mc.checker.kernel import kernel_check
    from kafka_mc.model import Config

    config = Config("leader-epoch", replicas=3, messages=4, crashes=3, elections=2)
    explore = kernel_check if engine == "kernel" else check
    if engine == "kernel":
        kernel_check(Config("hw", replicas=2, messages=1, crashes=0, elections=0))  # compiled before the clock starts
    started = time.monotonic()
    result = explore(config, keep_going=True, workers=workers, budget=Budget(max_seconds=0.5))
    seconds = time.monotonic() - started
    assert not result.complete and "time budget of 0.5 s reached" in result.stopped_because
    assert seconds < 2.5, seconds


def test_ctrl_c_stops_spark_with_the_last_committed_level_and_no_log_noise():
    """Spark cancels its jobs at Ctrl-C; the killed tasks' errors (logged by loggers the engine's
    log4j setup keeps at `error`) are not shown, only the one line."""
    code, err, seconds = _interrupt_once_running(["check", "--engine", "spark", "--spark-master", "local[1]",
                                                  *LARGE], linger=5)  # the JVM's own shutdown
    assert code == exitcodes.INTERRUPTED and seconds < 10, err
    shown = [line for line in err.splitlines()  # not the progress of the level under way, nor the JVM's banner
             if line.strip() and not line.startswith(("depth ", "WARNING: Using incubator"))]
    assert len(shown) == 1 and shown[0].startswith("kafka-mc: interrupted after level "), err
