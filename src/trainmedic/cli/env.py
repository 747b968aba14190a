"""The streams and terminal facts a command runs with, injectable so tests call the real CLI in-process."""

from __future__ import annotations

import io
import os
import sys
from dataclasses import dataclass, field
from pathlib import Path
from typing import BinaryIO, TextIO

from trainmedic.util.text import printable


def _stdin() -> BinaryIO:
    """Standard input; when the shell closed it (`<&-`), a closed stream: reading it is an input error."""
    if sys.stdin is not None:
        return sys.stdin.buffer
    closed = io.BytesIO()
    closed.close()
    return closed


def _text_out(stream: TextIO | None) -> TextIO:
    """A closed standard stream (`>&-`) writes nowhere rather than crashing the command."""
    return stream if stream is not None else Path(os.devnull).open("w")  # lives as long as the process


def _isatty(stream: TextIO | None) -> bool:
    try:
        return stream is not None and stream.isatty()
    except (OSError, ValueError):
        return False


@dataclass
class Env:
    stdin: BinaryIO = field(default_factory=_stdin)
    stdout: TextIO = field(default_factory=lambda: _text_out(sys.stdout))
    stderr: TextIO = field(default_factory=lambda: _text_out(sys.stderr))
    stdout_isatty: bool = field(default_factory=lambda: _isatty(sys.stdout))
    stderr_isatty: bool = field(default_factory=lambda: _isatty(sys.stderr))
    environ: dict[str, str] = field(default_factory=lambda: dict(os.environ))
    # What the command will exit with once its output is written: a reader that stops reading (a
    # closed pipe) must not turn "a failure was found" into success.
    pending_exit: int | None = None

    def error(self, message: str) -> None:
        """One clear line on stderr: what went wrong and, where it helps, what to do."""
        one_line = printable(" ".join(message.split()))
        try:
            self.stderr.write(f"trainmedic: error: {one_line}\n")
            self.stderr.flush()
        except (OSError, ValueError):  # stderr itself is closed or full: the exit code still says it
            pass
