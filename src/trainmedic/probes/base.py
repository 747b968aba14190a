"""The probe interface: a probe reads the machine through a ProbeContext and returns one Check.

The Check carries the probe's verdict for people (value, why, fix), its exact numbers for doctor
JSON (`data`) and the facts it states for the reasoner (`facts`): only the probe knows what its
numbers mean, so nothing downstream parses a check's text or knows its data keys.

Every path a probe reads goes through the context, so tests point probes at recorded snapshot
folders instead of the live /proc and /sys; everything a folder cannot stand in for (statvfs,
disk usage, the CPU count) is an injectable function or value.
"""

from __future__ import annotations

import contextlib
import os
import re
import resource
import shutil
import signal
import subprocess
import sys
import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Literal, NamedTuple, Protocol

from trainmedic.model import Fact

Status = Literal["ok", "warn", "fail", "unknown"]
STATUSES: tuple[Status, ...] = ("ok", "warn", "fail", "unknown")
DataValue = int | float | str | bool | tuple["DataValue", ...] | None  # JSON-like, no dicts

MiB = 1024 * 1024
GiB = 1024 * MiB


@dataclass(frozen=True)
class ProbeFact:
    """A fact a probe states about the machine: byte counts, limits and counts as exact integers."""

    id: str  # e.g. shm.size_bytes, nofile.soft, kernel.oom_kill
    value: int | str

    def fact(self, source: str) -> Fact:
        """The reasoner's Fact, quoting where it came from (values are text there)."""
        return Fact(id=self.id, value=str(self.value), source=source)


@dataclass(frozen=True)
class Check:
    """One probe's verdict: what it measured, against what, why it matters and what to do."""

    id: str
    status: Status
    value: str
    threshold: str = ""
    why: str = ""
    fix: str = ""
    data: Mapping[str, DataValue] = field(default_factory=dict)
    facts: tuple[ProbeFact, ...] = ()  # not in the JSON: `data` carries the numbers they come from

    def to_json(self) -> dict[str, Any]:
        """The public doctor JSON shape, plus `data`: the exact numbers, so `diagnose --facts` on
        another host reads them back without parsing the human-readable value."""
        return {
            "id": self.id,
            "status": self.status,
            "value": self.value,
            "threshold": self.threshold,
            "why": self.why,
            "fix": self.fix,
            "data": {k: list(v) if isinstance(v, tuple) else v for k, v in self.data.items()},
        }


def unknown(probe_id: str, reason: str, why: str = "", fix: str = "") -> Check:
    """A check that could not be measured: the reason says what was unreadable."""
    return Check(id=probe_id, status="unknown", value=reason, why=why, fix=fix)


class FsStats(Protocol):
    """The part of os.statvfs_result the probes use, so tests can hand in a stand-in."""

    @property
    def f_frsize(self) -> int: ...

    @property
    def f_blocks(self) -> int: ...

    @property
    def f_bavail(self) -> int: ...


class FakeStatvfs(NamedTuple):
    """A statvfs stand-in for snapshots: a folder cannot fake a filesystem's size."""

    f_frsize: int
    f_blocks: int
    f_bavail: int


class DiskUsage(NamedTuple):
    total: int
    used: int
    free: int


@dataclass(frozen=True)
class LogSource:
    """Where kernel log lines come from: a command (argv) or a file (path)."""

    name: str
    argv: tuple[str, ...] = ()
    path: str = ""


DEFAULT_KERNEL_LOG_SOURCES: tuple[LogSource, ...] = (
    LogSource("dmesg", argv=("dmesg",)),
    LogSource("journalctl -k", argv=("journalctl", "-k", "--no-pager", "-o", "short-iso")),
    LogSource("/var/log/kern.log", path="/var/log/kern.log"),
    LogSource("/var/log/messages", path="/var/log/messages"),
)


def _cwd() -> str:
    try:
        return str(Path.cwd())
    except OSError:  # the working directory was deleted under us
        return "."


def _disk_usage(path: str) -> DiskUsage:
    usage = shutil.disk_usage(path)
    return DiskUsage(usage.total, usage.used, usage.free)


