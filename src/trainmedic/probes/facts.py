"""Probe results as `Fact`s for the reasoner, and the doctor JSON that carries them between hosts.

`diagnose --probe` calls collect_facts on the failing host; `diagnose --facts doctor.json` reads
what `doctor --json` wrote elsewhere; `diagnose --dmesg FILE` reads a saved kernel log.
Fact ids: shm.size_bytes, shm.free_bytes, shm.demand_bytes, nofile.soft, nofile.hard,
memory.cgroup_limit_bytes, memory.cgroup_peak_bytes, memory.oom_kill_count, kernel.oom_kill
(value "pid N (name)", one per record), kernel.segfault, container.kind, torch.sharing_strategy,
torch.start_method. Values are strings; byte counts are plain integers.
"""

from __future__ import annotations

import gzip
import json
import re
import socket
from collections.abc import Iterable, Iterator, Mapping, Sequence
from datetime import datetime, timezone
from pathlib import Path
from typing import Any

from trainmedic.model import Fact
from trainmedic.probes.base import Check, DataValue, ProbeContext, parse_size
from trainmedic.probes.kernel_log import KernelRecord, parse_kernel_log
from trainmedic.probes.runner import run_probes

# ------------------------------------------------------------------ doctor JSON


def doctor_json(checks: Sequence[Check], host: str | None = None, time: float | None = None) -> dict[str, Any]:
    """The `doctor --json` object: {"checks": [...], "host", "time"} (ISO 8601, UTC)."""
    when = datetime.fromtimestamp(time, timezone.utc) if time is not None else datetime.now(timezone.utc)
    return {
        "checks": [c.to_json() for c in checks],
        "host": host if host is not None else socket.gethostname(),
        "time": when.isoformat(timespec="seconds"),
    }


def save_doctor_json(path: str | Path, checks: Sequence[Check], host: str | None = None) -> None:
    Path(path).write_text(json.dumps(doctor_json(checks, host), indent=2) + "\n", encoding="utf-8")


def load_doctor_json(path: str | Path) -> tuple[list[Check], str, str]:
    """(checks, host, time) from a doctor JSON file; ValueError says what is wrong with it."""
    try:
        doc = json.loads(Path(path).read_text(encoding="utf-8"))
    except json.JSONDecodeError as exc:
        raise ValueError(f"{path}: not JSON ({exc.msg} at line {exc.lineno})") from None
    if not isinstance(doc, dict) or not isinstance(doc.get("checks"), list):
        raise ValueError(f'{path}: expected the output of `trainmedic doctor --json` ({{"checks": [...]}})')
    checks = []
    for i, item in enumerate(doc["checks"]):
        if not isinstance(item, dict) or not isinstance(item.get("id"), str):
            raise ValueError(f"{path}: checks[{i}] has no id")
        status = item.get("status")
        if status not in ("ok", "warn", "fail", "unknown"):
            raise ValueError(f"{path}: checks[{i}] ({item['id']}) has status {status!r}")
        data = item.get("data")
        checks.append(
            Check(
                id=item["id"],
                status=status,
                value=str(item.get("value", "")),
                threshold=str(item.get("threshold", "")),
                why=str(item.get("why", "")),
                fix=str(item.get("fix", "")),
                data=_freeze(data) if isinstance(data, dict) else {},
            )
        )
    return checks, str(doc.get("host", "")), str(doc.get("time", ""))


def _freeze(data: Mapping[str, Any]) -> dict[str, DataValue]:
    def conv(v: Any) -> DataValue:
        if isinstance(v, list | tuple):
            return tuple(conv(x) for x in v)
        if isinstance(v, int | float | str | bool) or v is None:
            return v
        return str(v)

    return {str(k): conv(v) for k, v in data.items()}


# ------------------------------------------------------------------ checks -> facts


def _num(v: DataValue) -> str | None:
    if isinstance(v, bool) or v is None:
        return None
    if isinstance(v, int | float):
        return str(int(v))
    return None


_SIZE = r"(\d+(?:\.\d+)? [KMGT]?i?B)"
_PID_NAME = re.compile(r"pid (\d+) \(([^)]*)\)(?: in (\S+?)(?=[,\]]))?")


