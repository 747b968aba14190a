"""Finding the jobs of a fleet in the logs teams keep, and telling whether a job changed since it was read.

A job is: a Slurm output file (`slurm-<jobid>.out`, one job per file, wherever it sits); a torchrun
`--log-dir` layout (a folder holding `attempt_N/` folders); otherwise each folder that directly holds
log files (`*.log`, `*.out`, `*.err`, `*.txt`, compressed or not). A job's signature is the size and
modification time of each of its files: an unchanged job is not read again.
"""

from __future__ import annotations

import hashlib
import os
import re
from collections.abc import Iterable, Iterator
from dataclasses import dataclass
from pathlib import Path

_LOG = re.compile(r"\.(?:log|out|err|txt)(?:\.(?:gz|xz|zst|bz2))?$")
_SLURM = re.compile(r"^slurm-\d+(?:_\d+)?\.(?:out|err)$")


@dataclass(frozen=True)
class Job:
    id: str  # the job's folder or file, as found
    files: tuple[str, ...]
    signature: str


def _signature(files: Iterable[str]) -> str:
    h = hashlib.sha256()
    for f in files:
        st = Path(f).stat()
        h.update(f"{f}\0{st.st_size}\0{st.st_mtime_ns}\n".encode())
    return h.hexdigest()[:32]


def _job(ident: str, files: list[str]) -> Job:
    files = sorted(files)
    return Job(ident, tuple(files), _signature(files))


def _torchrun_layout(folder: str) -> bool:
    """A torchrun --log-dir layout (<run_id>/attempt_N/<rank>/...) at or below `folder`."""
    return any(d.startswith("attempt_") for _, dirs, _ in os.walk(folder) for d in dirs)


def _logs_below(folder: str) -> list[str]:
    return [str(Path(d) / n) for d, _, ns in os.walk(folder) for n in ns if _LOG.search(n)]


def discover(roots: Iterable[str | Path]) -> Iterator[Job]:
    """Every job under `roots` (folders or files), each once, in a stable order."""
    for given in roots:
        root = Path(given)
        if root.is_file():
            yield _job(str(root), [str(root)])
            continue
        for folder, dirs, names in os.walk(root):
            dirs.sort()
            if any(d.startswith("attempt_") for d in dirs):  # torchrun --log-dir: the folder is the job
                files = _logs_below(folder)
                dirs.clear()
                if files:
                    yield _job(folder, files)
                continue
            logs = sorted(n for n in names if _LOG.search(n))
            for n in logs:
                if _SLURM.match(n):
                    yield _job(str(Path(folder) / n), [str(Path(folder) / n)])
            rest = [str(Path(folder) / n) for n in logs if not _SLURM.match(n)]
            if rest:
                # the launcher's console and its per-rank files (`--log-dir` below it) are one job
                layouts = [d for d in dirs if _torchrun_layout(str(Path(folder) / d))]
                for d in layouts:
                    rest += _logs_below(str(Path(folder) / d))
                dirs[:] = [d for d in dirs if d not in layouts]
                yield _job(folder, rest)
