"""A small on-disk cache for work that only depends on the library: the validated library and the
compiled pattern database. Start-up is most of the cost of diagnosing a small log, so a warm cache
turns ~1 s of YAML parsing, validation and hyperscan compilation into a few milliseconds.

Entries are keyed by a digest of everything they depend on, written atomically, and any failure to
read or write the cache only means doing the work again: it never breaks a diagnosis. Each library
change makes new entries, so a write keeps only the newest KEEP of its kind.
"""

from __future__ import annotations

import os
import tempfile
from collections.abc import Iterable
from pathlib import Path

try:  # CPython's own BLAKE2: hashlib would load OpenSSL's libcrypto, 3 MB resident in every diagnosis
    from _blake2 import blake2b
except ImportError:  # pragma: no cover - an interpreter built without it
    from hashlib import blake2b

KEEP = 8  # entries of each kind kept: a few library versions side by side (tests, worktrees, upgrades)


def cache_dir() -> Path | None:
    """TRAINMEDIC_CACHE_DIR, else $XDG_CACHE_HOME/trainmedic, else ~/.cache/trainmedic; '' or 'off' disables."""
    explicit = os.environ.get("TRAINMEDIC_CACHE_DIR")
    if explicit is not None:
        return None if explicit in ("", "off", "0") else Path(explicit)
    xdg = os.environ.get("XDG_CACHE_HOME")
    return (Path(xdg) if xdg else Path("~/.cache").expanduser()) / "trainmedic"


def digest(parts: Iterable[bytes]) -> str:
    h = blake2b(digest_size=16)
    for part in parts:
        h.update(len(part).to_bytes(8, "little"))
        h.update(part)
    return h.hexdigest()


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
        _prune(root, kind)
    except OSError:
        return


def _prune(root: Path, kind: str) -> None:
    """Remove all but the KEEP newest entries of `kind` (the one just written is the newest)."""
    entries = []
    with os.scandir(root) as it:
        for e in it:
            if e.name.startswith(f"{kind}-") and e.is_file(follow_symlinks=False):
                entries.append((e.stat(follow_symlinks=False).st_mtime_ns, e.path))
    entries.sort(reverse=True)
    for _, path in entries[KEEP:]:
        try:
            Path(path).unlink()
        except OSError:
            continue
