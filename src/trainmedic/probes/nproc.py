"""RLIMIT_NPROC and the cgroup's pids.max against the threads a DataLoader run will start.

Linux counts every thread as a task. The user's RLIMIT_NPROC and a container's or job's pids.max cap
them, and a run multiplies them: each DataLoader worker is a process that loads OpenMP, MKL and
OpenBLAS again, each sizing its pool to the machine's cores. Past the limit pthread_create and fork
fail with EAGAIN ("can't start new thread", "libgomp: Thread creation failed").
"""

from __future__ import annotations

import re
import resource
from collections.abc import Mapping
from pathlib import Path

from trainmedic.probes import cgroup
from trainmedic.probes.base import (
    UNLIMITED,
    Check,
    DataValue,
    ProbeContext,
    ProbeFact,
    format_limit,
    read_rlimit,
    stated,
    try_int,
    try_read,
    whole,
)
from trainmedic.probes.cpu import affinity

BUSY_FRACTION = 0.8
OWN_THREADS = 4  # a process's threads besides its pools: main, queue feeders, pin memory, watchdogs


def pids(ctx: ProbeContext) -> tuple[int | None, int | None]:
    """(the tightest pids.max over the group and its ancestors or None for none, pids.current of the group)."""
    found = cgroup.find(ctx, "pids")
    if found is None:
        return None, None
    tightest: int | None = None
    for folder in found.ancestors():
        limit = try_int(folder / "pids.max")  # "max" means none
        if limit is not None:
            tightest = limit if tightest is None else min(tightest, limit)
    return tightest, try_int(found.path / "pids.current")


def user_tasks(ctx: ProbeContext, uid: int) -> int | None:
    """Threads of every process of the real user `uid`: what RLIMIT_NPROC counts."""
    total = 0
    try:
        entries = [e for e in Path(ctx.proc_root).iterdir() if e.name.isdigit()]
    except OSError:
        return None
    for entry in entries:
        status = try_read(entry / "status")  # a process that ended meanwhile reads as None
        if status is None or _uid(status) != uid:
            continue
        for line in status.splitlines():
            if line.startswith("Threads:"):
                count = line.split()[1:2]
                total += int(count[0]) if count and count[0].isdigit() else 0
                break
    return total or None


def _uid(status: str) -> int | None:
    for line in status.splitlines():
        if line.startswith("Uid:"):
            fields = line.split()
            return int(fields[1]) if len(fields) > 1 and fields[1].isdigit() else None
    return None


class NprocProbe:
    id = "nproc"
    time_limit = 5.0

    @staticmethod
    def facts(data: Mapping[str, DataValue]) -> tuple[ProbeFact, ...]:
        """The tightest task limit on this process (RLIMIT_NPROC for a non-root user, the cgroup's pids.max),
        or `unlimited`: what thread-creation-failed is judged by."""
        limits = [n for n in (whole(data.get("soft")), whole(data.get("pids_max"))) if n is not None]
        if not limits:
            return ()
        finite = [n for n in limits if n >= 0]
        return stated(("nproc.limit", min(finite) if finite else UNLIMITED))

    @staticmethod
    def data_from_value(value: str) -> dict[str, DataValue]:
        """`ulimit -u 4096, ..., pids.max 1024` back into numbers (-1 for unlimited or not enforced)."""
        out: dict[str, DataValue] = {}
        if m := re.search(rf"\bulimit -u (\d+|{UNLIMITED}|not enforced)", value):
            out["soft"] = int(m.group(1)) if m.group(1).isdigit() else -1
        if m := re.search(r"\bpids\.max (\d+)", value):
            out["pids_max"] = int(m.group(1))
        return out

    def run(self, ctx: ProbeContext) -> Check:
        limits = read_rlimit(ctx, "Max processes", resource.RLIMIT_NPROC)
        soft = None if limits is None else limits[0]
        pids_max, current = pids(ctx)
        uid = _uid(try_read(ctx.proc("self/status")) or "")
        root = uid == 0
        if root and soft is not None and soft >= 0:
            soft = -1  # the kernel does not hold root (CAP_SYS_RESOURCE) to RLIMIT_NPROC
        mine = user_tasks(ctx, uid) if uid is not None and soft is not None and soft >= 0 else None
        cores = affinity(ctx) or ctx.cpu_count or 1
        parts = ["ulimit -u not enforced for root" if root else f"ulimit -u {format_limit(soft)}"]
        if mine is not None:
            parts.append(f"user's threads {mine}")
        if pids_max is not None:
            parts.append(f"pids.max {pids_max}")
        if current is not None:
            parts.append(f"in use {current}")
        # what each limit leaves: RLIMIT_NPROC counts the user's tasks, pids.max the group's
        room = [n - (used or 0) for n, used in ((soft, mine), (pids_max, current)) if n is not None and n >= 0]
        # each worker and the main process: a pool per core and a few threads of its own
        demand = None if ctx.workers is None else (ctx.workers + 1) * (cores + OWN_THREADS)
        if demand is not None:
            parts.append(f"{ctx.workers} workers start about {demand} threads")
        data: dict[str, DataValue] = {"soft": soft, "user_threads": mine, "pids_max": pids_max, "current": current,
                                      "cores": cores, "demand": demand}
        facts = self.facts(data)
        fix = (
            "bound the pools (`export OMP_NUM_THREADS=4 MKL_NUM_THREADS=4 OPENBLAS_NUM_THREADS=4`) or use fewer "
            "workers; raise the limit where you own it (`ulimit -u`, docker `--pids-limit`, the pod's PID limit)"
        )
        value = ", ".join(parts)
        threshold = "threads the run starts < the tightest task limit"
        if not room:
            return Check(id=self.id, status="ok", value=value, threshold=threshold,
                         why="no task limit applies to this process", fix="", data=data, facts=facts)
        free = max(0, min(room))
        if demand is not None and demand > free:
            return Check(
                id=self.id, status="warn", value=value, threshold=threshold,
                why=(f"{ctx.workers} workers and the main process, each with a pool per core ({cores}), start "
                     f"about {demand} threads; the limit leaves {free}: thread creation fails with EAGAIN"),
                fix=fix, data=data, facts=facts,
            )
        busy = [(used, n, name) for n, used, name in ((soft, mine, "ulimit -u"), (pids_max, current, "pids.max"))
                if n is not None and n > 0 and used is not None and used > BUSY_FRACTION * n]
        if busy:
            used, n, name = busy[0]
            return Check(
                id=self.id, status="warn", value=value, threshold=f"in use < {int(BUSY_FRACTION * 100)}% of the limit",
                why=f"{used} of the {n} tasks {name} allows are already in use", fix=fix, data=data, facts=facts,
            )
        return Check(id=self.id, status="ok", value=value, threshold=threshold,
                     why="every thread counts against RLIMIT_NPROC and pids.max", fix="", data=data, facts=facts)
