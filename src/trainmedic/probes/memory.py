"""The memory limit this process lives under (cgroup v1 or v2) and the host's free RAM.

Every DataLoader worker counts against the same cgroup limit: when the group hits it, the kernel
kills a process inside it (often a worker: "DataLoader worker ... killed by signal: Killed"),
even when the host has RAM to spare. memory.events / memory.oom_control count those kills.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import dataclass

from trainmedic.probes import cgroup
from trainmedic.probes.base import (
    Check,
    DataValue,
    ProbeContext,
    ProbeFact,
    Status,
    format_size,
    size_after,
    stated,
    try_int,
    try_read,
    unknown,
    whole,
)

UNLIMITED_FROM = 1 << 62  # cgroup v1 writes PAGE_COUNTER_MAX * PAGE_SIZE (~2**63) for "no limit"
FAIL_USAGE = 0.95
WARN_USAGE = 0.8
WARN_PEAK = 0.9
WARN_HOST_AVAILABLE = 0.1


@dataclass(frozen=True)
class CgroupMemory:
    version: int
    path: str
    limit: int | None
    limit_at: str
    current: int | None
    peak: int | None
    oom_kills: int | None


def _limit_value(text: str | None) -> int | None:
    if text is None:
        return None
    text = text.strip()
    if not text or text == "max":
        return None
    try:
        n = int(text)
    except ValueError:
        return None
    return None if n >= UNLIMITED_FROM else n


def _keyed(text: str | None, key: str) -> int | None:
    for line in (text or "").splitlines():
        parts = line.split()
        if len(parts) == 2 and parts[0] == key:
            try:
                return int(parts[1])
            except ValueError:
                return None
    return None


def read_cgroup_memory(ctx: ProbeContext) -> CgroupMemory | None:
    """Limit, use, peak and OOM-kill count of this process's memory cgroup; None without one."""
    found = cgroup.find(ctx, "memory")
    if found is None:
        return None
    path = found.path
    limit: int | None = None
    limit_at = ""
    if found.version == 2:
        for folder in found.ancestors():  # the tightest limit up the tree is the one that bites
            value = _limit_value(try_read(folder / "memory.max"))
            if value is not None and (limit is None or value < limit):
                limit, limit_at = value, str(folder)
        return CgroupMemory(
            version=2,
            path=str(path),
            limit=limit,
            limit_at=limit_at,
            current=try_int(path / "memory.current"),
            peak=try_int(path / "memory.peak"),
            oom_kills=_keyed(try_read(path / "memory.events"), "oom_kill"),
        )
    stat = try_read(path / "memory.stat")
    hierarchical = _limit_value(str(_keyed(stat, "hierarchical_memory_limit") or ""))
    own = _limit_value(try_read(path / "memory.limit_in_bytes"))
    candidates = [v for v in (own, hierarchical) if v is not None]
    if candidates:
        limit = min(candidates)
        limit_at = str(path)
    return CgroupMemory(
        version=1,
        path=str(path),
        limit=limit,
        limit_at=limit_at,
        current=try_int(path / "memory.usage_in_bytes"),
        peak=try_int(path / "memory.max_usage_in_bytes"),
        oom_kills=_keyed(try_read(path / "memory.oom_control"), "oom_kill"),
    )


def read_meminfo(ctx: ProbeContext) -> dict[str, int]:
    """/proc/meminfo in bytes (MemTotal, MemAvailable, ...); empty when unreadable."""
    out: dict[str, int] = {}
    for line in (try_read(ctx.proc("meminfo")) or "").splitlines():
        key, _, rest = line.partition(":")
        parts = rest.split()
        if parts and parts[0].isdigit():
            out[key] = int(parts[0]) * (1024 if len(parts) > 1 and parts[1] == "kB" else 1)
    return out


