"""OOM-killer and segfault records from the kernel log: the facts that turn a bare "Killed" into an OOM.

The formats come from the kernel itself: mm/oom_kill.c prints
    "<Out of memory|Memory cgroup out of memory>: Killed process 1234 (python) total-vm:..kB,
     anon-rss:..kB, file-rss:..kB, shmem-rss:..kB, UID:0 pgtables:..kB oom_score_adj:0"
after a one-line summary
    "oom-kill:constraint=CONSTRAINT_MEMCG,nodemask=(null),cpuset=..,mems_allowed=0,
     oom_memcg=/..,task_memcg=/..,task=python,pid=1234,uid=0"
and arch/x86/mm/fault.c prints
    "python[1234]: segfault at 0 ip 00007f.. sp 00007ff.. error 4 in libc.so.6[7f..+..]".
Older kernels say "Kill process N (x) score S or sacrifice child" and
"Task in /a killed as a result of limit of /b"; both are understood.
Lines may carry dmesg ("[  12.345678] "), dmesg -T, ISO (journalctl -o short-iso, rsyslog)
or classic syslog ("Oct 17 01:49:00 host kernel: ") prefixes.

Whether a line IS an OOM-killer record is the library's call: the fingerprints of its kill-record
causes (`kill_record: true`), so `doctor` and `diagnose` agree on what counts as an OOM kill.
The regexes here only read the fields (pid, name, rss, memcg) out of a line the library recognised.
"""

from __future__ import annotations

import datetime as dt
import re
import time as _time
from collections.abc import Iterable, Iterator, Mapping
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any, Literal

from trainmedic.catalog import Library, load_library
from trainmedic.probes.base import (
    Check,
    CommandTimeout,
    DataValue,
    ProbeContext,
    ProbeFact,
    format_size,
    run_command,
    stated,
    try_read,
    unknown,
)
from trainmedic.scan.keywords import required_literals
from trainmedic.util import linear

RecordKind = Literal["oom-kill", "segfault", "trap"]
FILE_TAIL_BYTES = 32 * 1024 * 1024  # the live probe reads only the end of a big kern.log
SHOWN = 5


@dataclass(frozen=True)
class KernelRecord:
    """One kernel verdict about a process: OOM-killed, segfaulted or trapped."""

    kind: RecordKind
    pid: int
    name: str
    line: int  # 1-based line number of the record's main line
    text: str  # that line, as read
    time: float | None = None  # epoch seconds when the line (or boot time + uptime) says
    uptime: float | None = None  # seconds since boot, from a "[  12.345678]" prefix
    scope: str = ""  # oom-kill: "cgroup" (memcg limit), "host", "cpuset", "mempolicy"
    constraint: str | None = None  # CONSTRAINT_MEMCG, CONSTRAINT_NONE, ...
    cgroup: str | None = None  # the memcg whose limit was hit (oom_memcg)
    task_cgroup: str | None = None  # the victim's own memcg (task_memcg)
    total_vm_kb: int | None = None
    anon_rss_kb: int | None = None
    file_rss_kb: int | None = None
    shmem_rss_kb: int | None = None
    uid: int | None = None
    library: str | None = None  # segfault/trap: the mapping the faulting ip was in
    address: str | None = None  # segfault: the faulting address
    detail: str | None = None  # trap: "general protection fault", "trap invalid opcode", ...

    def fact(self) -> ProbeFact:
        """kernel.oom_kill or kernel.segfault: `pid N (name)`, with the crashing library if known."""
        if self.kind == "oom-kill":
            return ProbeFact("kernel.oom_kill", _pid_name(self.pid, self.name))
        return ProbeFact("kernel.segfault", _pid_name(self.pid, self.name, self.library))

    def describe(self) -> str:
        """One line for reports: what happened to which pid, when."""
        when = ""
        if self.time is not None:
            when = " at " + dt.datetime.fromtimestamp(self.time).strftime("%Y-%m-%d %H:%M:%S")
        elif self.uptime is not None:
            when = f" at {self.uptime:.1f}s after boot"
        if self.kind == "oom-kill":
            extra = []
            if self.anon_rss_kb is not None:
                extra.append(f"anon-rss {format_size(self.anon_rss_kb * 1024)}")
            if self.cgroup:
                extra.append(f"memcg {self.cgroup}")
            elif self.scope:
                extra.append(self.scope)
            tail = f" [{', '.join(extra)}]" if extra else ""
            return f"OOM kill of pid {self.pid} ({self.name}){tail}{when}"
        where = f" in {self.library}" if self.library else ""
        what = "segfault" if self.kind == "segfault" else (self.detail or "trap")
        return f"{what} of pid {self.pid} ({self.name}){where}{when}"


