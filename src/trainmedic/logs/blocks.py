"""Cut a byte stream into large blocks that end at line boundaries, with bounded memory.

A line longer than `max_line` is cut: its first `max_line` bytes are kept (fingerprints sit at the
start of messages) and the rest is skipped up to the next newline, so a 200 MB line costs what a
1 MB one does.
"""

from __future__ import annotations

import re
from collections.abc import Iterator
from typing import BinaryIO

BLOCK = 4 << 20
MAX_LINE = 1 << 20
_ANSI = re.compile(rb"\x1b(?:\[[0-9;?]*[ -/]*[@-~]|\][^\x07\n]*(?:\x07|\x1b\\)|[@-Z\\-_])")


def strip_ansi(block: bytes) -> bytes:
    return _ANSI.sub(b"", block) if b"\x1b" in block else block


def iter_blocks(stream: BinaryIO, block_size: int = BLOCK, max_line: int = MAX_LINE) -> Iterator[bytes]:
    """Yield blocks that each end just after a newline (the last one may not), ANSI codes removed."""
    carry = b""
    skipping = False  # inside an over-long line whose head was already emitted
    while True:
        chunk = stream.read(block_size)
        if not chunk:
            break
        if skipping:
            nl = chunk.find(b"\n")
            if nl < 0:
                continue
            chunk = chunk[nl + 1 :]
            skipping = False
        data = carry + chunk if carry else chunk
        cut = data.rfind(b"\n")
        if cut < 0:
            if len(data) > max_line:
                yield strip_ansi(data[:max_line] + b"\n")
                carry, skipping = b"", True
            else:
                carry = data
            continue
        carry = data[cut + 1 :]
        head = data[: cut + 1]
        if len(carry) > max_line:
            head += carry[:max_line] + b"\n"
            carry, skipping = b"", True
        yield strip_ansi(head)
    if carry:
        yield strip_ansi(carry)
