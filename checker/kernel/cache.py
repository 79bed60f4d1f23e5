"""Keeping numba's on-disk cache of the kernel honest.

numba keys a cached function on its own source file only, but the kernel's level loop
inlines the transitions and properties of other files: after an edit of any kernel source,
the cached machine code of an unchanged file would be stale. So the kernel is cached by its
sources' content: `InstalledKernelLocator` puts it in a folder named by the digest of the
kernel sources as this process imported them, so a process that compiled older sources can
only ever write to, or read from, the folder of those sources (a digest recorded beside one
shared folder let a long compile of old sources land under the new digest, and the next process
crashed on it). `prune_stale_caches` removes the folders of other sources. Run from a zip shipped
with a Spark job, the kernel is cached by `ShippedKernelLocator`, keyed the same way.
`compile_lock` keeps processes from compiling it at the same time, and `serialize_cache_saves`
(`checker.numba_cache`) from writing one function's cache at the same time.
"""

from __future__ import annotations

import hashlib
import os
import shutil
import zipfile
from pathlib import Path, PurePosixPath

from numba.core.caching import CacheImpl, _CacheLocator
from numba.misc.appdirs import AppDirs

from ..numba_cache import ShippedLocator, file_lock

KERNEL_DIR = Path(__file__).resolve().parent
CACHE_DIR = KERNEL_DIR / "__pycache__"


def sources_digest() -> str:
    digest = hashlib.sha256()
    for source in sorted(KERNEL_DIR.glob("*.py")):
        digest.update(source.name.encode() + b"\0" + source.read_bytes())
    return digest.hexdigest()


IMPORTED_DIGEST = sources_digest()  # the sources this process compiles (read as the kernel is imported)
SOURCES_CACHE = CACHE_DIR / f"sources-{IMPORTED_DIGEST[:32]}"


def prune_stale_caches() -> None:
    """Delete the cache folders of other kernel sources, and the files of the former shared layout
    (a read-only install is left alone: numba then caches elsewhere, per user). Not while another
    process compiles into the cache: then the pruning is left to a later import, since an import
    must not wait minutes for someone else's compile."""
    try:
        with file_lock("kafka-mc-kernel-compile.lock", wait=False) as locked:
            if not locked:
                return
            stale = [path for path in CACHE_DIR.glob("sources-*") if path != SOURCES_CACHE]
            for folder in stale:
                shutil.rmtree(folder, ignore_errors=True)
            for cached in [*CACHE_DIR.glob("*.nbi"), *CACHE_DIR.glob("*.nbc"), CACHE_DIR / "kernel-sources.sha256"]:
                cached.unlink(missing_ok=True)
    except OSError:
        pass


class InstalledKernelLocator(_CacheLocator):
    """Where numba caches a kernel function of the installed sources: in `SOURCES_CACHE`, the
    folder of the sources' digest, with the digest as the source stamp."""

    def __init__(self, py_func):
        self._lineno = py_func.__code__.co_firstlineno

    def get_cache_path(self) -> str:
        return str(SOURCES_CACHE)

    def get_source_stamp(self) -> str:
        return IMPORTED_DIGEST

    def get_disambiguator(self) -> str:
        return str(self._lineno)

    @classmethod
    def from_function(cls, py_func, py_file):
        if Path(py_file).resolve().parent != KERNEL_DIR:
            return None
        try:
            self = cls(py_func)
            self.ensure_cache_path()
        except OSError:
            return None
        return self


def compile_lock():
    """Held while a process compiles the kernel or loads it from numba's cache, so processes
    starting together (a matrix's workers, a Spark executor's Python workers) compile it once
    and the others load what it wrote."""
    return file_lock("kafka-mc-kernel-compile.lock")


# In a shipped zip, beside the kernel's sources: the driver's `SOURCES_CACHE` (`checker.shipping`)
DRIVER_CACHE_ENTRY = "driver-kernel-cache.txt"


class ShippedKernelLocator(ShippedLocator):
    """Where numba caches the kernel when it runs from the zip a Spark job ships
    (`checker.shipping`): numba's own locator for zips keys the cache on the zip's path and
    modification time, which are new for every job, so every job would compile the kernel
    again. This one keys it on the kernel sources' content: in the driver's own cache of the
    same sources where this machine has it (local mode, or an executor beside the driver: the
    stamps and file names are the installed locator's, so neither compiles what the other has),
    else in the user's cache directory."""

    def __init__(self, py_func, zip_path: str, internal: PurePosixPath):
        super().__init__(py_func, zip_path, internal)
        self._digest, driver = _zipped_kernel(zip_path, internal.parent.as_posix())
        if driver and driver.name == f"sources-{self._digest[:32]}" and driver.is_dir() and os.access(driver, os.W_OK):
            self._cache_path = str(driver)
        else:
            self._cache_path = os.path.join(AppDirs(appname="kafka-mc", appauthor=False).user_cache_dir,
                                            "kernel", self._digest[:32])

    @classmethod
    def takes(cls, internal: PurePosixPath) -> bool:
        return internal.parent.as_posix().endswith("checker/kernel")


_ZIPPED: dict[tuple[str, str], tuple[str, Path | None]] = {}


def _zipped_kernel(zip_path: str, internal_dir: str) -> tuple[str, Path | None]:
    """`sources_digest` of the kernel sources inside a zip, and the driver's kernel cache folder the
    zip names (None where it names none): the zip read once per process."""
    key = (zip_path, internal_dir)
    if key not in _ZIPPED:
        digest = hashlib.sha256()
        with zipfile.ZipFile(zip_path) as archive:
            names = sorted(name for name in archive.namelist()
                           if name.startswith(internal_dir + "/") and name.endswith(".py")
                           and "/" not in name[len(internal_dir) + 1:])
            for name in names:
                digest.update(name.rsplit("/", 1)[-1].encode() + b"\0" + archive.read(name))
            try:
                driver: Path | None = Path(archive.read(f"{internal_dir}/{DRIVER_CACHE_ENTRY}").decode())
            except (KeyError, UnicodeDecodeError):
                driver = None
        _ZIPPED[key] = (digest.hexdigest(), driver)
    return _ZIPPED[key]


def register_locators() -> None:
    """Put the kernel's locators first among numba's cache locators (before any kernel function
    is decorated)."""
    for locator in (InstalledKernelLocator, ShippedKernelLocator):
        if locator not in CacheImpl._locator_classes:
            # numba leaves the list unannotated; mypy infers it from its elements' constructors
            CacheImpl._locator_classes.insert(0, locator)  # type: ignore[arg-type]