def _pid_name(pid: DataValue, name: DataValue, library: DataValue = None) -> str:
    return f"pid {pid} ({name})" + (f" in {library}" if library else "")


# ------------------------------------------------------------------ which lines are OOM records


_CRASH_MARKS = ("segfault at", "traps:")  # crashes are no library kill record: the probe reads them itself


@dataclass(frozen=True)
class OomFingerprints:
    """The fingerprints of the library's kill-record causes (kernel/cgroup OOM records), compiled."""

    patterns: tuple[Any, ...]  # RE2 programs (util/linear.py)
    marks: tuple[str, ...] | None  # one is in every OOM record or crash line; None: no cheap filter

    @classmethod
    def of(cls, library: Library) -> OomFingerprints:
        fingerprints = [fp for cause in library.causes() if cause.kill_record for fp in cause.fingerprints]
        patterns = tuple(linear.compile_text(fp.regex, ignore_case=fp.ignore_case) for fp in fingerprints)
        marks = list(_CRASH_MARKS)
        for fp in fingerprints:
            found = required_literals(fp.regex, fp.ignore_case)
            if not found:  # this fingerprint has no literal to filter by: test every line
                return cls(patterns, None)
            marks.extend(found)
        # a mark containing another is redundant: a line with it has the shorter one too
        return cls(patterns, tuple(m for m in dict.fromkeys(marks) if not any(o != m and o in m for o in marks)))

    def candidate(self, line: str) -> bool:
        """Cheap: could this line be an OOM record or a crash? Almost every kernel line is neither."""
        return self.marks is None or any(mark in line for mark in self.marks)

    def recognise(self, line: str) -> bool:
        """Is this line an OOM-killer record? The library's fingerprints decide, as in `diagnose`."""
        return any(p.search(line) for p in self.patterns)


_COMPILED: dict[int, tuple[Library, OomFingerprints]] = {}  # by id: hashing a Library walks all of it


def oom_fingerprints(library: Library) -> OomFingerprints:
    """`library`'s OOM-record fingerprints, compiled on first use and kept for the next log."""
    held = _COMPILED.get(id(library))
    if held is None or held[0] is not library:
        held = _COMPILED[id(library)] = (library, OomFingerprints.of(library))
    return held[1]


# ------------------------------------------------------------------ line prefixes

_MONTH_NAMES = ("Jan", "Feb", "Mar", "Apr", "May", "Jun", "Jul", "Aug", "Sep", "Oct", "Nov", "Dec")
_MONTHS = {m: i for i, m in enumerate(_MONTH_NAMES, 1)}
_PRIORITY = re.compile(r"^<\d+>")
_ISO = re.compile(r"^(\d{4}-\d{2}-\d{2})[T ](\d{2}:\d{2}:\d{2})([.,]\d+)?(Z|[+-]\d{2}:?\d{2})?\s+")
_SYSLOG = re.compile(r"^([A-Z][a-z]{2})\s+(\d{1,2})\s+(\d{2}):(\d{2}):(\d{2})\s+")
_CTIME = re.compile(r"^\[[A-Z][a-z]{2} ([A-Z][a-z]{2})\s+(\d{1,2}) (\d{2}):(\d{2}):(\d{2}) (\d{4})\]\s?")
_HOST_KERNEL = re.compile(r"^\S+\s+kernel:\s?")
_FACILITY = re.compile(r"^(?:kern|user|mail|daemon|auth|syslog|lpr|news)\s*:\s*[a-z]+\s*:\s?")
_UPTIME = re.compile(r"^\[\s*(\d+\.\d+)\]\s?")


