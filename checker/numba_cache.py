"""numba's on-disk cache as every compiled part of kafka-mc uses it: a file lock shared by all
processes (`file_lock`), cache saves made one at a time (`serialize_cache_saves`), and the cache of
the functions a Spark job's zip compiles outside the kernel (`ShippedModuleLocator`; the kernel's own
locators are `checker.kernel.cache`'s).

numba's own locator for a module inside a zip (`numba.core.caching.ZipCacheLocator`) keys its cache
on the zip's path, modification time and size. Every Spark job ships kafka-mc in a new zip, so every
job's Python workers compiled the Spark engine's helpers (`checker.spark_level`) again, about a second
per worker, and each job left a folder of machine code in numba's user cache. `ShippedModuleLocator`
keys the cache on the module's source instead: a worker loads what any earlier job compiled from the
same source, and a changed source gets a folder of its own.
"""

from __future__ import annotations

import fcntl
import hashlib
import os
import tempfile
import zipfile
from contextlib import contextmanager
from pathlib import Path, PurePosixPath

from numba.core.caching import CacheImpl, IndexDataCacheFile, _CacheLocator
from numba.misc.appdirs import AppDirs


@contextmanager
def file_lock(name: str, wait: bool = True):
    """An exclusive file lock shared by every process; with `wait=False` it yields False at once
    when another process holds it (and True when this one took it)."""
    with open(Path(tempfile.gettempdir()) / name, "a") as lock:
        try:
            fcntl.flock(lock, fcntl.LOCK_EX if wait else fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            yield False
            return
        try:
            yield True
        finally:
            fcntl.flock(lock, fcntl.LOCK_UN)


def serialize_cache_saves() -> None:
    """Make every numba cache save in this process take a file lock shared by all processes (numba
    names a new entry's file from the index it read, so two processes saving different
    specializations of one function at once could both take one name, leaving an index entry whose
    file holds the other's machine code)."""
    if getattr(IndexDataCacheFile.save, "serialized", False):
        return
    save = IndexDataCacheFile.save

    def locked_save(self, key, data):
        with file_lock("kafka-mc-kernel-cache-save.lock"):
            save(self, key, data)

    locked_save.serialized = True  # type: ignore[attr-defined]  # a marker on the function object
    IndexDataCacheFile.save = locked_save  # type: ignore[method-assign]  # numba has no hook for this


class ShippedLocator(_CacheLocator):
    """Where numba caches a function of a module run from a zip that a Spark job ships, keyed on a digest of
    source content rather than on the zip: a subclass says which modules it takes (`takes`, of the module's
    path inside the zip) and sets, from the zip's path and that path, the cache folder (`_cache_path`) and the
    digest (`_digest`, the source stamp)."""

    _cache_path: str
    _digest: str

    def __init__(self, py_func, zip_path: str, internal: PurePosixPath):
        self._lineno = py_func.__code__.co_firstlineno

    @classmethod
    def takes(cls, internal: PurePosixPath) -> bool:
        raise NotImplementedError

    def get_cache_path(self) -> str:
        return self._cache_path

    def get_source_stamp(self) -> str:
        return self._digest

    def get_disambiguator(self) -> str:
        return str(self._lineno)

    @classmethod
    def from_function(cls, py_func, py_file):
        parts = Path(py_file).parts
        zipped = next((i for i, part in enumerate(parts) if part.endswith(".zip")), None)
        if zipped is None:
            return None
        internal = PurePosixPath(*parts[zipped + 1:])
        if not cls.takes(internal):
            return None
        try:
            self = cls(py_func, str(Path(*parts[:zipped + 1])), internal)
            self.ensure_cache_path()
        except (OSError, KeyError, zipfile.BadZipFile):
            return None
        return self


class ShippedModuleLocator(ShippedLocator):
    """Where numba caches a function of a kafka-mc module run from a zip (not the kernel's, which
    `checker.kernel.cache.ShippedKernelLocator` keys on all the kernel's sources): in the user's cache
    directory, in a folder named by the module's source digest, with that digest as the stamp."""

    def __init__(self, py_func, zip_path: str, internal: PurePosixPath):
        super().__init__(py_func, zip_path, internal)
        self._digest = module_digest(zip_path, internal.as_posix())
        self._cache_path = os.path.join(AppDirs(appname="kafka-mc", appauthor=False).user_cache_dir,
                                        "shipped", self._digest[:32])

    @classmethod
    def takes(cls, internal: PurePosixPath) -> bool:
        return internal.parts[:1] == ("kafka_mc",) and internal.parent.as_posix() != "kafka_mc/checker/kernel"


_DIGESTS: dict[tuple[str, str], str] = {}


def module_digest(zip_path: str, internal_path: str) -> str:
    """The sha256 of a module's path and source inside a zip, read once per process."""
    key = (zip_path, internal_path)
    if key not in _DIGESTS:
        with zipfile.ZipFile(zip_path) as archive:
            source = archive.read(internal_path)
        _DIGESTS[key] = hashlib.sha256(internal_path.encode() + b"\0" + source).hexdigest()
    return _DIGESTS[key]


def register_shipped_locator() -> None:
    """Put `ShippedModuleLocator` first among numba's cache locators (before the functions are
    decorated), the saves serialized: a Spark executor's Python workers start together."""
    serialize_cache_saves()
    if ShippedModuleLocator not in CacheImpl._locator_classes:
        CacheImpl._locator_classes.insert(0, ShippedModuleLocator)  # type: ignore[arg-type]
