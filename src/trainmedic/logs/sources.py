"""Where log bytes come from: files (plain or compressed), directories of rank logs, stdin.

Compression is detected from magic bytes, not file names, because rotated and renamed logs lie.
"""

from __future__ import annotations

import bz2
import codecs
import gzip
import io
import lzma
import os
import re
import stat
import zlib
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import BinaryIO

MAGIC = {
    b"\x1f\x8b": "gzip",
    b"\x28\xb5\x2f\xfd": "zstd",
    b"BZh": "bz2",
    b"\xfd7zXZ\x00": "xz",
}
_SAMPLE = 64 * 1024
# Bytes that never appear in text logs. NUL and ESC are excluded on purpose: worker crash
# messages end with a NUL byte and coloured logs carry ESC sequences.
_BINARY_BYTES = bytes(b for b in range(32) if b not in (0, 9, 10, 11, 12, 13, 27)) + b"\x7f"
_BINARY_TABLE = bytes.maketrans(b"", b"")
_NUL_RUN = re.compile(rb"\x00{16,}")


class InputError(Exception):
    """An input that cannot be read as a log; the message is shown as one line, exit code 2."""


@dataclass(frozen=True)
class Source:
    """One log stream: a path on disk or standard input."""

    name: str
    path: Path | None  # None for stdin
    size: int | None
    from_dir: bool = False

    def open(self, stdin: BinaryIO | None = None) -> BinaryIO:
        if self.path is None:
            if stdin is None:
                raise InputError("standard input is not available")
            return _text(_decompressing(_Peekable(stdin), self.name))
        try:
            raw: BinaryIO = self.path.open("rb")  # caller closes; the stream outlives this frame
        except PermissionError as exc:
            raise InputError(f"{self.name}: permission denied") from exc
        except IsADirectoryError as exc:
            raise InputError(f"{self.name}: is a directory") from exc
        except OSError as exc:
            raise InputError(f"{self.name}: cannot open: {exc.strerror or exc}") from exc
        return _text(_decompressing(_Peekable(raw), self.name))


class _Peekable(io.RawIOBase):
    """Wraps a stream so its first bytes can be looked at without seeking (stdin cannot seek)."""

    def __init__(self, raw: BinaryIO) -> None:
        self._raw = raw
        self._head = b""

    def peek(self, n: int) -> bytes:
        while len(self._head) < n:
            try:
                chunk = self._raw.read(n - len(self._head))
            except ValueError as exc:  # a closed standard input (`<&-`)
                raise InputError("standard input is closed") from exc
            if not chunk:
                break
            self._head += chunk
        return self._head[:n]

    def readable(self) -> bool:
        return True

    def readinto(self, b: bytearray | memoryview) -> int:  # type: ignore[override]  # buffer protocol
        mv = memoryview(b)
        if self._head:
            n = min(len(mv), len(self._head))
            mv[:n] = self._head[:n]
            self._head = self._head[n:]
            return n
        data = self._raw.read(len(mv))
        mv[: len(data)] = data
        return len(data)

    def close(self) -> None:
        self._raw.close()
        super().close()


def compression_of(head: bytes) -> str | None:
    for magic, kind in MAGIC.items():
        if head.startswith(magic):
            return kind
    return None


def _decompressing(stream: _Peekable, name: str) -> BinaryIO:
    kind = compression_of(stream.peek(8))
    buffered = io.BufferedReader(stream, buffer_size=1 << 20)
    if kind is None:
        return buffered
    # The streams outlive this function (the caller closes what it gets): no context managers here.
    inner: io.RawIOBase | BinaryIO
    if kind == "gzip":
        inner = gzip.GzipFile(fileobj=buffered, mode="rb")  # type: ignore[assignment]  # a BinaryIO in practice
    elif kind == "bz2":
        inner = bz2.BZ2File(buffered, mode="rb")  # type: ignore[assignment]
    elif kind == "xz":
        inner = lzma.LZMAFile(buffered, mode="rb")  # type: ignore[assignment]  # noqa: SIM115
    else:
        inner = _Zstd(buffered)
    return io.BufferedReader(_Checked(inner, name, kind), buffer_size=1 << 20)