def _iso_time(date: str, clock: str, frac: str | None, tz: str | None) -> float | None:
    text = f"{date}T{clock}"
    if frac:
        text += "." + (frac[1:] + "000000")[:6]
    if tz:
        if tz == "Z":
            tz = "+00:00"
        elif ":" not in tz:
            tz = f"{tz[:3]}:{tz[3:]}"
        text += tz
    try:
        return dt.datetime.fromisoformat(text).timestamp()
    except ValueError:
        return None


def _local_time(year: int, month: int, day: int, hms: tuple[int, int, int]) -> float | None:
    try:
        return dt.datetime(year, month, day, *hms).timestamp()
    except ValueError:
        return None


def _split(line: str, year: int, now: float | None) -> tuple[float | None, float | None, str]:
    """(time, uptime, message) of one kernel log line in any of the supported formats."""
    rest = _PRIORITY.sub("", line.rstrip("\r\n"), count=1)
    when: float | None = None
    stamped = False
    if m := _ISO.match(rest):
        when, stamped = _iso_time(m.group(1), m.group(2), m.group(3), m.group(4)), True
        rest = rest[m.end() :]
    elif (m := _SYSLOG.match(rest)) and m.group(1) in _MONTHS:
        month, day = _MONTHS[m.group(1)], int(m.group(2))
        h, mi, s = int(m.group(3)), int(m.group(4)), int(m.group(5))
        when, stamped = _local_time(year, month, day, (h, mi, s)), True
        if when is not None and now is not None and when > now + 86400:
            when = _local_time(year - 1, month, day, (h, mi, s))  # syslog has no year: last year's line
        rest = rest[m.end() :]
    elif (m := _CTIME.match(rest)) and m.group(1) in _MONTHS:
        when = _local_time(
            int(m.group(6)),
            _MONTHS[m.group(1)],
            int(m.group(2)),
            (int(m.group(3)), int(m.group(4)), int(m.group(5))),
        )
        rest = rest[m.end() :]
    if stamped and (m := _HOST_KERNEL.match(rest)):
        rest = rest[m.end() :]
    if m := _FACILITY.match(rest):
        rest = rest[m.end() :]
    uptime: float | None = None
    if m := _UPTIME.match(rest):
        uptime = float(m.group(1))
        rest = rest[m.end() :]
        if m := _HOST_KERNEL.match(rest):  # journalctl -o short-monotonic
            rest = rest[m.end() :]
    return when, uptime, rest


# ------------------------------------------------------------------ messages

_KILLED = re.compile(
    r"(?:(?P<scope>(?:Memory cgroup out of memory|Out of memory)[^:]*): )?"
    r"Killed process (?P<pid>\d+) \((?P<name>.*?)\)(?=\s+total-vm:|,|\s*$)"
)
_KILL_OLD = re.compile(
    r"(?P<scope>Memory cgroup out of memory|Out of memory)[^:]*: "
    r"Kill process (?P<pid>\d+) \((?P<name>.*?)\) score"
)
_SUMMARY = re.compile(r"oom-kill:constraint=(?P<constraint>[A-Z_]+)")
_SUMMARY_TASK = re.compile(r",task=(?P<name>.*?),pid=\s*(?P<pid>\d+),uid=\s*(?P<uid>\d+)")
_TASK_IN = re.compile(r"Task in (?P<task>\S+) killed as a result of limit of (?P<memcg>\S+)")
_KB = {
    name: re.compile(rf"\b{re.escape(key)}:(\d{{1,18}})kB")
    for name, key in (
        ("total_vm_kb", "total-vm"),
        ("anon_rss_kb", "anon-rss"),
        ("file_rss_kb", "file-rss"),
        ("shmem_rss_kb", "shmem-rss"),
    )
}
_UID = re.compile(r"\bUID:(\d{1,18}(?!\d))")
_SEGV = re.compile(
    r"^(?P<name>.+?)\[(?P<pid>\d+)\]: segfault at (?P<addr>[0-9a-fA-Fx]+) ip (?P<ip>[0-9a-fA-Fx]+) "
    r"sp [0-9a-fA-Fx]+ error [0-9a-fA-F]+(?: in (?P<lib>[^\[\s]+)\[)?"
)
_SEGV_ANYWHERE = re.compile(
    r"(?P<name>[^\s\[\]]+)\[(?P<pid>\d+)\]: segfault at (?P<addr>[0-9a-fA-Fx]+) ip [0-9a-fA-Fx]+ "
    r"sp [0-9a-fA-Fx]+ error [0-9a-fA-F]+(?: in (?P<lib>[^\[\s]+)\[)?"
)
_TRAP = re.compile(
    r"traps: (?P<name>.+?)\[(?P<pid>\d+)\] (?P<what>general protection fault|trap [a-z ]+?|[a-z][a-z ]+?) "
    r"ip:[0-9a-fA-F]+ sp:[0-9a-fA-F]+ error:[0-9a-fA-F]+(?: in (?P<lib>[^\[\s]+)\[)?"
)


