"""The one way in: a `Diagnoser` turns inputs into a frozen Diagnosis; nothing is printed.

Every face (CLI, web, editor, live run/watch, isolate, the tests) goes through it, so a log gives
the same answer wherever it is read. The expensive part, compiling the pattern database, happens
once per library, back-end and scan shape, and is shared by every Diagnoser in the process.
"""

from __future__ import annotations

import io
import os
import threading
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import BinaryIO, Union

from trainmedic.catalog import Library, load_library
from trainmedic.logs.blocks import BLOCK
from trainmedic.logs.checkpoints import PATTERNS as CHECKPOINTS
from trainmedic.logs.parallel import scan_file
from trainmedic.logs.reader import Reader, ScanState
from trainmedic.logs.sources import InputError, Source, expand
from trainmedic.model import Diagnosis, Fact, ScanResult
from trainmedic.reason.context import Context
from trainmedic.reason.templates import Baseline
from trainmedic.scan.database import STRUCTURE, Pattern, library_patterns

__all__ = ["Diagnoser", "InputError", "Named", "diagnose"]


@dataclass(frozen=True)
class Named:
    """A log that is not a file on disk (an upload, an editor buffer, pasted text): its name plays the
    role of a path, so per-rank names like `rank3.log` attribute ranks as files do."""

    name: str
    data: bytes | BinaryIO
    size: int | None = None  # bytes it holds, when `data` is a stream that knows it


# A path (or '-' for stdin), a Source already expanded, an in-memory log, or bytes of log text.
Input = Union[str, "os.PathLike[str]", Source, Named, bytes]

def reader_patterns(library: Library) -> list[Pattern]:
    """Everything the reader scans for: the library's fingerprints, the structure it reads (tracebacks,
    summaries, world size) and the checkpoint lines the next action is read from."""
    return [*library_patterns(library), *STRUCTURE, *CHECKPOINTS]


_CACHE_LOCK = threading.Lock()
_READERS: dict[tuple[int, str | None, int, bool], tuple[Library, Reader]] = {}
_MAX_READERS = 8  # an editor that reloads an edited library makes new ones; old ones are dropped


class Diagnoser:
    """Library + scan back-end + parallelism: everything that decides how logs are read."""

    def __init__(self, library: Library | None = None, *, backend: str | None = None, parallel: bool = True,
                 block_size: int = BLOCK, baseline: Baseline | None = None) -> None:
        self._library = library
        self.baseline = baseline  # a good run's templates: the failing run's new lines are compared with it
        self.backend = backend
        self.parallel = parallel
        self.block_size = block_size

    @property
    def library(self) -> Library:
        if self._library is None:
            self._library = load_library()
        return self._library

    @property
    def reader(self) -> Reader:
        """The shared reader of this library, back-end and block size, compiled on first use."""
        lib = self.library
        keep_tail = self.baseline is not None
        key = (id(lib), self.backend or os.environ.get("TRAINMEDIC_SCANNER"), self.block_size, keep_tail)
        with _CACHE_LOCK:
            hit = _READERS.get(key)
            if hit is not None and hit[0] is lib:
                return hit[1]
            if len(_READERS) >= _MAX_READERS:
                _READERS.clear()
            reader = Reader(reader_patterns(lib), self.backend, self.block_size, keep_tail)
            _READERS[key] = (lib, reader)
            return reader

    def warm(self) -> None:
        """Compile the pattern database now (a server does it before the first request)."""
        _ = self.reader

    # ------------------------------------------------------------ whole inputs

    def scan(
        self,
        inputs: Input | Sequence[Input],
        *,
        stdin: BinaryIO | None = None,
        on_input: Callable[[Source], None] | None = None,
        on_bytes: Callable[[int], None] | None = None,
    ) -> list[ScanResult]:
        """One ScanResult per input file (a directory expands to its files). Raises InputError."""
        reader = self.reader
        out: list[ScanResult] = []
        for source, stream in _sources(inputs):
            if on_input is not None:
                on_input(source)
            try:
                out.append(scan_file(reader, source, stream if stream is not None else stdin, on_bytes,
                                     parallel=self.parallel))
            except InputError as exc:
                if not source.from_dir:
                    raise  # a file the user named: it is the answer's input, so its error is the answer
                # One bad file of a directory of rank logs: say so and read the others (as grep does).
                out.append(ScanResult(path=source.name, unreadable=str(exc)))
        if out and all(s.unreadable for s in out):
            raise InputError(out[0].unreadable)  # nothing at all could be read
        return out

    def reason(self, scans: Sequence[ScanResult], facts: Iterable[Fact] = ()) -> Diagnosis:
        # (imported here, after the scan: the workers a big scan forks need not hold the reasoner's code)
        from trainmedic.reason.engine import reason

        return reason(Context(self.library, tuple(scans), tuple(facts), self.baseline))

    def diagnose(
        self,
        inputs: Input | Sequence[Input],
        *,
        facts: Iterable[Fact] = (),
        stdin: BinaryIO | None = None,
        on_input: Callable[[Source], None] | None = None,
        on_bytes: Callable[[int], None] | None = None,
    ) -> Diagnosis:
        """Diagnose the inputs together, as one job (one input per rank, or one combined log)."""
        return self.reason(self.scan(inputs, stdin=stdin, on_input=on_input, on_bytes=on_bytes), facts)

    # ------------------------------------------------------------ bytes that arrive over time

    def stream(self, name: str) -> ScanState:
        """A push-based scan of a live stream: `feed()` bytes as they come, `snapshot()` at any time,
        `finish()` at the end; each gives the ScanResult that `reason()` takes."""
        return self.reader.state(Source(name, None, None))


def _sources(inputs: Input | Sequence[Input]) -> list[tuple[Source, BinaryIO | None]]:
    items: Sequence[Input] = (
        [inputs] if isinstance(inputs, (str, os.PathLike, Source, Named, bytes)) else inputs
    )
    out: list[tuple[Source, BinaryIO | None]] = []
    paths: list[str] = []

    def flush_paths() -> None:
        if paths:
            out.extend((s, None) for s in expand(paths))
            paths.clear()

    for item in items:
        if isinstance(item, (str, os.PathLike)):
            paths.append(os.fspath(item))
            continue
        flush_paths()
        if isinstance(item, Source):
            out.append((item, None))
        elif isinstance(item, bytes):
            out.append((Source("<text>", None, len(item)), io.BytesIO(item)))
        elif isinstance(item.data, bytes):
            out.append((Source(item.name, None, len(item.data)), io.BytesIO(item.data)))
        else:
            out.append((Source(item.name, None, item.size), item.data))
    flush_paths()
    if not out:
        raise InputError("nothing to diagnose")
    return out


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
    diagnoser = Diagnoser(library, backend=backend)
    if isinstance(paths_or_text, str) and ("\n" in paths_or_text or not Path(paths_or_text).exists()):
        paths_or_text = paths_or_text.encode()
    return diagnoser.diagnose(paths_or_text, facts=facts)