class MemoryProbe:
    id = "memory"
    time_limit = 5.0

    @staticmethod
    def facts(data: Mapping[str, DataValue]) -> tuple[ProbeFact, ...]:
        """The cgroup's limit and peak in bytes and its OOM-kill count: what a bare kill is weighed by."""
        keys = ("cgroup_limit_bytes", "cgroup_peak_bytes", "oom_kill_count")
        return stated(*((f"memory.{key}", whole(data.get(key))) for key in keys))

    @staticmethod
    def data_from_value(value: str) -> dict[str, DataValue]:
        """`limit 2 GiB, ..., peak 1.9 GiB (cgroup v2); oom_kill 3`: sizes rounded to ~0.1 unit."""
        kills = re.search(r"\boom_kill (\d{1,18}(?!\d))", value)
        return {
            "cgroup_limit_bytes": size_after("limit", value),
            "cgroup_peak_bytes": size_after("peak", value),
            "oom_kill_count": int(kills.group(1)) if kills else None,
        }

    def run(self, ctx: ProbeContext) -> Check:
        cg = read_cgroup_memory(ctx)
        info = read_meminfo(ctx)
        total, available = info.get("MemTotal"), info.get("MemAvailable")
        if cg is None and total is None:
            return unknown(self.id, f"no memory cgroup and {ctx.proc('meminfo')} is unreadable")

        parts: list[str] = []
        problems: list[str] = []
        failing: list[str] = []
        if cg is None:
            parts.append("no memory cgroup")
        else:
            if cg.limit is None:
                parts.append(f"no cgroup limit (cgroup v{cg.version})")
            else:
                text = f"limit {format_size(cg.limit)}"
                if cg.current is not None:
                    text += f", current {format_size(cg.current)}"
                if cg.peak is not None:
                    text += f", peak {format_size(cg.peak)}"
                parts.append(text + f" (cgroup v{cg.version})")
                if cg.current is not None and cg.current >= FAIL_USAGE * cg.limit:
                    failing.append(f"the cgroup uses {cg.current / cg.limit:.0%} of its limit now")
                elif cg.current is not None and cg.current >= WARN_USAGE * cg.limit:
                    problems.append(f"the cgroup uses {cg.current / cg.limit:.0%} of its limit")
                if cg.peak is not None and cg.peak >= WARN_PEAK * cg.limit:
                    problems.append(f"its peak reached {cg.peak / cg.limit:.0%} of the limit")
            if cg.oom_kills is not None:
                parts.append(f"oom_kill {cg.oom_kills}")
                if cg.oom_kills > 0:
                    problems.append(f"the kernel OOM-killed {cg.oom_kills} process(es) in this cgroup already")
        if total is not None and available is not None:
            parts.append(f"host {format_size(available)} available of {format_size(total)}")
            if available < WARN_HOST_AVAILABLE * total:
                problems.append(f"the host has only {available / total:.0%} of its RAM available")

        data = {
            "cgroup_version": cg.version if cg else None,
            "cgroup_path": cg.path if cg else None,
            "cgroup_limit_bytes": cg.limit if cg else None,
            "cgroup_current_bytes": cg.current if cg else None,
            "cgroup_peak_bytes": cg.peak if cg else None,
            "oom_kill_count": cg.oom_kills if cg else None,
            "host_total_bytes": total,
            "host_available_bytes": available,
        }
        threshold = (
            f"cgroup use < {int(WARN_USAGE * 100)}% of limit (fail >= {int(FAIL_USAGE * 100)}%), "
            f"no OOM kills, host available >= {int(WARN_HOST_AVAILABLE * 100)}%"
        )
        why = (
            "every DataLoader worker counts against the same cgroup limit; at the limit the kernel kills "
            "a process in the group (a worker: 'killed by signal: Killed') even if the host has RAM free"
        )
        fix = (
            "raise the limit (docker --memory, the pod's resources.limits.memory) or lower num_workers, "
            "prefetch_factor and per-worker copies (load lazily, use numpy arrays instead of Python lists)"
        )
        status: Status = "fail" if failing else "warn" if problems else "ok"
        if failing or problems:
            why = "; ".join(failing + problems) + "; " + why
        return Check(
            id=self.id,
            status=status,
            value="; ".join(parts),
            threshold=threshold,
            why=why,
            fix=fix if status != "ok" else "",
            data=data,
            facts=self.facts(data),
        )