def _field(rest: str, key: str) -> str | None:
    m = re.search(rf"[,:]{key}=([^,]*)", rest)
    return m.group(1) if m else None


def _scope(text: str | None, constraint: str | None) -> str:
    if text:
        return "cgroup" if text.startswith("Memory cgroup") else "host"
    return {
        "CONSTRAINT_MEMCG": "cgroup",
        "CONSTRAINT_NONE": "host",
        "CONSTRAINT_CPUSET": "cpuset",
        "CONSTRAINT_MEMORY_POLICY": "mempolicy",
    }.get(constraint or "", "")


@dataclass(frozen=True)
class _Line:
    """One candidate line: where it is, as read, its message without prefixes, and when."""

    number: int
    text: str
    msg: str
    time: float | None
    uptime: float | None


@dataclass
class _Kills:
    """Reads OOM-killer lines into records; a kill spans lines, so it keeps what came before."""

    records: list[KernelRecord]
    open_kills: dict[int, int] = field(default_factory=dict)  # pid -> index of a summary awaiting its kill
    pending_memcg: tuple[str, str] | None = None  # old kernels: "Task in A killed as a result of limit of B"
    pending_scope: str | None = None  # old kernels: "<scope>: Kill process N (x) score S or sacrifice child"

    def read(self, line: _Line) -> bool:
        """Take the fields of a line the library recognised; False when it holds none of them."""
        msg = line.msg
        if m := _SUMMARY.search(msg):
            self._summary(line, m.group("constraint"), msg[m.end() :])
        elif m := _KILLED.search(msg):
            self._killed(line, m)
        elif m := _KILL_OLD.search(msg):
            self.pending_scope = m.group("scope")
        elif m := _TASK_IN.search(msg):
            self.pending_memcg = (m.group("task"), m.group("memcg"))
        else:
            return False
        return True

    def _summary(self, line: _Line, constraint: str, rest: str) -> None:
        task = _SUMMARY_TASK.search(rest)
        if task is None:
            return
        pid = int(task.group("pid"))
        oom_memcg = _field(rest, "oom_memcg")
        self.open_kills[pid] = len(self.records)
        self.records.append(
            KernelRecord(
                kind="oom-kill",
                pid=pid,
                name=task.group("name"),
                line=line.number,
                text=line.text,
                time=line.time,
                uptime=line.uptime,
                scope=_scope(None, constraint),
                constraint=constraint,
                cgroup=oom_memcg if oom_memcg and oom_memcg != "(null)" else None,
                task_cgroup=_field(rest, "task_memcg"),
                uid=int(task.group("uid")),
            )
        )

    def _killed(self, line: _Line, m: re.Match[str]) -> None:
        pid = int(m.group("pid"))
        kb = {k: int(x.group(1)) if (x := rx.search(line.msg)) else None for k, rx in _KB.items()}
        uid_m = _UID.search(line.msg)
        scope_text = m.group("scope") or self.pending_scope
        index = self.open_kills.pop(pid, None)
        if index is not None:  # the summary line came first: complete its record
            base = self.records[index]
            self.records[index] = replace(
                base,
                name=m.group("name") or base.name,
                line=line.number,
                text=line.text,
                time=line.time if line.time is not None else base.time,
                uptime=line.uptime if line.uptime is not None else base.uptime,
                scope=_scope(scope_text, base.constraint) if scope_text else base.scope,
                uid=int(uid_m.group(1)) if uid_m else base.uid,
                total_vm_kb=kb["total_vm_kb"],
                anon_rss_kb=kb["anon_rss_kb"],
                file_rss_kb=kb["file_rss_kb"],
                shmem_rss_kb=kb["shmem_rss_kb"],
            )
        else:
            memcg = self.pending_memcg
            self.records.append(
                KernelRecord(
                    kind="oom-kill",
                    pid=pid,
                    name=m.group("name"),
                    line=line.number,
                    text=line.text,
                    time=line.time,
                    uptime=line.uptime,
                    scope=_scope(scope_text, "CONSTRAINT_MEMCG" if memcg else None),
                    cgroup=memcg[1] if memcg else None,
                    task_cgroup=memcg[0] if memcg else None,
                    uid=int(uid_m.group(1)) if uid_m else None,
                    total_vm_kb=kb["total_vm_kb"],
                    anon_rss_kb=kb["anon_rss_kb"],
                    file_rss_kb=kb["file_rss_kb"],
                    shmem_rss_kb=kb["shmem_rss_kb"],
                )
            )
        self.pending_memcg, self.pending_scope = None, None


