"""The Spark engine's checkpoint directory, on any filesystem Spark's Hadoop reaches (`hdfs://`,
`s3a://`, `file://`, a local path): the few operations the engine needs, through Hadoop's
`org.apache.hadoop.fs.FileSystem` (hadoop.apache.org/docs/stable/api/org/apache/hadoop/fs/FileSystem.html)
reached by the session's JVM gateway, so the driver's small files go where the executors' Parquet goes.

A plain local path is made absolute and used as `file://PATH` (not percent-encoded: Hadoop's
`Path(String)` takes the characters as they are, as Spark's Parquet reader and writer do).
Before a Spark session exists, a local directory (a plain path or `file://`) can be read through
Python (`LocalDirectory`); another scheme needs the session.
"""

from __future__ import annotations

import re
from contextlib import contextmanager
from pathlib import Path
from typing import Iterator, Protocol
from urllib.parse import urlparse

SCHEME = re.compile(r"[A-Za-z][A-Za-z0-9+.-]*:/")  # a URI (hdfs://, s3a://, file:/...), not a local path
# how Hadoop says it has no filesystem for a scheme: none configured, or its class not on the classpath
_NO_FILESYSTEM = re.compile(r"UnsupportedFileSystemException|ClassNotFoundException")
# the Maven artifact of Hadoop's own filesystems that Spark's Hadoop client leaves out
_CONNECTORS = {"s3a": "hadoop-aws", "abfs": "hadoop-azure", "abfss": "hadoop-azure", "wasb": "hadoop-azure",
               "wasbs": "hadoop-azure"}


class StorageError(OSError):
    """A checkpoint location that Spark's filesystem layer cannot reach, read or write."""


def uri_of(location: str | Path) -> str:
    """`location` as a URI for Hadoop and Spark: a URI as it is, a local path as `file://` and absolute."""
    text = str(location)
    return text if SCHEME.match(text) else f"file://{Path(text).absolute()}"


def local_path(location: str | Path) -> Path | None:
    """The local path `location` names (a plain path or a `file:` URI), None for another scheme."""
    text = str(location)
    if not SCHEME.match(text):
        return Path(text)
    parsed = urlparse(text)
    return Path(parsed.path) if parsed.scheme.lower() == "file" else None


class Directory(Protocol):
    """What reading a checkpoint needs of its directory."""

    def is_dir(self) -> bool: ...

    def names(self) -> list[str]: ...

    def read_text(self, name: str) -> str: ...


class LocalDirectory:
    """A local directory read through Python, before any Spark session."""

    def __init__(self, path: Path):
        self.path = path

    def is_dir(self) -> bool:
        return self.path.is_dir()

    def names(self) -> list[str]:
        return sorted(entry.name for entry in self.path.iterdir())

    def read_text(self, name: str) -> str:
        return (self.path / name).read_text()


def _java_message(error: Exception) -> str:
    """A Java exception's one line (`Throwable.toString()`), without its stack trace."""
    java = getattr(error, "java_exception", None)
    return str(java.toString()) if java is not None else str(error).strip().split("\n")[0]


@contextmanager
def _java_errors(where: str) -> Iterator[None]:
    """Hadoop's exceptions (py4j's, or those pyspark converts) as a StorageError naming `where`."""
    from py4j.protocol import Py4JJavaError  # type: ignore[import-untyped]
    from pyspark.errors.exceptions.captured import CapturedException

    try:
        yield
    except (Py4JJavaError, CapturedException) as error:
        raise StorageError(f"{where}: {_java_message(error)}") from None


class HadoopDirectory:
    """A directory through Hadoop's FileSystem, as the session `spark` is configured (its
    `hadoopConfiguration()`); its files are named relative to it, "" naming the directory itself.
    StorageError when this Spark has no filesystem for the scheme, or an operation fails."""

    def __init__(self, spark, location: str | Path):
        self.uri = uri_of(location)
        self._hadoop = spark._jvm.org.apache.hadoop
        try:
            with _java_errors(self.uri):
                self._path = self._hadoop.fs.Path(self.uri)
                self._fs = self._path.getFileSystem(spark._jsc.hadoopConfiguration())
        except StorageError as error:
            if not _NO_FILESYSTEM.search(str(error)):
                raise
            scheme = urlparse(self.uri).scheme
            version = self._hadoop.util.VersionInfo.getVersion()
            artifact = _CONNECTORS.get(scheme.lower())
            needed = (f"org.apache.hadoop:{artifact}:{version} (Spark's Hadoop version) and its dependencies"
                      if artifact else f"the jar of a Hadoop filesystem for {scheme}://")
            cause = str(error).removeprefix(f"{self.uri}: ")
            raise StorageError(f"{self.uri}: this Spark has no filesystem for the scheme {scheme}:// ({cause}); "
                               f"put {needed} on the driver's and executors' classpath, for example with "
                               f"spark.jars.packages in spark-defaults.conf") from None

    def uri_at(self, name: str = "") -> str:
        """The URI of `name` in the directory, for Spark's readers and writers too."""
        return f"{self.uri.rstrip('/')}/{name}" if name else self.uri

    def _at(self, name: str):
        return self._hadoop.fs.Path(self.uri_at(name))

    def exists(self, name: str = "") -> bool:
        with _java_errors(self.uri_at(name)):
            return bool(self._fs.exists(self._at(name)))

    def is_dir(self, name: str = "") -> bool:
        with _java_errors(self.uri_at(name)):
            path = self._at(name)
            return bool(self._fs.exists(path) and self._fs.getFileStatus(path).isDirectory())

    def names(self) -> list[str]:
        """The names in the directory (Hadoop's local filesystem leaves out its `.crc` checksums)."""
        with _java_errors(self.uri):
            return sorted(str(status.getPath().getName()) for status in self._fs.listStatus(self._path))

    def read_text(self, name: str) -> str:
        with _java_errors(self.uri_at(name)):
            stream = self._fs.open(self._at(name))
            try:
                return bytes(stream.readAllBytes()).decode()
            finally:
                stream.close()

    def write_text(self, name: str, text: str) -> None:
        """Write a small file whole: to a temporary name, then renamed, so a crash leaves the file
        whole or absent, never half written (a file of that name is removed first: HDFS's rename
        never replaces one)."""
        temporary, target = self._at(f".{name}.tmp"), self._at(name)
        with _java_errors(self.uri_at(name)):
            stream = self._fs.create(temporary, True)
            try:
                stream.write(bytearray(text.encode()))
            finally:
                stream.close()
            self._fs.delete(target, False)
            if not self._fs.rename(temporary, target):
                raise StorageError(f"{self.uri_at(name)}: renaming {temporary} to it failed")

    def delete(self, name: str = "") -> None:
        """Delete a file, or a directory and everything in it; nothing when it is absent."""
        with _java_errors(self.uri_at(name)):
            self._fs.delete(self._at(name), True)

    def mkdirs(self) -> None:
        """Create the directory and its parents."""
        with _java_errors(self.uri):
            if not self._fs.mkdirs(self._path):
                raise StorageError(f"{self.uri}: the directory could not be created")


def directory(location: str | Path, spark=None) -> Directory:
    """The checkpoint directory `location`: through Hadoop with a session, else a local one
    through Python (StorageError for another scheme, which needs the session)."""
    if spark is not None:
        return HadoopDirectory(spark, location)
    path = local_path(location)
    if path is None:
        raise StorageError(f"{location}: a directory of the scheme {urlparse(str(location)).scheme}:// is read "
                           "through Spark: start a session first")
    return LocalDirectory(path)
