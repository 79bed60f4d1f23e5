"""`kafka-mc prove` against bad lemma files, bad numbers and budgets: a lemma file's code runs
guarded (whatever it raises, at import or when a lemma is called, is an error in that file, exit
150, never a verdict); every numeric option is bounded (exit 151, naming the range); --max-seconds
holds for the whole run of every Z3 engine (exit 75); and Spacer's child process never outlives
the command."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from kafka_mc import cli, exitcodes
from kafka_mc.checker.symbolic import spacer as spacer_module
from kafka_mc.checker.symbolic.bmc import bounded_check
from kafka_mc.checker.symbolic.budget import Deadline
from kafka_mc.checker.symbolic.induction import prove, reachability
from kafka_mc.checker.symbolic.lemma import Lemma, LemmaError
from kafka_mc.model import Config

# Seconds a run may take past its budget: an ignored budget runs for minutes, a held one ends
# within a second or so, and more on a loaded machine (a time-out is checked between queries and
# encodings, which Z3 and Python cannot cut short).
GRACE = 10

GOOD = '''
import z3

def HwBelowLeo(s):
    """Every replica's HW is at most its LEO."""
    return z3.And([r.hw <= r.log_len for r in s.replicas])
'''


def run(capsys, *argv: str) -> tuple[int, str, str]:
    code = cli.main(["prove", "--quiet", *argv])
    captured = capsys.readouterr()
    return code, captured.out, captured.err


# ------------------------------------------------------------------ bad lemma files

BAD_FILES = {
    "exit-0-at-import": ("raise SystemExit(0)\n", "raised SystemExit: 0 at import"),
    "sys-exit-at-import": ("import sys\nsys.exit()\n", "raised SystemExit at import"),
    "sys-exit-text-at-import": ("import sys\nsys.exit('bye')\n", "raised SystemExit: bye at import"),
    "ctrl-c-at-import": ("raise KeyboardInterrupt\n", "raised KeyboardInterrupt at import"),
    "error-at-import": ("1 / 0\n", "raised ZeroDivisionError"),
    "syntax-error": ("def (:\n", "raised SyntaxError"),
    "no-lemmas": ("X = 1\n", "must define LEMMAS"),
    "lemmas-a-string": ("LEMMAS = 'HwBelowLeo'\n", "must define LEMMAS"),
    "lemmas-not-functions": ("LEMMAS = [1, 'x']\n", "LEMMAS[0]: a lemma must be a function"),
    "bad-docstring": (GOOD + "HwBelowLeo.__doc__ = 5\nLEMMAS = [HwBelowLeo]\n",
                      "docstring must be a string or None, not int"),
    "no-name": (GOOD + "import functools\nLEMMAS = [functools.partial(HwBelowLeo)]\n", "must have a name"),
    "path-in-name": (GOOD + "HwBelowLeo.__name__ = '../x'\nLEMMAS = [HwBelowLeo]\n", "without / or"),
    "shipped-name": (GOOD + "HwBelowLeo.__name__ = 'CacheExact'\nLEMMAS = [HwBelowLeo]\n",
                     "repeated: CacheExact"),
    "iteration-raises": ("class Bad(list):\n    def __iter__(self):\n        raise SystemExit(3)\n"
                         "LEMMAS = Bad([1])\n", "reading LEMMAS raised SystemExit: 3"),
    "exit-in-lemma": ("import sys\ndef Quits(s):\n    sys.exit(0)\nLEMMAS = [Quits]\n",
                      "lemma Quits raised SystemExit: 0"),
    "ctrl-c-in-lemma": ("def Interrupts(s):\n    raise KeyboardInterrupt\nLEMMAS = [Interrupts]\n",
                        "lemma Interrupts raised KeyboardInterrupt"),
    "error-in-lemma": ("def Fails(s):\n    return s.nothing\nLEMMAS = [Fails]\n",
                       "lemma Fails raised AttributeError"),
    "returns-a-string": ("def Text(s):\n    return 'x'\nLEMMAS = [Text]\n", "lemma Text returned 'x' (str)"),
    "returns-none": ("def Nothing(s):\n    pass\nLEMMAS = [Nothing]\n", "lemma Nothing returned None (NoneType)"),
    "returns-an-int": ("def Number(s):\n    return 1\nLEMMAS = [Number]\n", "lemma Number returned 1 (int)"),
    "returns-a-bool": ("def Truth(s):\n    return True\nLEMMAS = [Truth]\n", "lemma Truth returned True (bool)"),
    "returns-an-integer-term": ("def Term(s):\n    return s.written\nLEMMAS = [Term]\n",
                                "lemma Term returned s0.written (ArithRef)"),
}


@pytest.mark.parametrize("case, shipped", [
    pytest.param(case, shipped, id=f"{case}-{'with-shipped' if shipped else 'alone'}")
    for case in sorted(BAD_FILES) for shipped in (False, True)
    if shipped or case != "shipped-name"  # a clash with a shipped lemma needs the shipped lemmas
])
def test_a_bad_lemma_file_exits_150_naming_the_file_never_a_verdict(capsys, tmp_path, case, shipped):
    text, says = BAD_FILES[case]
    path = tmp_path / f"{case}.py"
    path.write_text(text)
    started = time.perf_counter()
    code, out, err = run(capsys, "--protocol", "kip-320", "--bmc-depth", "0", "--lemmas", str(path),
                         *([] if shipped else ["--no-shipped-lemmas"]))
    assert code == exitcodes.BAD_SPEC, (code, out, err)
    assert str(path) in err and says in err, err
    assert "internal error" not in err and "Traceback" not in err and "PROVED" not in out
    assert time.perf_counter() - started < 20 + GRACE


def test_a_good_lemma_file_still_proves(capsys, tmp_path):
    path = tmp_path / "good.py"
    path.write_text(GOOD + "LEMMAS = (HwBelowLeo,)\n")
    code, out, err = run(capsys, "--protocol", "kip-320", "--lemmas", str(path))
    assert code == exitcodes.OK and "PROVED" in out, err


def test_lemmas_are_checked_for_the_python_api_too():
    def Text(s):
        return "x"

    with pytest.raises(LemmaError, match="lemma Text returned 'x'") as caught:
        prove(Config("kip-320", messages=2), [Text], properties=())
    assert caught.value.lemma == "Text"
    with pytest.raises(LemmaError, match="docstring"):
        Text.__doc__ = b"bytes"
        Lemma.of(Text)
    with pytest.raises(LemmaError, match="must be a function"):
        Lemma.of(42)


# ------------------------------------------------------------------ bad numbers


@pytest.mark.parametrize("argv, says", [
    (["--epoch-cache", "1000000000000000000000000000000"], "--epoch-cache must be an integer from 1 to 100"),
    (["--epoch-cache", "0"], "--epoch-cache must be an integer from 1 to 100, not 0"),
    (["--k", "0"], "--k must be an integer from 1 to 32"),
    (["--k", "33"], "--k must be an integer from 1 to 32, not 33"),
    (["--k", "9" * 5000], "--k must be an integer, not '99999999999999999999...(5000 characters)'"),
    (["--bmc-depth", "-1"], "--bmc-depth must be an integer from 0 to 1,000"),
    (["--bmc-depth", "1e3"], "--bmc-depth must be an integer, not '1e3'"),
    (["--max-seconds", "nan"], "--max-seconds must be a finite number, not 'nan'"),
    (["--max-seconds", "inf"], "--max-seconds must be a finite number"),
    (["--max-seconds", "-inf"], "--max-seconds must be a finite number"),
    (["--max-seconds", "1e400"], "--max-seconds must be a finite number"),
    (["--max-seconds", "0"], "--max-seconds must be a number greater than 0 and at most 10,000,000, not 0"),
    (["--max-seconds", "1e8"], "at most 10,000,000, not 1e8"),
    (["--max-seconds", "soon"], "not 'soon'"),
    (["--method", "spacer", "--max-seconds", "nan"], "--max-seconds must be a finite number"),
    (["--crashes", "1000000000000000000000"], "from 0 to 99"),
    (["--elections", "100"], "from 0 to 99"),
])
def test_a_bad_number_exits_151_with_the_allowed_range(capsys, argv, says):
    code, out, err = run(capsys, "--protocol", "kip-320", *argv)
    assert code == exitcodes.BAD_INPUT and says in err, err
    assert "Traceback" not in err and out == ""


def test_the_documented_values_are_within_the_bounds(capsys):
    code, out, err = run(capsys, "--protocol", "kip-320", "--k", "2", "--epoch-cache", "4", "--bmc-depth", "12",
                         "--max-seconds", "0.5")
    assert code == exitcodes.INCOMPLETE and "2-induction" in out, err
    for argv in (["--max-seconds", "600"], ["--max-seconds", "10000000"], ["--k", "32"], ["--epoch-cache", "100"],
                 ["--bmc-depth", "1000"], ["--bmc-depth", "0"]):
        code, _, err = run(capsys, "--protocol", "kip-320", *argv, "--crashes", "many")  # read after the numbers
        assert code == exitcodes.BAD_INPUT and "--crashes" in err, (argv, err)


# ------------------------------------------------------------------ budgets over whole runs


def test_a_short_budget_ends_the_proof_in_time_as_unknown(capsys):
    started = time.perf_counter()
    code, out, _ = run(capsys, "--protocol", "kip-320", "--messages", "3", "--max-seconds", "1")
    seconds = time.perf_counter() - started
    assert code == exitcodes.INCOMPLETE and "UNKNOWN" in out and "time budget of 1 s" in out
    assert seconds < 1 + GRACE, seconds


def test_the_budget_covers_the_search_after_a_failed_proof(capsys):
    started = time.perf_counter()
    code, out, _ = run(capsys, "--protocol", "hw", "--max-seconds", "2")
    seconds = time.perf_counter() - started
    # a counterexample to induction, and a search stopped by what was left of the budget
    assert code in (exitcodes.FAILED, exitcodes.INCOMPLETE) and "time budget of 2 s" in out, out
    assert seconds < 2 + GRACE, seconds


def test_bounded_model_checking_holds_its_budget_over_all_depths():
    started = time.perf_counter()
    result = bounded_check(Config("kip-320", messages=3), 40, max_seconds=1.0)
    seconds = time.perf_counter() - started
    assert result.stopped_because.startswith("time budget of 1 s reached"), result.stopped_because
    assert not result.complete and result.stats.depth < 40 and seconds < 1 + GRACE, seconds


def test_check_with_the_z3_engine_holds_its_budget(capsys):
    started = time.perf_counter()
    code = cli.main(["check", "--engine", "z3", "--protocol", "kip-320", "--messages", "3", "--depth", "40",
                     "--max-seconds", "1", "--quiet"])
    seconds = time.perf_counter() - started
    capsys.readouterr()
    assert code == exitcodes.INCOMPLETE and seconds < 1 + GRACE, (code, seconds)


def test_reachability_holds_a_running_deadline():
    deadline = Deadline(0.5)
    found = reachability(Config("kip-320", messages=3), frozenset({"crashes", "elections"}),
                         ("NoCommittedDataLoss",), 40, deadline=deadline)
    assert not found.complete and "time budget of 0.5 s" in found.reason
    assert deadline.elapsed() < 0.5 + GRACE


# ------------------------------------------------------------------ Spacer's child process


@pytest.fixture
def children(monkeypatch) -> list[subprocess.Popen]:
    """Every child process the Spacer method starts."""
    started: list[subprocess.Popen] = []

    class Recorded(subprocess.Popen):
        def __init__(self, *args, **kwargs):
            super().__init__(*args, **kwargs)
            started.append(self)

    monkeypatch.setattr(spacer_module.subprocess, "Popen", Recorded)
    return started


def gone(child: subprocess.Popen) -> bool:
    if child.returncode is None:
        return False
    try:
        os.kill(child.pid, 0)
    except ProcessLookupError:
        return True  # reaped: no process, not even a zombie
    return False


def test_the_spacer_child_is_gone_after_a_budget_stop(capsys, children):
    started = time.perf_counter()
    code, out, _ = run(capsys, "--protocol", "kip-320", "--method", "spacer", "--max-seconds", "1")
    assert code == exitcodes.INCOMPLETE and "no answer from Spacer within 1 s" in out
    assert time.perf_counter() - started < 1 + GRACE
    assert len(children) == 1 and gone(children[0])


def test_the_spacer_child_is_gone_after_an_interrupt(capsys, monkeypatch, children):
    class Interrupted(subprocess.Popen):
        def communicate(self, input=None, timeout=None):
            time.sleep(0.2)
            raise KeyboardInterrupt

    monkeypatch.setattr(spacer_module.subprocess, "Popen", Interrupted)  # a subclass of the recording one
    code, _, err = run(capsys, "--protocol", "kip-320", "--method", "spacer", "--max-seconds", "30")
    assert code == 130 and "Traceback" not in err
    assert len(children) == 1 and gone(children[0])


def _children_of(pid: int) -> list[int]:
    found = []
    for entry in Path("/proc").iterdir():
        if entry.name.isdigit():
            try:
                stat = (entry / "stat").read_text()
            except OSError:
                continue
            if int(stat.rsplit(")", 1)[1].split()[1]) == pid:
                found.append(int(entry.name))
    return found


def _alive(pid: int) -> bool:
    try:
        return (Path("/proc") / str(pid) / "stat").read_text().rsplit(")", 1)[1].split()[0] != "Z"
    except OSError:
        return False


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="reads /proc")
@pytest.mark.parametrize("how", [signal.SIGINT, signal.SIGKILL], ids=["ctrl-c", "killed"])
def test_no_spacer_child_outlives_the_command(how):
    """Ctrl-C stops and reaps the child; a parent killed outright leaves a child that ends itself."""
    command = subprocess.Popen([sys.executable, "-m", "kafka_mc", "prove", "--quiet", "--protocol", "kip-320",
                                "--method", "spacer", "--max-seconds", "60"],
                               stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
                               preexec_fn=lambda: signal.signal(signal.SIGINT, signal.SIG_DFL))
    try:
        ends = time.monotonic() + 20
        kids: list[int] = []
        while not kids and time.monotonic() < ends and command.poll() is None:
            time.sleep(0.1)
            kids = _children_of(command.pid)
        assert kids, "the Spacer child did not start"
        time.sleep(0.3)
        command.send_signal(how)
        command.wait(10)
        ends = time.monotonic() + 5
        while any(_alive(kid) for kid in kids) and time.monotonic() < ends:
            time.sleep(0.1)
        assert not any(_alive(kid) for kid in kids)
    finally:
        if command.poll() is None:
            command.kill()
            command.wait()