def _data_from_value(check: Check) -> dict[str, DataValue]:
    """Recover the numbers from a check's `value` text: doctor --json carries no `data`.

    Sizes print with one decimal, so byte counts read back this way are rounded to ~0.1 unit.
    """
    v = check.value
    out: dict[str, DataValue] = {}

    def size(pattern: str) -> int | None:
        m = re.search(pattern, v)
        return parse_size(m.group(1)) if m else None

    if check.id == "shm":
        out["size_bytes"] = size(r"\bsize " + _SIZE)
        out["free_bytes"] = size(r"\bfree " + _SIZE)
        out["demand_bytes"] = size(r"\bdemand " + _SIZE)
    elif check.id == "nofile":
        for key in ("soft", "hard"):
            m = re.search(rf"\b{key} (\d+|unlimited)", v)
            if m:
                out[key] = -1 if m.group(1) == "unlimited" else int(m.group(1))
    elif check.id == "memory":
        out["cgroup_limit_bytes"] = size(r"\blimit " + _SIZE)
        out["cgroup_peak_bytes"] = size(r"\bpeak " + _SIZE)
        m = re.search(r"\boom_kill (\d+)", v)
        out["oom_kill_count"] = int(m.group(1)) if m else None
    elif check.id == "kernel-log":
        oom_part, _, crash_part = v.partition(" segfault")
        if "OOM kill" in oom_part:
            oom_part = oom_part[oom_part.index("OOM kill") :]
            out["oom_kills"] = tuple((int(p), n) for p, n, _ in _PID_NAME.findall(oom_part))
        if crash_part:
            found = _PID_NAME.findall(crash_part)
            out["segfaults"] = tuple((int(p), n, None, lib or None) for p, n, lib in found)
    elif check.id == "container":
        out["kind"] = v.split()[0] if v.split() else None
    elif check.id == "torch":
        for key, label in (("start_method", "start method"), ("sharing_strategy", "sharing strategy")):
            m = re.search(rf"\b{label} ([A-Za-z_]+)", v)
            out[key] = m.group(1) if m else None
    return out


def facts_from_checks(checks: Iterable[Check], source: str = "probe") -> list[Fact]:
    """Turn checks into facts; `unknown` checks say nothing and give none."""
    facts: list[Fact] = []

    def add(fact_id: str, value: str | None, where: str) -> None:
        if value is not None and value != "":
            facts.append(Fact(id=fact_id, value=value, source=where))

    for check in checks:
        if check.status == "unknown":
            continue
        data: Mapping[str, DataValue] = check.data or _data_from_value(check)
        where = f"{source}:{check.id}"
        if check.id == "shm":
            add("shm.size_bytes", _num(data.get("size_bytes")), where)
            add("shm.free_bytes", _num(data.get("free_bytes")), where)
            add("shm.demand_bytes", _num(data.get("demand_bytes")), where)
        elif check.id == "nofile":
            for key in ("soft", "hard"):
                n = data.get(key)
                add(f"nofile.{key}", "unlimited" if n == -1 else _num(n), where)
        elif check.id == "memory":
            add("memory.cgroup_limit_bytes", _num(data.get("cgroup_limit_bytes")), where)
            add("memory.cgroup_peak_bytes", _num(data.get("cgroup_peak_bytes")), where)
            add("memory.oom_kill_count", _num(data.get("oom_kill_count")), where)
        elif check.id == "kernel-log":
            for item in _tuples(data.get("oom_kills")):
                add("kernel.oom_kill", f"pid {item[0]} ({item[1]})", where)
            for item in _tuples(data.get("segfaults")):
                lib = item[3] if len(item) > 3 and item[3] else None
                add("kernel.segfault", f"pid {item[0]} ({item[1]})" + (f" in {lib}" if lib else ""), where)
        elif check.id == "container":
            kind = data.get("kind")
            add("container.kind", kind if isinstance(kind, str) else None, where)
        elif check.id == "torch":
            for key in ("sharing_strategy", "start_method"):
                val = data.get(key)
                add(f"torch.{key}", val if isinstance(val, str) else None, where)
    return facts


def _tuples(value: DataValue) -> Iterator[tuple[DataValue, ...]]:
    if isinstance(value, tuple):
        for item in value:
            if isinstance(item, tuple) and len(item) >= 2:
                yield item


def collect_facts(ctx: ProbeContext | None = None, checks: Sequence[Check] | None = None) -> list[Fact]:
    """Probe this machine (or use `checks` already run) and return the facts."""
    if checks is None:
        checks = run_probes(ctx or ProbeContext())
    return facts_from_checks(checks, source="probe")


def facts_from_doctor_json(path: str | Path) -> list[Fact]:
    """Facts from a `doctor --json` file written on the failing host."""
    checks, host, time = load_doctor_json(path)
    label = f"{path}" + (f" ({host}, {time})" if host or time else "")
    return facts_from_checks(checks, source=label)


# ------------------------------------------------------------------ saved kernel logs


def _lines(path: Path) -> Iterator[str]:
    opener = gzip.open if path.suffix == ".gz" else open
    with opener(path, "rt", encoding="utf-8", errors="replace") as f:
        yield from f


def kernel_records_from_file(path: str | Path, year: int | None = None) -> list[KernelRecord]:
    """OOM-kill and segfault records from a saved dmesg / journalctl -k / kern.log file (.gz too).

    dmesg uptimes stay uptimes: the file's boot time is unknown here. Raises OSError if unreadable.
    """
    return parse_kernel_log(_lines(Path(path)), year=year)


def kernel_facts(records: Iterable[KernelRecord], source: str) -> list[Fact]:
    """kernel.oom_kill / kernel.segfault facts for records read from `source` (a path)."""
    facts = []
    for r in records:
        where = f"{source}:{r.line}"
        if r.kind == "oom-kill":
            facts.append(Fact(id="kernel.oom_kill", value=f"pid {r.pid} ({r.name})", source=where))
        else:
            lib = f" in {r.library}" if r.library else ""
            facts.append(Fact(id="kernel.segfault", value=f"pid {r.pid} ({r.name}){lib}", source=where))
    return facts
