"""Diagnose text with a chosen matcher back-end and block size, for the equivalence tests."""

from __future__ import annotations

import io
from typing import Any

from trainmedic.catalog import load_library
from trainmedic.logs.reader import Reader
from trainmedic.logs.sources import Source
from trainmedic.reason.engine import Context, reason
from trainmedic.scan.database import STRUCTURE, library_patterns

_READERS: dict[tuple[str, int], Reader] = {}


def diagnose_with(data: bytes | list[tuple[str, bytes]], backend: str = "python", block_size: int = 4 << 20) -> Any:
    lib = load_library()
    key = (backend, block_size)
    if key not in _READERS:
        _READERS[key] = Reader([*library_patterns(lib), *STRUCTURE], backend, block_size)
    reader = _READERS[key]
    files = data if isinstance(data, list) else [("<text>", data)]
    scans = [reader.scan(Source(name, None, len(body)), io.BytesIO(body)) for name, body in files]
    return reason(Context(lib, scans)).to_json()