@dataclass(frozen=True)
class ProbeContext:
    """Where probes read from and what the run asks for (workers, batch size, prefetch)."""

    proc_root: str = "/proc"
    sys_root: str = "/sys"
    dev_shm: str = "/dev/shm"
    etc_root: str = "/etc"
    fs_root: str = "/"
    kernel_log_sources: tuple[LogSource, ...] = DEFAULT_KERNEL_LOG_SOURCES
    environ: Mapping[str, str] = field(default_factory=lambda: dict(os.environ))
    workers: int | None = None
    batch_bytes: int | None = None
    prefetch_factor: int | None = None
    statvfs: Callable[[str], FsStats] = os.statvfs
    disk_usage: Callable[[str], DiskUsage] = _disk_usage
    cwd: str = field(default_factory=_cwd)
    cpu_count: int | None = field(default_factory=os.cpu_count)
    python: str = sys.executable  # interpreter the torch probe asks; "" skips it
    command_timeout: float = 5.0  # per external command (dmesg, journalctl, python -c)
    now: float = field(default_factory=time.time)

    def proc(self, rel: str) -> Path:
        return Path(self.proc_root) / rel

    def sys(self, rel: str) -> Path:
        return Path(self.sys_root) / rel

    def etc(self, rel: str) -> Path:
        return Path(self.etc_root) / rel

    def root(self, absolute: str) -> Path:
        """A path of the probed machine's root filesystem, e.g. /.dockerenv."""
        return Path(self.fs_root) / absolute.lstrip("/")

    def host_path(self, absolute: str) -> Path:
        """Map an absolute path seen in /proc (a mount point) onto the context's roots."""
        for prefix, base in (("/sys", self.sys_root), ("/proc", self.proc_root), ("/etc", self.etc_root)):
            if absolute == prefix or absolute.startswith(prefix + "/"):
                return Path(base) / absolute[len(prefix) :].lstrip("/")
        return self.root(absolute)


class Probe(Protocol):
    """A probe: an id, a time limit the runner enforces, and run(ctx) -> Check."""

    @property
    def id(self) -> str: ...

    @property
    def time_limit(self) -> float: ...

    def run(self, ctx: ProbeContext) -> Check: ...


class FactProbe(Probe, Protocol):
    """A probe that also reads its own check back from doctor JSON written on another host."""

    def facts(self, data: Mapping[str, DataValue]) -> tuple[ProbeFact, ...]:
        """The facts its `data` states; run() attaches the same to the check it returns."""
        ...

    def data_from_value(self, value: str) -> dict[str, DataValue]:
        """`data` recovered from the value text, for doctor JSON written before it carried `data`."""
        ...


class StatesNoFacts:
    """For a probe whose check informs the reader but states no fact the reasoner weighs (yet)."""

    @staticmethod
    def facts(data: Mapping[str, DataValue]) -> tuple[ProbeFact, ...]:
        return ()

    @staticmethod
    def data_from_value(value: str) -> dict[str, DataValue]:
        return {}


# ------------------------------------------------------------------ helpers shared by probes


def read_text(path: Path) -> str:
    """Read a small text file (proc/sys files are tiny); raises OSError when unreadable."""
    with path.open(encoding="utf-8", errors="replace") as f:
        return f.read(1 << 20)


def try_read(path: Path) -> str | None:
    try:
        return read_text(path)
    except (OSError, ValueError):
        return None


def try_int(path: Path) -> int | None:
    text = try_read(path)
    if text is None:
        return None
    try:
        return int(text.split()[0])
    except (ValueError, IndexError):
        return None


UNLIMITED = "unlimited"


def read_rlimit(ctx: ProbeContext, label: str, which: int) -> tuple[int, int] | None:
    """(soft, hard) of one resource limit, -1 for unlimited: the `label` line of <proc>/self/limits ("Max open
    files", "Max processes"), or getrlimit(`which`) when probing the live /proc."""
    for line in (try_read(ctx.proc("self/limits")) or "").splitlines():
        if line.startswith(label):
            fields = line[len(label) :].split()
            if len(fields) >= 2:
                soft, hard = (-1 if f == UNLIMITED else int(f) for f in fields[:2])
                return soft, hard
    if ctx.proc_root == "/proc":
        soft, hard = resource.getrlimit(which)
        return (-1 if soft == resource.RLIM_INFINITY else soft, -1 if hard == resource.RLIM_INFINITY else hard)
    return None


