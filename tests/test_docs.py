"""The documentation site (`mkdocs.yml`, `docs/`) builds with warnings as errors, and its examples run.

What runs, from a fresh temporary working directory each block (with `scenarios/` there a link to the
repository's, so that paths such as `scenarios/case-l-hw.toml` mean what they mean at the root):

- every fenced ```python block of `docs/*.md`, in a fresh interpreter; a block that defines `test_`
  functions is a pytest file and is run by pytest;
- every `kafka-mc ...` command of every fenced ```bash block of `docs/*.md` and of README.md (but its
  first block, the two set-up commands, which is checked word for word instead), the commands of a
  block in order and in one directory (a `replay` may read what a `check --out` before it wrote). A
  command whose comment says `exit N` must exit N; any other must reach a verdict, 0 (holds, or
  matches what it documents) or 12 (a violation found), never a usage, input or internal error. A
  command that writes nothing (no `--out`, `--dump-dot`, `--write-tla`) and is shown word for word in
  several places runs once, in the first (README.md, then the pages by name).

What does not run is marked where it stands, with the reason, and nothing else is skipped:

- a block whose first line is a comment `# REASON: not run by the tests`;
- a command whose comment ends with `(REASON: not run by the tests)`.

The reason is one of these kinds: long-running (a benchmark, a search of minutes, Spark's start), needs
a Spark cluster, serves a web page until it is stopped, or installs kafka-mc and runs the test suite.

A command of a bash block that is not `kafka-mc ...` and is not marked fails the test.
"""

from __future__ import annotations

import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
DOCS = ROOT / "docs"
README = ROOT / "README.md"
PAGES = sorted(DOCS.glob("*.md"))

FENCE = re.compile(r"^(?P<indent>[ ]*)```(?P<lang>\w*)[^\n]*\n(?P<body>.*?)^(?P=indent)```[ ]*$", re.S | re.M)
BLOCK_MARKER = re.compile(r"^#\s*(?P<reason>\S.*?):\s*not run by the tests\s*$")
COMMAND_MARKER = re.compile(r"\((?P<reason>[^()]*\S):\s*not run by the tests\)\s*$")
OUTPUTS = {"--out", "--dump-dot", "--write-tla"}
EXIT = re.compile(r"\bexit (\d+)\b")
VERDICTS = {0, 12}  # complete and holding (or matching what it documents), or a violation found
REASONS = ("long-running", "needs a Spark cluster", "serves a web page until", "runs the whole test suite")
SETUP = ["pip install -e . && kafka-mc reproduce", "python -m pytest -q"]
TIMEOUT = 300


def _blocks(path: Path, lang: str) -> list[str]:
    text = path.read_text(encoding="utf-8")
    blocks = []
    for match in FENCE.finditer(text):
        if match.group("lang") == lang:
            indent = len(match.group("indent"))
            blocks.append("".join(line[indent:] for line in match.group("body").splitlines(keepends=True)))
    return blocks


def _commands(block: str) -> list[tuple[str, str]]:
    """(command, comment) for each command line of a bash block, continuation lines joined."""
    commands, pending = [], ""
    for line in block.splitlines():
        if not pending and (not line.strip() or line.lstrip().startswith("#")):
            continue
        line = pending + line.strip()
        if line.endswith("\\"):
            pending = line[:-1].rstrip() + " "
            continue
        pending = ""
        command, _, comment = line.partition(" #")
        commands.append((command.strip(), comment.strip()))
    assert not pending, f"a continuation line ends the block:\n{block}"
    return commands


def _bash_examples() -> list:
    """One pytest param per bash block: (commands to run, commands skipped with their reasons)."""
    params, seen = [], {}
    for path in [README, *PAGES]:
        blocks = list(enumerate(_blocks(path, "bash"), 1))
        if path == README:
            assert blocks and [command for command, _ in _commands(blocks[0][1])] == SETUP, \
                "README.md's first code block is the two set-up commands"
            blocks = blocks[1:]
        for number, block in blocks:
            first = block.lstrip().splitlines()[0]
            marker = BLOCK_MARKER.match(first)
            runs, skipped = [], []
            for command, comment in _commands(block):
                reason = marker.group("reason") if marker else None
                if reason is None and (found := COMMAND_MARKER.search(comment)):
                    reason = found.group("reason")
                if reason is not None:
                    skipped.append((command, reason))
                else:
                    assert command.startswith("kafka-mc "), \
                        f"{path.name}: {command!r} is neither a kafka-mc command nor marked 'not run by the tests'"
                    expected = EXIT.search(comment)
                    codes = {int(expected.group(1))} if expected else set(VERDICTS)
                    if not OUTPUTS & set(command.split()):
                        if command in seen:  # run where it is shown first, held to what each place says
                            seen[command] &= codes
                            assert seen[command], f"{path.name}: {command!r} is said to exit differently elsewhere"
                            continue
                        seen[command] = codes
                    runs.append((command, codes))
            params.append(pytest.param(runs, skipped, id=f"{path.name}:bash:{number}"))
    return params


