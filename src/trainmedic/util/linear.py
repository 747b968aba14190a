"""Regular expressions that cannot backtrack: every pattern from the library or the scanner runs on RE2.

Hyperscan only nominates a line; confirming it with Python's `re` would let one crafted line (160 KB of
letters before ": read-only file system") take seconds per pattern. RE2 guarantees time linear in the
input for every pattern it accepts, and refuses the constructs that could not (backreferences,
lookaround), so a library pattern RE2 cannot compile is refused when the library loads.
"""

from __future__ import annotations

from typing import Any

import re2  # type: ignore[import-untyped]  # google-re2 ships no type information

MAX_MEM = 64 << 20  # the most one compiled pattern may use; bounded repeats ({0,4000}) grow the program


def _options() -> Any:
    opts = re2.Options()
    opts.max_mem = MAX_MEM
    opts.log_errors = False  # a refused pattern is reported to the caller, not printed by RE2 itself
    return opts


def _flags(ignore_case: bool, multiline: bool) -> str:
    flags = ("m" if multiline else "") + ("i" if ignore_case else "")
    return f"(?{flags})" if flags else ""


def compile_bytes(regex: str, *, ignore_case: bool = False, multiline: bool = True) -> Any:
    """A pattern over bytes (log blocks and lines). With `multiline`, `$` ends a line, as per line."""
    return re2.compile((_flags(ignore_case, multiline) + regex).encode(), _options())


def compile_text(regex: str, *, ignore_case: bool = False, multiline: bool = False) -> Any:
    """A pattern over str (kernel log lines, fixture lines)."""
    return re2.compile(_flags(ignore_case, multiline) + regex, _options())


class Lazy:
    """A str pattern compiled on its first use. RE2 unrolls a bounded repeat ({1,1000}) into its program: a
    MiB or more for one pattern, held by every process that imports it, and counted again in each worker
    it forks. A pattern for input that most runs never see (an IPython traceback) waits until one does."""

    def __init__(self, regex: str, *, ignore_case: bool = False, multiline: bool = False) -> None:
        self._args = (regex, ignore_case, multiline)
        self._compiled: Any = None

    def __getattr__(self, name: str) -> Any:  # match, fullmatch, search, ...: the compiled pattern's own
        if self._compiled is None:
            regex, ignore_case, multiline = self._args
            self._compiled = compile_text(regex, ignore_case=ignore_case, multiline=multiline)
        return getattr(self._compiled, name)


def problem(regex: str) -> str | None:
    """Why RE2 refuses `regex`, or None when it compiles."""
    try:
        compile_text(regex)
    except re2.error as exc:
        why = exc.args[0].decode(errors="replace") if exc.args and isinstance(exc.args[0], bytes) else str(exc)
        return f"RE2 cannot compile it (it would need backtracking, or is too large): {why}"
    return None