def _crash(line: _Line) -> KernelRecord | None:
    """A segfault or trap record, or None."""
    if seg := _SEGV.match(line.msg) or _SEGV_ANYWHERE.search(line.msg):
        return KernelRecord(
            kind="segfault",
            pid=int(seg.group("pid")),
            name=seg.group("name"),
            line=line.number,
            text=line.text,
            time=line.time,
            uptime=line.uptime,
            library=seg.group("lib"),
            address=seg.group("addr"),
        )
    if m := _TRAP.search(line.msg):
        return KernelRecord(
            kind="trap",
            pid=int(m.group("pid")),
            name=m.group("name"),
            line=line.number,
            text=line.text,
            time=line.time,
            uptime=line.uptime,
            library=m.group("lib"),
            detail=m.group("what"),
        )
    return None


def parse_kernel_log(
    lines: Iterable[str],
    *,
    boot_time: float | None = None,
    year: int | None = None,
    now: float | None = None,
    library: Library | None = None,
) -> list[KernelRecord]:
    """OOM-kill, segfault and trap records from kernel log lines, in log order.

    The oom-kill summary line and the "Killed process" line of one kill become one record.
    `boot_time` (epoch seconds) turns dmesg uptimes into times; only pass it for this boot's log.
    `year` completes syslog dates, which have none (default: the year of `now`, and a date
    more than a day after `now` is taken from the year before).
    `library` decides which lines are OOM records (default: load_library()).
    """
    now = now if now is not None else _time.time()
    year = year if year is not None else dt.datetime.fromtimestamp(now).year
    oom = oom_fingerprints(library if library is not None else load_library())
    kills = _Kills([])
    for number, raw in enumerate(lines, 1):
        if not oom.candidate(raw):
            continue
        text = raw.rstrip("\r\n")
        recognised = oom.recognise(text)
        if not recognised and not any(mark in raw for mark in _CRASH_MARKS):
            continue
        when, uptime, msg = _split(raw, year, now)
        if when is None and uptime is not None and boot_time is not None:
            when = boot_time + uptime
        line = _Line(number, text, msg, when, uptime)
        if recognised and kills.read(line):
            continue
        if crash := _crash(line):
            kills.records.append(crash)
    return kills.records


# ------------------------------------------------------------------ sources


