"""A small on-disk cache for work that only depends on the library: the validated library and the
compiled pattern database. Start-up is most of the cost of diagnosing a small log, so a warm cache
turns ~1 s of YAML parsing, validation and hyperscan compilation into a few milliseconds.

Entries are keyed by a digest of everything they depend on, written atomically, and any failure to
read or write the cache only means doing the work again: it never breaks a diagnosis.
"""

from __future__ import annotations

import hashlib
import os
import tempfile
from collections.abc import Iterable
from pathlib import Path


def cache_dir() -> Path | None:
    """TRAINMEDIC_CACHE_DIR, else $XDG_CACHE_HOME/trainmedic, else ~/.cache/trainmedic; '' or 'off' disables."""
    explicit = os.environ.get("TRAINMEDIC_CACHE_DIR")
    if explicit is not None:
        return None if explicit in ("", "off", "0") else Path(explicit)
    xdg = os.environ.get("XDG_CACHE_HOME")
    return (Path(xdg) if xdg else Path("~/.cache").expanduser()) / "trainmedic"


def digest(parts: Iterable[bytes]) -> str:
    h = hashlib.sha256()
    for part in parts:
        h.update(len(part).to_bytes(8, "little"))
        h.update(part)
    return h.hexdigest()[:32]


def read(kind: str, key: str) -> bytes | None:
    root = cache_dir()
    if root is None:
        return None
    try:
        return (root / f"{kind}-{key}").read_bytes()
    except OSError:
        return None


def write(kind: str, key: str, data: bytes) -> None:
    root = cache_dir()
    if root is None:
        return
    try:
        root.mkdir(parents=True, exist_ok=True)
        fd, tmp = tempfile.mkstemp(dir=root, prefix=f".{kind}-")
        with os.fdopen(fd, "wb") as f:
            f.write(data)
        Path(tmp).replace(root / f"{kind}-{key}")
    except OSError:
        return
