"""Cut a byte stream into large blocks that end at line boundaries, with bounded memory.

A line longer than `max_line` is cut: its first `max_line` bytes are kept (fingerprints sit at the
start of messages) and the rest is skipped up to the next newline, so a 200 MB line costs what a
1 MB one does. The splitter is push-based so that a live stream (a child's stdout, a growing file)
and a file on disk go through the same code.
"""

from __future__ import annotations

import re
from collections.abc import Iterator
from typing import BinaryIO

BLOCK = 2 << 20  # a process holds about three (scanned, look-ahead, being read): 4 MiB cost 12 MB more, no less time
MAX_LINE = 1 << 20
_EMPTY_LINES = re.compile(rb"\n*")
_ANSI = re.compile(rb"\x1b(?:\[[0-9;?]*[ -/]*[@-~]|\][^\x07\n]*(?:\x07|\x1b\\)|[@-Z\\-_])")


def line_ends(block: bytes | bytearray) -> bool | None:
    """Whether the input's lines end in CRLF, as its first line with content does: a file written on
    Windows ends every line so. None while the block holds no such line (only empty ones). (Searching
    the whole block for CRLF would cost a second pass over every block of a tqdm log, whose carriage
    returns are everywhere.)"""
    start = _EMPTY_LINES.match(block).end()  # type: ignore[union-attr]  # matches always; empty lines say nothing
    nl = block.find(b"\n", start, start + MAX_LINE)
    if nl < 0:
        return None
    return nl > start and block[nl - 1] == 13


def strip_ansi(block: bytes | bytearray, crlf: bool | None = None) -> bytes:
    """The block without terminal colour codes, and with Windows line ends made plain: a fingerprint
    that ends its line (`Killed[ \t]*$`) must match a log written on Windows or pasted with CRLF.
    `crlf`: the input's line ends as decided on its first line (BlockSplitter), else read from the block."""
    out = _ANSI.sub(b"", block) if b"\x1b" in block else bytes(block)
    return out.replace(b"\r\n", b"\n") if (line_ends(out) if crlf is None else crlf) else out


def needs_cleaning(block: bytes | bytearray, crlf: bool | None = None) -> bool:
    """Whether strip_ansi would change the block (a cheap byte search, no copy)."""
    return b"\x1b" in block or bool(line_ends(block) if crlf is None else crlf)


class BlockSplitter:
    """Feed bytes in; get back blocks of whole lines (ANSI codes removed, CRLF made LF)."""

    def __init__(self, max_line: int = MAX_LINE) -> None:
        self.max_line = max_line
        self._carry = b""
        self._skipping = False  # inside an over-long line whose head was already emitted
        self.cut = 0  # lines longer than max_line, read only to their first max_line bytes
        # The input's line ends, decided once on its first line with content: cut anywhere, every block
        # of one input is cleaned alike (a block whose first line happens to end in CRLF decides nothing).
        self.crlf: bool | None = None

    @property
    def pending(self) -> int:
        """Bytes of an unfinished last line held back."""
        return len(self._carry)

    def add(self, chunk: bytes) -> bytes | None:
        if self._skipping:
            nl = chunk.find(b"\n")
            if nl < 0:
                return None
            chunk = chunk[nl + 1 :]
            self._skipping = False
        cut = chunk.rfind(b"\n")
        if cut < 0:
            data = self._carry + chunk if self._carry else chunk
            if len(data) > self.max_line:
                self._carry, self._skipping = b"", True
                self.cut += 1
                return self.clean(data[: self.max_line] + b"\n")
            self._carry = data
            return None
        # One copy per block: the held-back line and the chunk up to its last newline.
        if cut == len(chunk) - 1 and not self._carry:
            head = chunk
        else:
            head = b"".join((self._carry, memoryview(chunk)[: cut + 1]))
        self._carry = chunk[cut + 1 :]
        if len(self._carry) > self.max_line:
            head += self._carry[: self.max_line] + b"\n"
            self._carry, self._skipping = b"", True
            self.cut += 1
        return self.clean(head)

    def finish(self) -> bytes | None:
        """The last line when the input does not end with a newline."""
        carry, self._carry = self._carry, b""
        return self.clean(carry) if carry else None

    def line_ends(self, block: bytes | bytearray) -> bool | None:
        """The input's line ends, decided on the first block that shows them, then kept."""
        if self.crlf is None:
            self.crlf = line_ends(block)
        return self.crlf

    def clean(self, block: bytes | bytearray) -> bytes:
        """strip_ansi with the input's line ends."""
        return strip_ansi(block, self.line_ends(block))


def iter_blocks(stream: BinaryIO, block_size: int = BLOCK, max_line: int = MAX_LINE,
                head: bytes = b"") -> Iterator[bytes]:
    """Yield blocks that each end just after a newline (the last one may not), ANSI codes removed.
    `head`: bytes already read from the stream (a sniffed sample), which come first."""
    splitter = BlockSplitter(max_line)
    chunk = head
    while True:
        chunk = chunk or stream.read(block_size)
        if not chunk:
            break
        block, chunk = splitter.add(chunk), b""
        if block:
            yield block
    last = splitter.finish()
    if last:
        yield last
