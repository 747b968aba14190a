"""The streams and terminal facts a command runs with, injectable so tests call the real CLI in-process."""

from __future__ import annotations

import os
import sys
from dataclasses import dataclass, field
from typing import BinaryIO, TextIO


@dataclass
class Env:
    stdin: BinaryIO = field(default_factory=lambda: sys.stdin.buffer)
    stdout: TextIO = field(default_factory=lambda: sys.stdout)
    stderr: TextIO = field(default_factory=lambda: sys.stderr)
    stdout_isatty: bool = field(default_factory=sys.stdout.isatty)
    stderr_isatty: bool = field(default_factory=sys.stderr.isatty)
    environ: dict[str, str] = field(default_factory=lambda: dict(os.environ))

    def error(self, message: str) -> None:
        """One clear line on stderr: what went wrong and, where it helps, what to do."""
        one_line = " ".join(message.split())
        self.stderr.write(f"trainmedic: error: {one_line}\n")
        self.stderr.flush()
