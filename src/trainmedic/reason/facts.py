"""Machine facts (from `doctor`, `--probe`, `--dmesg`) confirm or refute causes; they never replace log evidence.

A fact only moves the verdict for the cause it speaks to, and every move is written into the report:
the fact's `effect` says what it did, so a reader can see why the confidence changed.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, replace

from trainmedic.model import Fact, Line

SMALL_SHM = 256 << 20  # a /dev/shm this small is exhausted by a few prefetched batches
LARGE_SHM = 4 << 30
LOW_NOFILE = 4096
LOW_NPROC = 8192  # a few ranks of workers with core-sized pools pass this on a many-core node
HIGH_NOFILE = 65536
_PID = re.compile(r"pid (\d{1,18}(?!\d)) \(([^)]*)\)")


def _int(facts: tuple[Fact, ...], fact_id: str) -> int | None:
    for f in facts:
        if f.id == fact_id:
            try:
                return int(float(f.value))
            except ValueError:
                return None
    return None


def _mib(n: int) -> str:
    return f"{n / (1 << 30):.1f} GiB" if n >= 1 << 30 else f"{n / (1 << 20):.0f} MiB"


def oom_kills(facts: tuple[Fact, ...]) -> dict[int, tuple[Fact, Line]]:
    """pid -> (fact, a Line quoting it) for every kernel OOM-kill record among the facts."""
    out: dict[int, tuple[Fact, Line]] = {}
    for f in facts:
        if f.id != "kernel.oom_kill":
            continue
        m = _PID.search(f.value)
        if not m:
            continue
        path, _, number = f.source.rpartition(":")
        line = Line(path or f.source, int(number) if number.isdigit() else 0,
                    f"kernel OOM killer killed {f.value} (from {f.source})")
        out[int(m.group(1))] = (f, line)
    return out


@dataclass(frozen=True)
class Adjustment:
    confidence: float
    notes: tuple[str, ...]
    used: tuple[Fact, ...]  # the facts that moved it, with their effect filled in


def adjust(cause: str, confidence: float, facts: tuple[Fact, ...]) -> Adjustment:
    notes: list[str] = []
    used: list[Fact] = []

    def use(fact_id: str, effect: str) -> None:
        for f in facts:
            if f.id == fact_id:
                used.append(replace(f, effect=effect))
                return

    if cause.endswith("/shm-exhausted"):
        size = _int(facts, "shm.size_bytes")
        demand = _int(facts, "shm.demand_bytes")
        free = _int(facts, "shm.free_bytes")
        if size is not None and (size <= SMALL_SHM or (demand is not None and free is not None and demand > free)):
            confidence = max(confidence, 0.92)
            why = f"/dev/shm on the failing host is {_mib(size)}"
            if demand is not None:
                why += f" against a demand of {_mib(demand)}"
            notes.append(why + ": confirms shared-memory exhaustion")
            use("shm.size_bytes", "confirms shm-exhausted")
        elif size is not None and size >= LARGE_SHM:
            confidence *= 0.6
            notes.append(f"/dev/shm is {_mib(size)} on the probed host, which argues against exhaustion: check that "
                         "the facts come from the failing host, or a bus error from a truncated memory-mapped file")
            use("shm.size_bytes", "contradicts shm-exhausted")
    elif cause.endswith("/fd-exhaustion"):
        soft = _int(facts, "nofile.soft")
        if soft is not None and soft <= LOW_NOFILE:
            confidence = max(confidence, 0.92)
            notes.append(f"ulimit -n is {soft} on the failing host: confirms descriptor exhaustion")
            use("nofile.soft", "confirms fd-exhaustion")
        elif soft is not None and soft >= HIGH_NOFILE:
            confidence *= 0.7
            notes.append(f"ulimit -n is {soft} on the probed host, which makes descriptor exhaustion less likely "
                         "unless descriptors leak")
            use("nofile.soft", "contradicts fd-exhaustion")
    elif cause.endswith("/thread-creation-failed"):
        limit = _int(facts, "nproc.limit")
        if limit is not None and limit <= LOW_NPROC:
            confidence = max(confidence, 0.9)
            notes.append(f"the failing host allows {limit} tasks (ulimit -u or pids.max): confirms a thread limit")
            use("nproc.limit", "confirms thread-creation-failed")
        elif any(f.id == "nproc.limit" and f.value == "unlimited" for f in facts):
            # a thread's stack can still find no memory: weaker than the descriptor case
            confidence *= 0.8
            notes.append("no task limit applies on the probed host, which leaves memory for the threads' stacks "
                         "(a tight ulimit -v or memory cgroup) as the reason")
            use("nproc.limit", "contradicts a task limit")
    return Adjustment(min(confidence, 0.99), tuple(notes), tuple(used))


def cgroup_oom_count(facts: tuple[Fact, ...]) -> int | None:
    """The OOM kills the job's cgroup counted (memory.events oom_kill, kills by any OOM killer, kernel or
    cgroup); None when it was not probed. Zero says a kill had another sender."""
    return _int(facts, "memory.oom_kill_count")


def merge(facts: tuple[Fact, ...], used: tuple[Fact, ...]) -> tuple[Fact, ...]:
    """All facts, with the effect of those the reasoner used."""
    by_key = {(f.id, f.value, f.source): f for f in used}
    return tuple(by_key.get((f.id, f.value, f.source), f) for f in facts)
