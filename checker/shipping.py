"""kafka-mc shipped with a Spark job: executors need a Python with kafka-mc's dependencies
(numpy, numba, and pyarrow and pandas, which PySpark's Arrow batches need), not kafka-mc.

`ship(spark_context)` zips the driver's own kafka-mc (the Python files of every `kafka_mc`
package the driver has loaded, and of the packages below them) and adds the zip with
`addPyFile`: each executor puts it on its `sys.path` before running a task, so executors run the
driver's code, never an older kafka-mc installed on them. The zip's temporary folder is removed when
the driver's process exits (or, if it was killed, by the next driver: `checker.temporary`). The zip
holds Python files and the path of the driver's kernel cache; the driver's `sys.path` is left as it
was. The compiled kernel, run from the zip, is cached per kernel source
(`checker.kernel.cache.ShippedKernelLocator`), not per job: in the driver's own cache where the
executor's machine has it, else per user.
"""

from __future__ import annotations

import hashlib
import io
import sys
import zipfile
from pathlib import Path

from .temporary import process_folder

_ZIPS: dict[str, Path] = {}  # digest -> zip written by this process


def package_files() -> dict[str, Path]:
    """Archive name -> source file, for every loaded kafka_mc package and the packages below it."""
    files: dict[str, Path] = {}
    packages = [(name, module) for name, module in list(sys.modules.items())
                if (name == "kafka_mc" or name.startswith("kafka_mc.")) and getattr(module, "__path__", None)]
    for name, module in packages:
        for location in module.__path__:
            _add_tree(files, name.replace(".", "/"), Path(location))
    return files


def _add_tree(files: dict[str, Path], prefix: str, directory: Path) -> None:
    for path in sorted(directory.iterdir()):
        if path.is_file() and path.suffix == ".py":
            files.setdefault(f"{prefix}/{path.name}", path)
        elif path.is_dir() and (path / "__init__.py").is_file():
            _add_tree(files, f"{prefix}/{path.name}", path)


def build_zip() -> Path:
    """The zip of `package_files()`, written once per content into the temporary directory."""
    from kafka_mc.checker.kernel.cache import DRIVER_CACHE_ENTRY, SOURCES_CACHE

    buffer = io.BytesIO()
    entries = {name: source.read_bytes() for name, source in package_files().items()}
    # where the driver caches the compiled kernel: executors on its machine use that cache too
    entries[f"kafka_mc/checker/kernel/{DRIVER_CACHE_ENTRY}"] = str(SOURCES_CACHE).encode()
    with zipfile.ZipFile(buffer, "w", zipfile.ZIP_DEFLATED) as archive:
        for name, content in sorted(entries.items()):
            info = zipfile.ZipInfo(name, date_time=(1980, 1, 1, 0, 0, 0))  # the same bytes for the same code
            archive.writestr(info, content, zipfile.ZIP_DEFLATED)
    content = buffer.getvalue()
    digest = hashlib.sha256(content).hexdigest()[:16]
    path = _ZIPS.get(digest)
    if path is None or not path.exists():
        folder = process_folder("ship")  # Spark serves the zip while this process lives
        path = folder / f"kafka_mc-{digest}.zip"
        path.write_bytes(content)
        _ZIPS[digest] = path
    return path


def ship(spark_context) -> Path:
    """Add the zip of the driver's kafka-mc to `spark_context` (once per context) and return it."""
    shipped = getattr(spark_context, "_kafka_mc_zip", None)
    if shipped is None:
        shipped = build_zip()
        before = list(sys.path)
        spark_context.addPyFile(str(shipped))
        sys.path[:] = before  # the driver keeps importing its own kafka-mc (with its package data)
        spark_context._kafka_mc_zip = shipped
    return shipped