@dataclass(frozen=True)
class KernelLog:
    """What the probe read: the source that answered, its records, and why the others did not."""

    source: str | None
    records: tuple[KernelRecord, ...]
    lines: int
    unreadable: tuple[str, ...]


def boot_time(ctx: ProbeContext) -> float | None:
    for line in (try_read(ctx.proc("stat")) or "").splitlines():
        if line.startswith("btime "):
            try:
                return float(line.split()[1])
            except (IndexError, ValueError):
                return None
    return None


def _file_lines(path: Path, tail: int | None) -> Iterator[str]:
    with path.open("rb") as f:
        if tail is not None:
            size = f.seek(0, 2)
            f.seek(max(0, size - tail))
            if size > tail:
                f.readline()  # drop the partial first line
        for raw in f:
            yield raw.decode("utf-8", errors="replace")


_JOURNAL_UNREADABLE = (
    "No journal files were found",
    "No journal files were opened",
    "insufficient permissions",
    "not seeing messages from other users",
)


def _first_line(text: str) -> str:
    return next((line.strip() for line in text.splitlines() if line.strip()), "")


def read_kernel_log(ctx: ProbeContext) -> KernelLog:
    """Try the sources in order (dmesg, journalctl -k, kern.log, messages); the first readable wins."""
    year = dt.datetime.fromtimestamp(ctx.now).year
    btime = boot_time(ctx)
    reasons: list[str] = []
    for source in ctx.kernel_log_sources:
        lines: list[str]
        if source.argv:
            try:
                result = run_command(source.argv, ctx.command_timeout)
            except FileNotFoundError:
                reasons.append(f"{source.name}: {source.argv[0]} is not installed")
                continue
            except CommandTimeout as exc:
                reasons.append(f"{source.name}: {exc}")
                continue
            except OSError as exc:
                reasons.append(f"{source.name}: {exc.strerror or exc}")
                continue
            if result.returncode != 0:
                why = _first_line(result.stderr) or f"exit status {result.returncode}"
                why = why.removeprefix(f"{Path(source.argv[0]).name}: ")
                reasons.append(f"{source.name}: {why}")
                continue
            lines = result.stdout.splitlines()
            hit = next((s for s in _JOURNAL_UNREADABLE if s in result.stdout + result.stderr), None)
            if hit and not any(line.strip() and not line.startswith("-- ") for line in lines):
                reasons.append(f"{source.name}: {hit[0].lower()}{hit[1:]}")  # e.g. no journal files
                continue
            # dmesg's uptimes belong to this boot; journal and file lines carry their own dates
            boot = btime if source.argv[0].endswith("dmesg") else None
            records = parse_kernel_log(lines, boot_time=boot, year=year, now=ctx.now)
            return KernelLog(source.name, tuple(records), len(lines), tuple(reasons))
        path = Path(source.path)
        try:
            count = 0

            def counted(it: Iterator[str]) -> Iterator[str]:
                nonlocal count
                for line in it:
                    count += 1
                    yield line

            records = parse_kernel_log(counted(_file_lines(path, FILE_TAIL_BYTES)), year=year, now=ctx.now)
        except FileNotFoundError:
            reasons.append(f"{source.name}: not found")
            continue
        except OSError as exc:
            reasons.append(f"{source.name}: {exc.strerror or exc}")
            continue
        return KernelLog(source.name, tuple(records), count, tuple(reasons))
    return KernelLog(None, (), 0, tuple(reasons))


def _summary(records: list[KernelRecord], label: str, plural: str) -> str:
    shown = records[-SHOWN:]
    items = ", ".join(
        f"pid {r.pid} ({r.name})" + (f" in {r.library}" if r.kind != "oom-kill" and r.library else "") for r in shown
    )
    more = f", +{len(records) - len(shown)} earlier" if len(records) > len(shown) else ""
    noun = label if len(records) == 1 else plural
    return f"{len(records)} {noun} [{items}{more}]"


_PID_NAME = re.compile(r"pid (\d{1,18}(?!\d)) \(([^)]*)\)(?: in (\S+?)(?=[,\]]))?")


