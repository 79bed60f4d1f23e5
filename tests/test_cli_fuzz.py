"""Command lines generated at random: every outcome is a documented exit code, and every refusal a
one-line message naming what is wrong; never an internal error, a traceback or a hang.

Each command is fuzzed with its own options (read from the typer app), given values that are valid,
out of range, not numbers, NaN, infinite, too long, or paths that cannot be written. A run is kept
short by a budget given last (`--max-seconds 1`, or `--max-states` where a command has no time
budget); Spark, plugins and lemma files are left to their own tests. 40 examples per command,
derandomized; KAFKA_MC_FUZZ_EXAMPLES=2000 runs that many, with fresh random draws.
"""

from __future__ import annotations

import contextlib
import io
import os
from pathlib import Path

import pytest
import typer.main
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from kafka_mc import exitcodes
from kafka_mc.cli import app, main

LONG = os.environ.get("KAFKA_MC_FUZZ_EXAMPLES")
FUZZ = settings(max_examples=int(LONG) if LONG else 40, deadline=None, derandomize=not LONG,
                suppress_health_check=[HealthCheck.too_slow, HealthCheck.function_scoped_fixture])

DOCUMENTED = {exitcodes.OK, exitcodes.FAILED, exitcodes.USAGE, exitcodes.VIOLATION, exitcodes.WITNESS_UNREACHED,
              exitcodes.INCOMPLETE, exitcodes.BAD_SPEC, exitcodes.BAD_INPUT}
REFUSALS = {exitcodes.USAGE, exitcodes.BAD_SPEC, exitcodes.BAD_INPUT}
# Options left to their own tests: Spark (a JVM per run), options that run a user's code, and
# --explore, which serves the explorer until Ctrl-C (tests/test_explorer.py).
LEFT_OUT = {"--plugin", "--lemmas", "--spark-master", "--spark-partitions", "--checkpoint-dir", "--resume", "--explore"}
PATH_OPTIONS = {"--out", "--dump-dot", "--write-tla"}
# The model's counts: valid values stay small, so that every run is short.
COUNTS = {"--replicas", "--messages", "--crashes", "--elections", "--min-isr", "--network-failures", "--partitions",
          "--controller-failures", "--brokers", "--expirations", "--replication-factor", "--failures", "--creations"}
BUDGET = {"check": ["--max-seconds", "1"], "simulate": ["--max-seconds", "1"], "prove": ["--max-seconds", "1"],
          "control": ["--max-seconds", "1"], "matrix": ["--max-states", "100"], "replay": []}
COMMANDS = typer.main.get_command(app).commands

BAD_NUMBERS = st.sampled_from(["-1", "0", "nan", "inf", "-inf", "1e400", "1" + "0" * 30, "9" * 5000, "", "x", "2.5",
                               "0x10", " 1", "１"])
TEXT = st.text(max_size=30).filter(lambda text: not text.startswith("-"))


def _values(option: str, tmp: Path) -> st.SearchStrategy[str]:
    if option in PATH_OPTIONS:
        return st.sampled_from([str(tmp / "out"), str(tmp / "file"), str(tmp / "file" / "below"),
                                str(tmp / ("x" * 300)), "/proc/kafka-mc", str(tmp)])
    if option in COUNTS:
        return st.one_of(st.sampled_from(["0", "1", "2"]), BAD_NUMBERS)
    return st.one_of(st.sampled_from(["1", "2", "10", "all", "hw", "kip-320", "z3", "python", "kernel", "json",
                                      "text", "lemmas", "controller", "NoCommittedDataLoss", "simulate"]),
                     BAD_NUMBERS, TEXT)


@st.composite
def command_lines(draw, command: str, tmp: Path) -> list[str]:
    params = [param for param in COMMANDS[command].params if param.opts[0] not in LEFT_OUT]
    argv = [command]
    for param in params:
        if param.param_type_name == "argument":
            argv.append(draw(st.one_of(st.sampled_from(["case-l-hw", "controller", "partition-8", "case-l",
                                                        str(tmp / "file"), str(tmp / "absent.toml")]), TEXT)))
    for param in draw(st.lists(st.sampled_from([p for p in params if p.param_type_name == "option"]),
                               max_size=6, unique_by=lambda p: p.opts[0])):
        flag = param.opts[0]
        if getattr(param, "is_flag", False):
            argv.append(flag)
        else:
            value = draw(_values(flag, tmp))
            if flag == "--engine" and value == "spark":
                value = "python"
            argv += [flag, value]
    return [*argv, *BUDGET[command]] + (["--quiet"] if any("--quiet" in p.opts for p in params) else [])


def _run(argv: list[str]) -> tuple[int, str, str]:
    out, err = io.StringIO(), io.StringIO()
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
        code = main(argv)
    return code, out.getvalue(), err.getvalue()


@pytest.mark.parametrize("command", sorted(BUDGET))
def test_random_command_lines_end_in_a_documented_exit_code_with_a_message(command, tmp_path_factory):
    tmp = tmp_path_factory.mktemp("fuzz")
    (tmp / "file").write_text("a user's file\n")

    @FUZZ
    @given(argv=command_lines(command, tmp))
    def check(argv):
        code, out, err = _run(argv)
        assert code in DOCUMENTED, (argv, code, err[-2000:])
        assert "internal error" not in err and "Traceback" not in out + err, (argv, err[-2000:])
        if code in REFUSALS:
            assert err.strip(), (argv, code)
        assert (tmp / "file").read_text() == "a user's file\n", argv  # never overwritten

    check()