def wide_encoding(head: bytes) -> str | None:
    """UTF-16 or UTF-32 (PowerShell's `>` writes UTF-16 LE with a BOM), from a BOM or from the NUL
    pattern ASCII text leaves in them; None for UTF-8, Latin-1 and anything else byte-oriented."""
    if head.startswith((b"\xff\xfe\x00\x00", b"\x00\x00\xfe\xff")):
        return "utf-32"
    if head.startswith((b"\xff\xfe", b"\xfe\xff")):
        return "utf-16"
    sample = head[:256] if len(head) >= 256 else head[: len(head) - len(head) % 4]
    if len(sample) < 8:
        return None
    lanes = [sample[i::4].count(0) / (len(sample) // 4) for i in range(4)]
    if lanes[1] > 0.9 and lanes[2] > 0.9 and lanes[3] > 0.9 and lanes[0] < 0.1:
        return "utf-32-le"
    if lanes[0] > 0.9 and lanes[1] > 0.9 and lanes[2] > 0.9 and lanes[3] < 0.1:
        return "utf-32-be"
    odd = (lanes[1] + lanes[3]) / 2
    even = (lanes[0] + lanes[2]) / 2
    if odd > 0.9 and even < 0.1:
        return "utf-16-le"
    if even > 0.9 and odd < 0.1:
        return "utf-16-be"
    return None


class _Pieces(io.RawIOBase):
    """A raw stream over bytes made a piece at a time by `_next()` (b"" only at the end): the one
    readinto behind every stream that decodes what it reads (wide encodings, zstd, damage checks)."""

    def __init__(self, raw: io.RawIOBase | BinaryIO) -> None:
        self._raw = raw
        self._out = b""

    def _next(self) -> bytes:
        raise NotImplementedError

    def readable(self) -> bool:
        return True

    def readinto(self, b: bytearray | memoryview) -> int:  # type: ignore[override]
        if not self._out:
            self._out = self._next()
        n = min(len(b), len(self._out))
        memoryview(b)[:n] = self._out[:n]
        self._out = self._out[n:]
        return n

    def close(self) -> None:
        try:
            self._raw.close()
        finally:
            super().close()


class _Transcoded(_Pieces):
    """A UTF-16/32 log read as UTF-8, so every pattern and offset works on it as on any other log."""

    def __init__(self, raw: BinaryIO, encoding: str) -> None:
        super().__init__(raw)
        self._decoder = codecs.getincrementaldecoder(encoding)(errors="replace")
        self._eof = False

    def _next(self) -> bytes:
        out = b""
        while not out and not self._eof:
            chunk = self._raw.read(1 << 20)
            self._eof = not chunk
            out = self._decoder.decode(chunk, final=self._eof).encode("utf-8")
        return out


def _text(stream: BinaryIO) -> BinaryIO:
    """The stream as UTF-8 bytes: wide encodings are transcoded, everything else passes as it is."""
    peek = getattr(stream, "peek", None)
    head = peek(256)[:256] if peek is not None else b""
    encoding = wide_encoding(head)
    if encoding is None:
        return stream
    return io.BufferedReader(_Transcoded(stream, encoding), buffer_size=1 << 20)


# What a damaged or cut compressed stream raises, by library: zlib and gzip (zlib.error, EOFError,
# BadGzipFile), bz2 and lzma (OSError, EOFError, LZMAError), zstandard (ZstdError).
_CORRUPT: tuple[type[BaseException], ...] = (EOFError, OSError, ValueError, lzma.LZMAError, zlib.error)


class _Checked(_Pieces):
    """A decompressing stream whose damage is an InputError (one line, exit 2), never a traceback."""

    def __init__(self, inner: io.RawIOBase | BinaryIO, name: str, kind: str) -> None:
        super().__init__(inner)
        self._name = name
        self._kind = kind

    def _next(self) -> bytes:
        try:
            return self._raw.read(1 << 20) or b""
        except InputError:
            raise
        except (*_CORRUPT, *_zstd_errors()) as exc:
            raise InputError(f"{self._name}: damaged or truncated {self._kind} data ({exc})") from exc


def _zstd_errors() -> tuple[type[BaseException], ...]:
    try:
        import zstandard
    except ImportError:  # pragma: no cover - zstandard is a core dependency
        return ()
    return (zstandard.ZstdError,)


class _Zstd(_Pieces):
    """zstd frames, one after another, with a cut last frame reported (zstandard's stream reader
    returns nothing for it and ends quietly). Windows up to 2 GiB are accepted (`zstd --long=31`).
    Compressed input goes in small pieces, so one call never makes more than a bounded output."""

    STEP = 4096  # compressed bytes per call: even a maximal ratio stays a bounded burst of output

    def __init__(self, raw: BinaryIO) -> None:
        import zstandard

        super().__init__(raw)
        self._new = zstandard.ZstdDecompressor(max_window_size=1 << 31).decompressobj
        self._d = self._new()
        self._fed = False  # the current frame has been given input

    def _next(self) -> bytes:
        out = b""
        while not out:
            chunk = self._raw.read(self.STEP)
            if not chunk:
                if self._fed and not self._d.eof:
                    raise EOFError("the last zstd frame is cut off")
                return b""
            out = self._feed(chunk)
        return out

    def _feed(self, chunk: bytes) -> bytes:
        out = []
        while chunk:
            self._fed = True
            out.append(self._d.decompress(chunk))
            chunk = b""
            if self._d.eof:  # the frame ended; what follows is the next frame
                chunk = self._d.unused_data
                self._d, self._fed = self._new(), False
        return b"".join(out)


def looks_binary(sample: bytes) -> bool:
    """True for data that is clearly not a text log (images, checkpoints, executables)."""
    if not sample:
        return False
    bad = len(sample) - len(sample.translate(_BINARY_TABLE, _BINARY_BYTES))
    # A crash message adds a handful of NULs, and a file cut by a crash is padded with a run of them;
    # binary files have them scattered everywhere.
    padding = sum(len(run) for run in _NUL_RUN.findall(sample))
    if padding == len(sample):
        return True  # nothing but NULs (/dev/zero, a zeroed file): no text at all
    nul = sample.count(b"\x00") - padding
    return bad / len(sample) > 0.05 or nul / len(sample) > 0.10


_SKIP_DIRS = {".git", "__pycache__", ".ipynb_checkpoints"}


def _walk(root: Path) -> Iterator[Path]:
    for dirpath, dirnames, filenames in os.walk(root):
        dirnames[:] = sorted(d for d in dirnames if d not in _SKIP_DIRS and not d.startswith("."))
        for fn in sorted(filenames):
            if not fn.startswith("."):
                yield Path(dirpath) / fn


def expand(paths: list[str]) -> list[Source]:
    """Turn command-line paths into sources; raise InputError for anything unreadable."""
    sources: list[Source] = []
    if not paths:
        raise InputError("no input given: pass log files, a directory, or '-' for standard input")
    if paths.count("-") > 1:
        raise InputError("'-' (standard input) is given more than once; it can be read only once")
    for raw in paths:
        if raw == "-":
            sources.append(Source("<stdin>", None, None))
            continue
        p = Path(raw)
        try:
            st = p.stat()
        except FileNotFoundError as exc:
            raise InputError(f"{raw}: no such file or directory") from exc
        except PermissionError as exc:
            raise InputError(f"{raw}: permission denied") from exc
        except OSError as exc:
            raise InputError(f"{raw}: cannot read: {exc.strerror or exc}") from exc
        if stat.S_ISDIR(st.st_mode):
            found = []
            for f in _walk(p):
                try:
                    fst = f.stat()
                except OSError:
                    continue
                if stat.S_ISREG(fst.st_mode):
                    found.append(Source(str(f), f, fst.st_size, from_dir=True))
            if not found:
                raise InputError(f"{raw}: directory holds no log files")
            sources.extend(found)
        elif stat.S_ISREG(st.st_mode) or stat.S_ISFIFO(st.st_mode) or stat.S_ISCHR(st.st_mode):
            if not os.access(p, os.R_OK):
                raise InputError(f"{raw}: permission denied")
            sources.append(Source(raw, p, st.st_size if stat.S_ISREG(st.st_mode) else None))
        else:
            raise InputError(f"{raw}: not a regular file")
    return sources
