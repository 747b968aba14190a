"""Diagnose text with a chosen matcher back-end and block size, for the equivalence tests."""

from __future__ import annotations

from typing import Any

from trainmedic.api import Diagnoser, Named


def diagnose_with(data: bytes | list[tuple[str, bytes]], backend: str = "python", block_size: int = 4 << 20) -> Any:
    files = data if isinstance(data, list) else [("<text>", data)]
    diagnoser = Diagnoser(backend=backend, block_size=block_size, parallel=False)
    return diagnoser.diagnose([Named(name, body) for name, body in files]).to_json()
