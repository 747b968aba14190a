"""Probe results as `Fact`s for the reasoner, and the doctor JSON that carries them between hosts.

`diagnose --probe` calls collect_facts on the failing host; `diagnose --facts doctor.json` reads
what `doctor --json` wrote elsewhere; `diagnose --dmesg FILE` reads a saved kernel log.
Each probe states its own facts (see each probe's `facts`); this module only carries them.
Fact ids: shm.size_bytes, shm.free_bytes, shm.demand_bytes, nofile.soft, nofile.hard, nproc.limit (the tightest
task limit, or "unlimited"),
memory.cgroup_limit_bytes, memory.cgroup_peak_bytes, memory.oom_kill_count, kernel.oom_kill
(value "pid N (name)", one per record), kernel.segfault, container.kind, torch.sharing_strategy,
torch.start_method. Values are strings; byte counts are plain integers.
"""

from __future__ import annotations

import json
import socket
from collections.abc import Iterable, Iterator, Mapping, Sequence
from dataclasses import replace
from datetime import datetime, timezone
from pathlib import Path
from typing import Any

from trainmedic.catalog import Library
from trainmedic.model import Fact
from trainmedic.probes.base import Check, DataValue, ProbeContext
from trainmedic.probes.kernel_log import KernelRecord, parse_kernel_log
from trainmedic.probes.runner import PROBES, run_probes

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
        doc = json.loads(Path(path).read_text(encoding="utf-8", errors="replace"))
    except json.JSONDecodeError as exc:
        raise ValueError(f"{path}: not JSON ({exc.msg} at line {exc.lineno})") from None
    except RecursionError:
        raise ValueError(f"{path}: nested too deeply to be `trainmedic doctor --json` output") from None
    except OSError as exc:
        raise ValueError(f"{path}: cannot read: {exc.strerror or exc}") from None
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
        check = Check(
            id=item["id"],
            status=status,
            value=str(item.get("value", "")),
            threshold=str(item.get("threshold", "")),
            why=str(item.get("why", "")),
            fix=str(item.get("fix", "")),
            data=_freeze(data) if isinstance(data, dict) else {},
        )
        checks.append(restate(check))
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


def restate(check: Check) -> Check:
    """A check read from doctor JSON, with the facts its probe states from its `data`.

    Files written before doctor JSON carried `data` (or with an empty one) have only the value
    text: the probe reads its own text back, to the precision it printed (sizes to ~0.1 unit).
    """
    probe = PROBES.get(check.id)
    if probe is None:
        return check
    data = check.data or probe.data_from_value(check.value)
    return replace(check, facts=probe.facts(data))


def facts_from_checks(checks: Iterable[Check], source: str = "probe") -> list[Fact]:
    """The facts the checks state; `unknown` checks say nothing and give none."""
    return [f.fact(f"{source}:{c.id}") for c in checks if c.status != "unknown" for f in c.facts]


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


MAX_KERNEL_LINE = 1 << 16  # kernel lines are short; the rest of a longer one is skipped, never held


def _lines(path: Path) -> Iterator[str]:
    """The file's lines, read as logs are (any compression, UTF-16, binary refused), each bounded:
    memory stays flat whatever the file holds (`--dmesg /dev/zero`)."""
    from trainmedic.logs.blocks import iter_blocks
    from trainmedic.logs.sources import InputError, Source, looks_binary

    try:
        stream = Source(str(path), path, None).open()
    except InputError as exc:
        raise OSError(str(exc)) from None  # unreadable: the OSError this module's callers expect
    with stream:
        try:
            first = stream.read(1 << 16)
            if looks_binary(first):
                raise ValueError(f"{path}: looks like a binary file, not a kernel log")
            # The log reader's own splitter bounds each line (the rest of a longer one is skipped).
            for block in iter_blocks(stream, MAX_KERNEL_LINE, MAX_KERNEL_LINE, head=first):
                for raw in (block[:-1] if block.endswith(b"\n") else block).split(b"\n"):
                    yield raw.decode("utf-8", errors="replace")
        except InputError as exc:
            raise OSError(str(exc)) from None


def kernel_records_from_file(
    path: str | Path, year: int | None = None, library: Library | None = None
) -> list[KernelRecord]:
    """OOM-kill and segfault records from a saved dmesg / journalctl -k / kern.log file (.gz too).

    dmesg uptimes stay uptimes: the file's boot time is unknown here. `library` recognises the OOM
    records (default: load_library()). Raises OSError if unreadable.
    """
    return parse_kernel_log(_lines(Path(path)), year=year, library=library)


def kernel_facts(records: Iterable[KernelRecord], source: str) -> list[Fact]:
    """kernel.oom_kill / kernel.segfault facts for records read from `source` (a path)."""
    return [r.fact().fact(f"{source}:{r.line}") for r in records]
