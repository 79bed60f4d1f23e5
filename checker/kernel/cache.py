"""Keeping numba's on-disk cache of the kernel honest.

numba keys a cached function on its own source file only, but the kernel's level loop
inlines the transitions and properties of other files: after an edit of any kernel source,
the cached machine code of an unchanged file would be stale. `drop_stale_cache` deletes the
kernel's cache files whenever the sources' digest differs from the one recorded beside them.
"""

from __future__ import annotations

import hashlib
from pathlib import Path

KERNEL_DIR = Path(__file__).parent
CACHE_DIR = KERNEL_DIR / "__pycache__"
DIGEST_FILE = CACHE_DIR / "kernel-sources.sha256"


def sources_digest() -> str:
    digest = hashlib.sha256()
    for source in sorted(KERNEL_DIR.glob("*.py")):
        digest.update(source.name.encode() + b"\0" + source.read_bytes())
    return digest.hexdigest()


def drop_stale_cache() -> None:
    """Delete the kernel's numba cache files if the sources changed since they were written (a
    read-only install is left alone: numba then caches elsewhere, per user)."""
    try:
        current = sources_digest()
        if DIGEST_FILE.exists() and DIGEST_FILE.read_text() == current:
            return
        for cached in list(CACHE_DIR.glob("*.nbi")) + list(CACHE_DIR.glob("*.nbc")):
            cached.unlink()
        CACHE_DIR.mkdir(exist_ok=True)
        DIGEST_FILE.write_text(current)
    except OSError:
        pass
