"""Where kafka-mc writes into a user's folders, and the one guard every output goes through.

A manifest in each output folder lists the files kafka-mc wrote there; only those (and the paths a
caller names explicitly) may be replaced, so nothing a user wrote is overwritten. The manifest is
updated under a lock (`filelock`), so runs writing into one folder at once lose no entries, and each
file is replaced atomically (written beside it, then renamed), so a reader never sees half a file.
`check_output_dir` and `check_output_file` are called before a run starts: an output location that
cannot be written is refused before any work, and no partial report set is left behind.
"""

from __future__ import annotations

import os
import tempfile
from pathlib import Path

from filelock import FileLock

MANIFEST = ".kafka-mc-reports"
MANIFEST_HEADER = "# Files written by kafka-mc; it may replace them. One name a line."
LOCK = ".kafka-mc-reports.lock"
_UMASK = os.umask(0o022)  # read once (reading it means setting it), then set back
os.umask(_UMASK)


class OutputError(ValueError):
    """An output location that cannot be written, named with the reason."""


class ReportConflict(FileExistsError):
    """An output would replace a file that kafka-mc did not write."""

    def __init__(self, path: Path):
        super().__init__(f"{path} exists and was not written by kafka-mc; choose another path or remove the file")
        self.path = path


def check_output_dir(path: Path, flag: str) -> Path:
    """`path` (given as `flag`) is a folder kafka-mc can create or write into; OutputError otherwise."""
    path = Path(path)
    _check_writable(path, flag)
    if _exists(path) and not path.is_dir():
        raise OutputError(f"{flag} {path}: it exists and is not a folder")
    return path


def check_output_file(path: Path, flag: str) -> Path:
    """`path` (given as `flag`) is a file kafka-mc can write: its folder can be written, and the file
    is absent or one kafka-mc wrote. OutputError or ReportConflict otherwise."""
    path = Path(path)
    _check_writable(path, flag)
    if path.is_dir():
        raise OutputError(f"{flag} {path}: it is a folder; give a file name")
    if _exists(path) and path.name not in _read_manifest(path.parent):
        raise ReportConflict(path)
    return path


def write_files(out_dir: Path, files: dict[str, str], overwrite: set[Path] | None = None) -> list[Path]:
    """Write each named text into `out_dir` and return the paths. ReportConflict, before anything
    is written, when a target exists but is neither in the manifest nor in `overwrite`; OutputError
    when the folder cannot be written."""
    out_dir = Path(out_dir)
    allowed = {Path(path).resolve() for path in overwrite or ()}
    try:
        out_dir.mkdir(parents=True, exist_ok=True)
        with FileLock(out_dir / LOCK):
            owned = _read_manifest(out_dir)
            for name in files:
                path = out_dir / name
                if path.exists() and name not in owned and path.resolve() not in allowed:
                    raise ReportConflict(path)
            _replace(out_dir / MANIFEST, "\n".join([MANIFEST_HEADER, *sorted(owned | set(files))]) + "\n")
            for name, text in files.items():
                _replace(out_dir / name, text)
            # removed while held, so that no lock file is left behind: a writer waiting on it then
            # finds it unlinked and starts over on a new one (filelock checks the link count)
            (out_dir / LOCK).unlink(missing_ok=True)
    except (ReportConflict, OutputError):
        raise
    except OSError as error:
        raise OutputError(f"{out_dir}: cannot be written ({error.strerror or error})") from None
    return [out_dir / name for name in files]


def _check_writable(path: Path, flag: str) -> None:
    """Every name in `path` fits the file system, and its nearest existing folder can be written."""
    existing = path.absolute()
    while not _exists(existing):
        existing = existing.parent
    folder = existing if existing.is_dir() else existing.parent
    longest = _limit(folder, "PC_NAME_MAX", 255)
    too_long = [part for part in path.parts if len(os.fsencode(part)) > longest]
    if too_long:
        raise OutputError(f"{flag} {path}: the name {too_long[0][:40]}... is longer than {longest} bytes")
    if len(os.fsencode(str(path.absolute()))) >= _limit(folder, "PC_PATH_MAX", 4096):
        raise OutputError(f"{flag} {path}: the path is too long")
    if existing != path.absolute() and not existing.is_dir():
        raise OutputError(f"{flag} {path}: {existing} is a file, not a folder")
    try:
        with tempfile.TemporaryFile(dir=folder):
            pass
    except OSError as error:
        raise OutputError(f"{flag} {path}: {folder} cannot be written ({error.strerror or error})") from None


def _exists(path: Path) -> bool:
    """Whether `path` exists (False, not an error, for a name too long or a file used as a folder)."""
    try:
        path.stat()
    except (OSError, ValueError):
        return False
    return True


def _limit(folder: Path, name: str, default: int) -> int:
    try:
        return os.pathconf(folder, name)
    except (OSError, ValueError):
        return default


def _read_manifest(out_dir: Path) -> set[str]:
    manifest = out_dir / MANIFEST
    if not manifest.is_file():
        return set()
    lines = manifest.read_text(encoding="utf-8").splitlines()
    return {line.strip() for line in lines if line.strip() and not line.startswith("#")}


def _replace(path: Path, text: str) -> None:
    """Write `text` beside `path`, then rename it over `path`."""
    handle, temporary = tempfile.mkstemp(dir=path.parent, prefix=f".{path.name}.", suffix=".tmp")
    try:
        os.chmod(temporary, 0o666 & ~_UMASK)  # as open() would make it (mkstemp makes it private)
        with os.fdopen(handle, "w", encoding="utf-8") as stream:
            stream.write(text)
        os.replace(temporary, path)
    except BaseException:
        Path(temporary).unlink(missing_ok=True)
        raise
