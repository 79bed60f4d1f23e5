"""Temporary folders that a killed process does not leave behind for good.

A folder is named after the process that made it (`kafka-mc-KIND-PID-RANDOM` in the temporary
directory) and removed when that process exits normally. One whose process was killed (a driver
stopped with SIGKILL, a test worker torn down) cannot remove itself: the next process that makes a
folder of the same kind removes every such folder whose process no longer runs. A folder named
otherwise (by an earlier kafka-mc, or by anything else) is never touched, nor is one whose process
runs, or cannot be asked about (another user's).
"""

from __future__ import annotations

import atexit
import os
import shutil
import tempfile
from pathlib import Path


def process_folder(kind: str) -> Path:
    """A new folder `kafka-mc-KIND-PID-...` in the temporary directory, removed when this process
    exits; the folders of that kind left by processes that no longer run are removed first."""
    prefix = f"kafka-mc-{kind}-"
    remove_orphans(prefix)
    folder = Path(tempfile.mkdtemp(prefix=f"{prefix}{os.getpid()}-"))
    atexit.register(shutil.rmtree, folder, True)
    return folder


def remove_orphans(prefix: str) -> list[Path]:
    """Remove the folders `PREFIX + PID-...` of the temporary directory whose process PID no longer
    runs; the folders removed."""
    removed = []
    for path in Path(tempfile.gettempdir()).glob(f"{prefix}*"):
        pid = path.name[len(prefix):].split("-", 1)[0]
        if path.is_dir() and pid.isdigit() and not running(int(pid)):
            shutil.rmtree(path, ignore_errors=True)
            removed.append(path)
    return removed


def running(pid: int) -> bool:
    """Whether process `pid` runs (one that this user may not signal counts as running)."""
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    return True