def format_limit(n: int | None) -> str:
    """A limit as printed in a check's value: -1 is `unlimited`."""
    return "unknown" if n is None else UNLIMITED if n < 0 else str(n)


class CommandResult(NamedTuple):
    returncode: int
    stdout: str
    stderr: str


class CommandTimeout(Exception):
    """The command ran past its time limit and was killed with its whole process group."""


def run_command(argv: Sequence[str], timeout: float, env: Mapping[str, str] | None = None) -> CommandResult:
    """Run a command with a hard time limit.

    The child gets its own session and the whole group is killed on timeout: subprocess.run
    alone kills only the child, and a grandchild holding the pipe open would hang us anyway.
    Raises OSError when the command cannot be started, CommandTimeout when it overruns.
    """
    proc = subprocess.Popen(
        list(argv),
        stdin=subprocess.DEVNULL,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        start_new_session=True,
        env=dict(env) if env is not None else None,
    )
    try:
        out, err = proc.communicate(timeout=timeout)
    except subprocess.TimeoutExpired:
        try:
            os.killpg(proc.pid, signal.SIGKILL)
        except OSError:
            proc.kill()
        with contextlib.suppress(subprocess.TimeoutExpired):
            proc.communicate(timeout=1.0)
        raise CommandTimeout(f"{argv[0]} did not finish within {timeout:g}s") from None
    return CommandResult(
        proc.returncode,
        out.decode("utf-8", errors="replace"),
        err.decode("utf-8", errors="replace"),
    )


# ------------------------------------------------------------------ sizes

_SIZE_RE = re.compile(r"^\s*(\d+(?:\.\d+)?)\s*([kmgtp]?)(i?)(b?)\s*$", re.IGNORECASE)
_POWERS = {"": 0, "k": 1, "m": 2, "g": 3, "t": 4, "p": 5}


def parse_size(text: str) -> int:
    """Parse `64M`, `64MiB`, `2GiB`, `1.5G`, `4096`: bare and *iB suffixes are binary, *B decimal.

    `64M` means 64 MiB as in `docker --shm-size=64m`; `64MB` is 64 * 10**6 bytes.
    Raises ValueError with the accepted forms.
    """
    m = _SIZE_RE.match(text)
    if not m:
        raise ValueError(f"not a size: {text!r} (use e.g. 4096, 64M, 64MiB, 2GiB, 500MB)")
    number, unit, binary, byte = m.groups()
    power = _POWERS[unit.lower()]
    if binary and not unit:
        raise ValueError(f"not a size: {text!r} (use e.g. 4096, 64M, 64MiB, 2GiB, 500MB)")
    base = 1000 if (byte and not binary and unit) else 1024
    return int(float(number) * base**power)


def stated(*pairs: tuple[str, int | str | None]) -> tuple[ProbeFact, ...]:
    """Facts for the (id, value) pairs that are known: None and '' state nothing."""
    return tuple(ProbeFact(fact_id, value) for fact_id, value in pairs if value is not None and value != "")


def whole(value: DataValue) -> int | None:
    """A data number as an exact integer; text, flags and None are not numbers."""
    if isinstance(value, bool) or not isinstance(value, int | float):
        return None
    return int(value)


def size_after(label: str, text: str) -> int | None:
    """The size printed after `label` in a value (`size 64 MiB`), to the precision it was printed."""
    m = re.search(rf"\b{label} (\d+(?:\.\d+)? [KMGT]?i?B)", text)
    return parse_size(m.group(1)) if m else None


def format_size(n: float) -> str:
    """Human size with binary units; whole numbers print without decimals (64 MiB)."""
    value = float(n)
    for unit in ("B", "KiB", "MiB", "GiB", "TiB"):
        if abs(value) < 1024 or unit == "TiB":
            if unit == "B" or value == int(value):
                return f"{int(value)} {unit}"
            return f"{value:.1f} {unit}"
        value /= 1024
    return f"{value:.1f} TiB"  # pragma: no cover - loop always returns