# Python blocks another test runs as they stand on the page, checking what they print.
RUN_ELSEWHERE = {"proofs.md:python:1": "tests/test_prove.py::test_a_users_lemma_function_works_as_the_docs_show"}


def _python_examples() -> list:
    """Every Python block of the pages, but one that is a test file the suite runs itself
    (`tests/examples/test_*.py`, shown as written: test_the_property_example_is_the_file_the_suite_runs)
    and one that another test runs from the page (`RUN_ELSEWHERE`)."""
    run_by_the_suite = {path.read_text(encoding="utf-8") for path in (ROOT / "tests" / "examples").glob("test_*.py")}
    return [pytest.param(block, id=f"{path.name}:python:{number}")
            for path in PAGES for number, block in enumerate(_blocks(path, "python"), 1)
            if block not in run_by_the_suite and f"{path.name}:python:{number}" not in RUN_ELSEWHERE]


def test_the_python_blocks_run_elsewhere_are_run_there():
    """Each block left to another test is on its page, and that test exists and reads the page."""
    for block, test in RUN_ELSEWHERE.items():
        page, _, number = block.partition(":python:")
        assert len(_blocks(DOCS / page, "python")) >= int(number), block
        path, _, name = test.partition("::")
        source = (ROOT / path).read_text(encoding="utf-8")
        assert f"def {name}(" in source and page in source, test


@pytest.fixture
def workdir(tmp_path: Path) -> Path:
    (tmp_path / "scenarios").symlink_to(ROOT / "scenarios", target_is_directory=True)
    (tmp_path / "tests").symlink_to(ROOT / "tests", target_is_directory=True)  # the examples the docs name
    return tmp_path


def test_the_site_builds_with_warnings_as_errors(tmp_path):
    """`mkdocs build --strict`: a broken link or anchor, a page outside the nav, a missing include fail."""
    env = {**os.environ, "NO_MKDOCS_2_WARNING": "1"}
    done = subprocess.run([sys.executable, "-m", "mkdocs", "build", "--strict", "--config-file", str(ROOT / "mkdocs.yml"),
                           "--site-dir", str(tmp_path / "site")], cwd=ROOT, capture_output=True, text=True, env=env,
                          timeout=TIMEOUT)
    assert done.returncode == 0, done.stdout + done.stderr
    assert (tmp_path / "site" / "index.html").is_file()
    for page in PAGES:
        name = "index.html" if page.stem == "index" else f"{page.stem}/index.html"
        assert (tmp_path / "site" / name).is_file(), page.name


def test_the_examples_are_found_and_every_skip_is_marked():
    """The extraction sees the examples (an empty list would pass every test below), and what it skips
    is only what is marked, each with its reason."""
    python = _python_examples()
    bash = _bash_examples()
    assert len(python) >= 4 and len(bash) >= 10
    ran = [command for param in bash for command, _ in param.values[0]]
    skipped = [(command, reason) for param in bash for command, reason in param.values[1]]
    assert len(ran) >= 15
    assert skipped and all(any(kind in reason for kind in REASONS) for _, reason in skipped), skipped


def test_the_readme_is_short_and_links_every_page():
    """The README is the way in: short, and linking every page of the site."""
    text = README.read_text(encoding="utf-8")
    assert len(text.splitlines()) <= 250
    for page in PAGES:
        assert f"(docs/{page.name})" in text or f"(docs/{page.name}#" in text, page.name


def test_the_property_example_is_the_file_the_suite_runs():
    """docs/properties.md shows `tests/examples/test_own_property.py` and `test_leader_candidates.py` as written."""
    for name in ("test_own_property.py", "test_leader_candidates.py"):
        example = (ROOT / "tests" / "examples" / name).read_text(encoding="utf-8")
        assert example in _blocks(DOCS / "properties.md", "python"), name


@pytest.mark.parametrize("block", _python_examples())
def test_a_python_example_runs(block, workdir):
    script = workdir / ("test_example.py" if re.search(r"^def test_", block, re.M) else "example.py")
    script.write_text(block, encoding="utf-8")
    if script.name.startswith("test_"):
        command = [sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", "-n", "0", script.name]
    else:
        command = [sys.executable, script.name]
    done = subprocess.run(command, cwd=workdir, capture_output=True, text=True, timeout=TIMEOUT)
    assert done.returncode == 0, done.stdout + done.stderr


@pytest.mark.parametrize("runs, skipped", _bash_examples())
def test_a_bash_example_runs(runs, skipped, workdir):
    for command, codes in runs:
        argv = command.split()
        assert argv[0] == "kafka-mc" and all(not set(word) & set("'\"$*?|;&<>`") for word in argv), command
        done = subprocess.run([sys.executable, "-m", "kafka_mc", *argv[1:]], cwd=workdir, capture_output=True, text=True,
                              timeout=TIMEOUT, stdin=subprocess.DEVNULL)
        assert done.returncode in codes, f"{command}: exit {done.returncode}, expected {sorted(codes)}\n" \
                                         f"{done.stdout[-3000:]}{done.stderr[-3000:]}"
