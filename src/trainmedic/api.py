"""The Python API: `diagnose(paths_or_text)` returns a frozen Diagnosis; nothing is printed."""

from __future__ import annotations

import io
import os
from collections.abc import Callable, Iterable, Sequence
from pathlib import Path
from typing import BinaryIO

from trainmedic.catalog import Library, load_library
from trainmedic.logs.reader import InputScan, Reader
from trainmedic.logs.sources import InputError, Source, expand
from trainmedic.model import Diagnosis, Fact
from trainmedic.reason.engine import Context, reason
from trainmedic.scan.database import STRUCTURE, library_patterns

__all__ = ["InputError", "diagnose", "diagnose_files", "diagnose_sources", "get_reader"]

_READERS: dict[tuple[int, str | None], Reader] = {}


def get_reader(library: Library, backend: str | None = None) -> Reader:
    """Compiling the pattern database is the expensive part; do it once per library and backend."""
    key = (id(library), backend or os.environ.get("TRAINMEDIC_SCANNER"))
    if key not in _READERS:
        reader = Reader([*library_patterns(library), *STRUCTURE], backend)
        # Worker processes of a parallel scan load the same library folder.
        reader.library_root = Path(library.entries[0].source).parent.parent if library.entries else None
        _READERS[key] = reader
    return _READERS[key]


def diagnose_sources(
    sources: Sequence[Source],
    *,
    library: Library | None = None,
    facts: Iterable[Fact] = (),
    stdin: BinaryIO | None = None,
    backend: str | None = None,
    on_input: Callable[[Source], None] | None = None,
    on_bytes: Callable[[int], None] | None = None,
) -> Diagnosis:
    lib = library or load_library()
    reader = get_reader(lib, backend)
    scans: list[InputScan] = []
    for src in sources:
        if on_input is not None:
            on_input(src)
        scans.append(reader.scan(src, stdin, on_bytes))
    return reason(Context(lib, scans, tuple(facts)))


def diagnose(
    paths_or_text: str | os.PathLike[str] | Sequence[str | os.PathLike[str]] | bytes,
    *,
    library: Library | None = None,
    facts: Iterable[Fact] = (),
    backend: str | None = None,
) -> Diagnosis:
    """Diagnose log files, directories, or log text.

    A `str` that names an existing path is read as a file; any other `str` (or `bytes`) is the log
    itself, so a pasted traceback works: `diagnose(traceback_text)`.
    """
    if isinstance(paths_or_text, bytes):
        return _from_bytes(paths_or_text, library, facts, backend)
    if isinstance(paths_or_text, str) and ("\n" in paths_or_text or not Path(paths_or_text).exists()):
        return _from_bytes(paths_or_text.encode(), library, facts, backend)
    items = [paths_or_text] if isinstance(paths_or_text, (str, os.PathLike)) else list(paths_or_text)
    return diagnose_sources(expand([os.fspath(p) for p in items]), library=library, facts=facts, backend=backend)


def _from_bytes(data: bytes, library: Library | None, facts: Iterable[Fact], backend: str | None) -> Diagnosis:
    return diagnose_files([("<text>", data)], library=library, facts=facts, backend=backend)


def diagnose_files(
    files: Sequence[tuple[str, bytes]],
    *,
    library: Library | None = None,
    facts: Iterable[Fact] = (),
    backend: str | None = None,
) -> Diagnosis:
    """Diagnose named in-memory logs (uploads, editor buffers): each name plays the role of a path,
    so per-rank names like `rank3.log` attribute ranks as files on disk do. Compressed bytes are fine."""
    lib = library or load_library()
    reader = get_reader(lib, backend)
    scans = [reader.scan(Source(name, None, len(data)), io.BytesIO(data)) for name, data in files]
    return reason(Context(lib, scans, tuple(facts)))