def _items(value: DataValue) -> Iterator[tuple[DataValue, ...]]:
    if isinstance(value, tuple):
        for item in value:
            if isinstance(item, tuple) and len(item) >= 2:
                yield item


class KernelLogProbe:
    id = "kernel-log"
    time_limit = 20.0

    @staticmethod
    def facts(data: Mapping[str, DataValue]) -> tuple[ProbeFact, ...]:
        """One kernel.oom_kill per OOM record and one kernel.segfault per crash, naming pid and process."""
        kills = (("kernel.oom_kill", _pid_name(k[0], k[1])) for k in _items(data.get("oom_kills")))
        crashes = (
            ("kernel.segfault", _pid_name(c[0], c[1], c[3] if len(c) > 3 else None))
            for c in _items(data.get("segfaults"))
        )
        return stated(*kills, *crashes)

    @staticmethod
    def data_from_value(value: str) -> dict[str, DataValue]:
        """The pids and names listed in the value (only the last few of each kind are listed)."""
        out: dict[str, DataValue] = {}
        oom_part, _, crash_part = value.partition(" segfault")
        if "OOM kill" in oom_part:
            oom_part = oom_part[oom_part.index("OOM kill") :]
            out["oom_kills"] = tuple((int(p), n) for p, n, _ in _PID_NAME.findall(oom_part))
        if crash_part:
            found = _PID_NAME.findall(crash_part)
            out["segfaults"] = tuple((int(p), n, None, lib or None) for p, n, lib in found)
        return out

    def run(self, ctx: ProbeContext) -> Check:
        log = read_kernel_log(ctx)
        if log.source is None:
            reason = "; ".join(log.unreadable) or "no kernel log source configured"
            return unknown(
                self.id,
                f"no kernel log readable: {reason}",
                why="without the kernel log a bare 'Killed' cannot be confirmed as an OOM kill",
                fix=(
                    "run as root, or add the user to the adm / systemd-journal group, or save the log "
                    "on the host (`sudo dmesg > dmesg.txt`) and pass it to `trainmedic diagnose --dmesg`"
                ),
            )
        ooms = [r for r in log.records if r.kind == "oom-kill"]
        crashes = [r for r in log.records if r.kind != "oom-kill"]
        data: dict[str, DataValue] = {
            "source": log.source,
            "lines": log.lines,
            "oom_kill_count": len(ooms),
            "segfault_count": len(crashes),
            "oom_kills": tuple((r.pid, r.name, r.time, r.anon_rss_kb, r.scope, r.cgroup) for r in ooms),
            "segfaults": tuple((r.pid, r.name, r.time, r.library) for r in crashes),
        }
        threshold = "no OOM-killer or segfault records"
        if not log.records:
            return Check(
                id=self.id,
                status="ok",
                value=f"{log.source}: no OOM kills or segfaults ({log.lines} lines)",
                threshold=threshold,
                why="the kernel log is where an OOM kill shows when a worker dies with a bare 'Killed'",
                fix="",
                data=data,
                facts=self.facts(data),
            )
        parts = []
        if ooms:
            parts.append(_summary(ooms, "OOM kill", "OOM kills"))
        if crashes:
            parts.append(_summary(crashes, "segfault", "segfaults"))
        latest = [r.describe() for r in (ooms[-1:] + crashes[-1:])]
        why = "latest: " + "; ".join(latest)
        fixes = []
        if ooms:
            fixes.append(
                "match the OOM pids with the worker pids in your training log; lower num_workers, "
                "prefetch_factor or per-worker memory, or raise the memory limit"
            )
        if crashes:
            fixes.append(
                "a native crash: run with num_workers=0 and `python -X faulthandler` to get the stack; "
                "check the library named in the record"
            )
        return Check(
            id=self.id,
            status="warn",
            value=f"{log.source}: " + ", ".join(parts),
            threshold=threshold,
            why=why,
            fix="; ".join(fixes),
            data=data,
            facts=self.facts(data),
        )
