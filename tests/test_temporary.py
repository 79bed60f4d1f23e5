"""Temporary folders (`checker.temporary`): named after their process, removed at its exit, and a
killed process's removed by the next process that makes one of the same kind; nothing else is touched."""

from __future__ import annotations

import os
import subprocess
import sys
import tempfile
import uuid
from pathlib import Path

from kafka_mc.checker.temporary import process_folder, remove_orphans, running

CHILD = """
import os, signal, sys
from kafka_mc.checker.temporary import process_folder
folder = process_folder(sys.argv[1])
(folder / "data").write_text("x")
print(folder, flush=True)
if sys.argv[2] == "killed":
    os.kill(os.getpid(), signal.SIGKILL)
"""


def child_folder(kind: str, ending: str) -> Path:
    done = subprocess.run([sys.executable, "-c", CHILD, kind, ending], capture_output=True, text=True)
    return Path(done.stdout.strip())


def test_a_folder_is_named_after_its_process_and_removed_when_it_exits():
    kind = f"test-{uuid.uuid4().hex[:8]}"
    folder = process_folder(kind)
    assert folder.is_dir() and folder.name.startswith(f"kafka-mc-{kind}-{os.getpid()}-")
    left = child_folder(kind, "exits")
    assert left.name.startswith(f"kafka-mc-{kind}-") and not left.exists()


def test_a_killed_process_folder_is_removed_by_the_next_of_its_kind_and_nothing_else():
    kind = f"test-{uuid.uuid4().hex[:8]}"
    killed = child_folder(kind, "killed")
    assert (killed / "data").is_file()  # the killed process could not remove it
    other_kind = child_folder(f"{kind}x", "killed")
    temporary = Path(tempfile.gettempdir())
    unnamed = temporary / f"kafka-mc-{kind}-earlier"  # no process in its name
    unnamed.mkdir()
    ours = process_folder(kind)
    assert not killed.exists()
    assert ours.is_dir() and unnamed.is_dir() and other_kind.is_dir()
    assert remove_orphans(f"kafka-mc-{kind}x-") == [other_kind] and not other_kind.exists()
    os.rmdir(unnamed)


def test_a_process_runs_until_it_has_exited():
    assert running(os.getpid())
    done = subprocess.run([sys.executable, "-c", "import os; print(os.getpid())"], capture_output=True, text=True)
    assert not running(int(done.stdout))
