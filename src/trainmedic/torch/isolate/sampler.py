"""Measuring a run from outside: peak RSS and open descriptors of each process, and its /dev/shm use.

The supervisor samples the run's process tree while it lives (psutil, when installed) and merges in
what the child read about itself just before it ended, so a run shorter than one sample interval is
still measured. Nothing here imports torch.
"""

from __future__ import annotations

import os
import time
from collections.abc import Iterable, Mapping
from pathlib import Path
from typing import Any

from trainmedic.torch.isolate.results import ProcessPeak

SHM_DIR = "/dev/shm"


def own_shm_bytes(pids: Iterable[int]) -> int:
    """/dev/shm bytes these processes hold: files open on a descriptor (file_descriptor sharing keeps
    one per tensor, already unlinked) and files named after them (file_system sharing). Counting only
    our own keeps other jobs' use of /dev/shm out of the number."""
    seen: set[tuple[int, int]] = set()
    total = 0

    def add(path: Path) -> None:
        nonlocal total
        try:
            st = path.stat()
        except OSError:
            return
        key = (st.st_dev, st.st_ino)
        if key not in seen:
            seen.add(key)
            total += st.st_blocks * 512

    for pid in pids:
        try:
            fds = list(Path(f"/proc/{pid}/fd").iterdir())
        except OSError:
            continue
        for fd in fds:
            try:
                target = str(fd.readlink())
            except OSError:
                continue
            if target.startswith(SHM_DIR + "/"):
                add(fd)
        for named in Path(SHM_DIR).glob(f"torch_{pid}_*"):
            add(named)
    return total


def shm_size() -> int | None:
    """The size of /dev/shm as this process sees it."""
    try:
        st = os.statvfs(SHM_DIR)
    except OSError:
        return None
    return st.f_blocks * st.f_frsize


def vm_hwm(pid: int) -> int | None:
    """The kernel's peak RSS for `pid` (VmHWM): exact even between samples. Linux only."""
    try:
        with Path(f"/proc/{pid}/status").open(encoding="utf-8", errors="replace") as f:
            for line in f:
                if line.startswith("VmHWM:"):
                    return int(line.split()[1]) * 1024
    except (OSError, ValueError, IndexError):
        return None
    return None


def role_of(name: str) -> str:
    """A DataLoader worker names itself pt_data_worker; any other descendant is a helper."""
    return "worker" if name.startswith("pt_data_worker") else "helper"


class Sampler:
    """Samples the run's process tree with psutil; without psutil it records only /dev/shm use."""

    def __init__(self, pid: int) -> None:
        self.pid = pid
        self.peaks: dict[int, list[Any]] = {}  # pid -> [role, name, rss, fds]
        self.shm_peak = 0
        try:
            import psutil
        except ImportError:
            self._psutil: Any = None
            return
        self._psutil = psutil
        try:
            self._root: Any = psutil.Process(pid)
        except psutil.Error:
            self._root = None

    def workers(self) -> list[int]:
        """The pids seen so far that are DataLoader workers."""
        return [pid for pid, peak in self.peaks.items() if peak[0] == "worker"]

    def sample(self) -> None:
        psutil = self._psutil
        if psutil is None or self._root is None:
            self.shm_peak = max(self.shm_peak, own_shm_bytes([self.pid]))
            return
        try:
            procs = [self._root, *self._root.children(recursive=True)]
        except psutil.Error:
            return
        self.shm_peak = max(self.shm_peak, own_shm_bytes(p.pid for p in procs))
        for proc in procs:
            try:
                with proc.oneshot():
                    rss = vm_hwm(proc.pid) or int(proc.memory_info().rss)
                    fds = int(proc.num_fds())
                    name = str(proc.name())
            except psutil.Error:
                continue
            self.record(proc.pid, name, rss, fds)

    def record(self, pid: int, name: str, rss: int, fds: int, role: str | None = None) -> None:
        peak = self.peaks.get(pid)
        if peak is None:
            role = role or ("main" if pid == self.pid else role_of(name))
            self.peaks[pid] = [role, name, rss, fds]
            return
        if role:
            peak[0] = role
        elif name != peak[1] and peak[0] != "main":  # a forked worker renames itself after start
            peak[0] = role_of(name)
        peak[1] = name or peak[1]
        peak[2] = max(peak[2], rss)
        peak[3] = max(peak[3], fds)

    def merge(self, event: Mapping[str, Any]) -> None:
        """Add what the child read about itself and its workers just before it ended."""
        items = [("main", event.get("main"))] + [("worker", w) for w in event.get("workers") or []]
        for role, facts in items:
            if isinstance(facts, dict) and isinstance(facts.get("pid"), int):
                rss = facts.get("peak_rss")
                fds = facts.get("fds")
                self.record(
                    int(facts["pid"]),
                    str(facts.get("name") or ""),
                    int(rss) if isinstance(rss, int) else 0,
                    int(fds) if isinstance(fds, int) else 0,
                    role=role,
                )

    def await_exit(self, limit: float = 10.0) -> None:
        """Wait until every process seen is gone: a killed worker with a large heap takes a moment to
        exit, and the caller's next run (or the caller's own exit) should not overlap with it."""
        psutil = self._psutil
        if psutil is None:
            return
        pending = [pid for pid in self.peaks if pid != self.pid]
        deadline = time.monotonic() + limit
        while pending and time.monotonic() < deadline:
            alive = []
            for pid in pending:
                try:
                    if psutil.Process(pid).status() != psutil.STATUS_ZOMBIE:
                        alive.append(pid)
                except psutil.Error:
                    continue
            pending = alive
            if pending:
                time.sleep(0.02)

    def result(self, num_workers: int) -> tuple[ProcessPeak, ...]:
        peaks = [ProcessPeak(pid, str(v[0]), str(v[1]), int(v[2]), int(v[3])) for pid, v in self.peaks.items()]
        if num_workers and not any(p.role == "worker" for p in peaks):
            # torch names its workers pt_data_worker; where it does not, the main's other children are they.
            peaks = [
                ProcessPeak(p.pid, "worker", p.name, p.peak_rss, p.max_fds)
                if p.role == "helper" and "shm_manager" not in p.name
                else p
                for p in peaks
            ]
        return tuple(sorted(peaks, key=lambda p: (p.role != "main", p.role, p.pid)))
