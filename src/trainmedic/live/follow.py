"""Follow growing log files (and directories of them) into a LiveAnalysis, like `tail -F`.

Files are polled, not watched with inotify: it works on NFS and Lustre, where training logs live.
A file is known by its inode, not its name, because rotation moves names around:
  - rotation (the name now has another inode): read the old file to its end, finish its stream
    under the name it moved to (train.log.1) and start a new stream for the new file;
  - truncation (the file shrank, or its first bytes changed: truncated and rewritten between two
    polls): what was said is gone, so its stream starts over;
  - a new file in a watched directory: followed from its start;
  - a compressed file (an archived rotation) is read once, whole.
"""

from __future__ import annotations

import contextlib
import io
import os
import stat
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path

from trainmedic.live.streams import LiveAnalysis
from trainmedic.logs.sources import InputError, Source, compression_of

READ_LIMIT = 8 << 20  # bytes read per file per poll, so one huge file cannot starve the others
HEAD = 64  # first bytes of each file, compared at every poll to notice a rewrite
_SKIP_DIRS = {".git", "__pycache__", ".ipynb_checkpoints"}

FileKey = tuple[int, int]  # (st_dev, st_ino)


@dataclass
class _Followed:
    name: str  # the stream's name: the path it had when first seen
    key: FileKey
    fh: io.FileIO
    offset: int = 0
    head: bytes = b""


class Follower:
    """Reads what the watched paths gained since the last poll."""

    def __init__(self, paths: list[str], analysis: LiveAnalysis, *, say: Callable[[str], None],
                 on_data: Callable[[bytes], None] | None = None) -> None:
        self.paths = paths
        self.analysis = analysis
        self.say = say
        self.on_data = on_data
        self._by_name: dict[str, _Followed] = {}
        self._finished: set[FileKey] = set()  # rotated-away or skipped files: never read again

    def _discover(self) -> Iterator[tuple[str, os.stat_result]]:
        for raw in self.paths:
            try:
                st = Path(raw).stat()
            except OSError:
                continue  # a watched file between rotation and re-creation
            if stat.S_ISDIR(st.st_mode):
                for dirpath, dirnames, filenames in os.walk(raw):
                    dirnames[:] = sorted(d for d in dirnames if d not in _SKIP_DIRS and not d.startswith("."))
                    for fn in sorted(filenames):
                        if fn.startswith("."):
                            continue
                        path = Path(dirpath) / fn
                        with contextlib.suppress(OSError):
                            fst = path.stat()
                            if stat.S_ISREG(fst.st_mode):
                                yield str(path), fst
            elif stat.S_ISREG(st.st_mode):
                yield raw, st

    def poll(self) -> int:
        """One round: notice rotations, truncations and new files; read new bytes. Returns bytes read."""
        seen = dict(self._discover())
        by_key = {(st.st_dev, st.st_ino): path for path, st in seen.items()}
        for name, f in list(self._by_name.items()):
            st = seen.get(name)
            if st is None or (st.st_dev, st.st_ino) != f.key:
                self._rotate(f, by_key.get(f.key))
        for path, st in seen.items():
            key = (st.st_dev, st.st_ino)
            if path in self._by_name or key in self._finished:
                continue
            if any(f.key == key for f in self._by_name.values()):
                continue  # a followed file seen under a second name (a hard link)
            self._start(path, key)
        return sum(self._read(f) for f in list(self._by_name.values()))

    def _start(self, path: str, key: FileKey) -> None:
        try:
            fh = Path(path).open("rb", buffering=0)  # noqa: SIM115  # open while followed; closed on rotation
        except OSError as exc:
            self.say(f"{path}: cannot open: {exc.strerror or exc}")
            self._finished.add(key)
            return
        head = fh.read(8)
        fh.seek(0)
        if head and compression_of(head):
            fh.close()
            self._finished.add(key)
            self._read_archive(path)
            return
        self._by_name[path] = _Followed(path, key, fh)
        self.analysis.open(path)

    def _read_archive(self, path: str) -> None:
        """A compressed file is a finished rotation: scan it once, whole."""
        try:
            (scan,) = self.analysis.diagnoser.scan(Source(path, Path(path), None))
        except InputError as exc:
            self.say(str(exc))
            return
        self.analysis.add_finished(scan)

    def _read(self, f: _Followed) -> int:
        try:
            size = os.fstat(f.fh.fileno()).st_size
        except OSError:
            return 0
        if size < f.offset or (f.head and size >= len(f.head) and os.pread(f.fh.fileno(), len(f.head), 0) != f.head):
            self.say(f"{f.name}: truncated; reading it again from the start")
            self.analysis.open(f.name)
            f.fh.seek(0)
            f.offset = 0
            f.head = b""
        total = 0
        while total < READ_LIMIT:
            data = f.fh.read(min(1 << 20, READ_LIMIT - total))
            if not data:
                break
            self.analysis.feed(f.name, data)
            if f.name in self.analysis.skipped:
                self.say(f"{self.analysis.skipped[f.name]}; not following it")
                self._drop(f)
                return total
            if len(f.head) < HEAD:
                f.head = (f.head + data)[:HEAD]
            f.offset += len(data)
            total += len(data)
            if self.on_data is not None:
                self.on_data(data)
        return total

    def _rotate(self, f: _Followed, moved_to: str | None) -> None:
        """The name now belongs to another file (or none): finish the old one where it went."""
        while True:  # what was written before the rotation
            data = f.fh.read(1 << 20)
            if not data:
                break
            self.analysis.feed(f.name, data)
        f.fh.close()
        del self._by_name[f.name]
        self._finished.add(f.key)
        new_name = moved_to or f"{f.name} (rotated)"
        self.say(f"{f.name}: rotated; its earlier content is now {new_name}")
        self.analysis.close(f.name, rename=new_name)

    def _drop(self, f: _Followed) -> None:
        f.fh.close()
        self._by_name.pop(f.name, None)
        self._finished.add(f.key)

    def close(self) -> None:
        for f in self._by_name.values():
            f.fh.close()
        self._by_name.clear()

    @property
    def followed(self) -> list[str]:
        return list(self._by_name)
