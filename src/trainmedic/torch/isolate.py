"""`trainmedic isolate`: run the user's dataset with 0, 1 and N workers, one fresh subprocess each.

Changing one variable at a time is the cheapest way to confirm a DataLoader diagnosis: an error that
shows at num_workers=0 too is the dataset's, one that needs workers is about processes, shared memory
or descriptors, and one that vanishes with the file_system sharing strategy was descriptors. Every run
is a fresh Python process in its own process group, sampled from outside (RSS, open descriptors,
/dev/shm) and killed with its whole group at the time limit, so a crash, a leak or a hang in the
user's code never reaches the caller. This module imports neither torch nor the user's code.
"""

from __future__ import annotations

import contextlib
import json
import os
import re
import signal
import subprocess
import sys
import tempfile
import time
import types
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

ENTRY = "dataloader-worker-failure"
DEFAULT_PREFETCH = 2
DEFAULT_STARTUP_TIMEOUT = 120.0  # importing torch on a busy machine can take tens of seconds
FD_NEAR_LIMIT = 0.8  # a process at this share of RLIMIT_NOFILE makes descriptors a suspect
SAMPLE_INTERVAL = 0.05
OUTPUT_TAIL = 64 * 1024
SHM_DIR = "/dev/shm"

# Causes checked in this order on a failed run's text: the specific mechanism first, the generic
# consequences ("Caught X in DataLoader worker", "exited unexpectedly") last, because an shm ENOSPC
# in a worker also arrives as "Caught RuntimeError in DataLoader worker process 0".
CAUSE_ORDER = (
    "cuda-in-forked-worker",
    "shm-exhausted",
    "fd-exhaustion",
    "worker-oom",
    "worker-segfault",
    "worker-killed",
    "shm-name-collision",
    "worker-hang",
    "getitem-exception",
    "worker-exited",
)
_FD_CAUSE = "fd-exhaustion"
DUMP_SIGNAL = signal.SIGUSR1  # the child registers faulthandler on it; see _isolate_child
_NATIVE_SIGNALS = {signal.SIGSEGV, signal.SIGABRT, signal.SIGFPE, signal.SIGILL}
_STACK_START = re.compile(r"^(?:Timeout \([0-9:.]+\)!|Current thread 0x|Thread 0x)", re.MULTILINE)
_FRAME = re.compile(r'^\s*File "(?P<path>[^"]+)", line (?P<line>\d+) in (?P<func>\S+)', re.MULTILINE)
# Frames of the interpreter, torch and the isolate child: not where the user's code is stuck.
_INTERNAL_FRAME = re.compile(
    r"/(?:site|dist)-packages/torch/|/lib/python3\.\d+/(?!(?:site|dist)-packages/)"
    r"|/trainmedic/torch/_isolate_child\.py$|^<"
)


class IsolateError(ValueError):
    """The factory cannot be run (bad spec, import error, wrong type): a usage error, not a finding."""


@dataclass(frozen=True)
class ProcessPeak:
    """The highest RSS and descriptor count one process of a run reached while it was sampled."""

    pid: int
    role: str  # "main", "worker" or "helper" (torch_shm_manager and other descendants)
    name: str
    peak_rss: int
    max_fds: int

    def to_json(self) -> dict[str, Any]:
        return {
            "pid": self.pid,
            "role": self.role,
            "name": self.name,
            "peak_rss": self.peak_rss,
            "max_fds": self.max_fds,
        }


@dataclass(frozen=True)
class IsolateRun:
    """One subprocess run: a worker count and sharing strategy, its outcome and what it used."""

    num_workers: int
    sharing_strategy: str
    ok: bool
    error: str | None
    traceback: str
    cause: str | None  # the `<entry>/<cause>` this run's own evidence points at, when it failed
    evidence: str  # the line that named the cause
    hang: bool
    stalled: bool  # stopped early: descriptors ran out and the loader stopped delivering batches
    elapsed: float
    startup: float | None  # seconds until the loader existed: interpreter, imports, the factory
    batches: int
    batch_bytes: int | None
    peak_rss: int | None
    max_fds: int | None
    fd_limit: int | None
    shm_bytes: int | None
    returncode: int | None
    processes: tuple[ProcessPeak, ...] = ()
    stack: str = ""  # faulthandler's dump of the stuck processes, for hangs
    output: str = ""  # the tail of the run's stdout and stderr

    @property
    def worker_rss(self) -> tuple[int, ...]:
        return tuple(p.peak_rss for p in self.processes if p.role == "worker")

    @property
    def worker_fds(self) -> tuple[int, ...]:
        return tuple(p.max_fds for p in self.processes if p.role == "worker")

    @property
    def main_rss(self) -> int | None:
        return next((p.peak_rss for p in self.processes if p.role == "main"), None)

    @property
    def fds_near_limit(self) -> bool:
        return bool(self.max_fds and self.fd_limit and self.max_fds >= FD_NEAR_LIMIT * self.fd_limit)

    def to_json(self) -> dict[str, Any]:
        return {
            "num_workers": self.num_workers,
            "sharing_strategy": self.sharing_strategy,
            "ok": self.ok,
            "error": self.error,
            "peak_rss": self.peak_rss,
            "max_fds": self.max_fds,
            "shm_bytes": self.shm_bytes,
            "hang": self.hang,
            "stalled": self.stalled,
            "elapsed": round(self.elapsed, 3),
            "startup": None if self.startup is None else round(self.startup, 3),
            "batches": self.batches,
            "batch_bytes": self.batch_bytes,
            "main_rss": self.main_rss,
            "worker_rss": list(self.worker_rss),
            "worker_fds": list(self.worker_fds),
            "fd_limit": self.fd_limit,
            "cause": self.cause,
            "evidence": self.evidence,
            "returncode": self.returncode,
            "traceback": self.traceback,
            "stack": self.stack,
            "processes": [p.to_json() for p in self.processes],
        }


@dataclass(frozen=True)
class Conclusion:
    """The verdict over all runs: a library id (`None` when healthy) and the reason in one sentence."""

    id: str | None
    why: str
    title: str = ""
    fix: tuple[str, ...] = ()  # the library's fix steps, for the text report


@dataclass(frozen=True)
class IsolateReport:
    factory: str
    workers: int
    batches: int
    timeout: float
    runs: tuple[IsolateRun, ...]
    batch_size: int | None
    prefetch_factor: int | None
    batch_bytes: int | None
    shm_demand: int | None  # workers x prefetch_factor x batch bytes
    shm_size: int | None
    conclusion: Conclusion
    loader: Mapping[str, Any] = field(default_factory=dict)

    @property
    def healthy(self) -> bool:
        return self.conclusion.id is None

    def to_json(self) -> dict[str, Any]:
        """The `--json` contract: exactly these keys at the top and in the conclusion; runs may grow."""
        return {
            "runs": [r.to_json() for r in self.runs],
            "shm_demand": self.shm_demand,
            "shm_size": self.shm_size,
            "conclusion": {"id": self.conclusion.id, "why": self.conclusion.why},
        }


# ---------------------------------------------------------------- the factory spec


def factory_spec(factory: str | Callable[..., Any]) -> str:
    """`module:attr` for the child to import; a path module is made absolute, `__main__` becomes its file."""
    if isinstance(factory, str):
        where, sep, attr = factory.rpartition(":")
        if not sep or not where or not attr:
            raise IsolateError(f"expected MODULE:FACTORY (e.g. mypkg.data:make_dataset), got {factory!r}")
        if where.endswith(".py") or os.sep in where:
            path = Path(where)
            if not path.is_file():
                raise IsolateError(f"no such file: {where}")
            return f"{path.resolve()}:{attr}"
        return factory
    if not callable(factory):
        raise IsolateError(f"expected a 'module:factory' string or a callable, got {type(factory).__name__}")
    module: str | None = getattr(factory, "__module__", None)
    qualname: str | None = getattr(factory, "__qualname__", None)
    if not module or not qualname or "<" in qualname:
        raise IsolateError(f"{factory!r} is not importable by name; pass a module-level function or 'module:factory'")
    if module == "__main__":
        main_file = getattr(sys.modules.get("__main__"), "__file__", None)
        if not main_file:
            raise IsolateError("a factory defined in an interactive session cannot be imported by the subprocess")
        return f"{Path(main_file).resolve()}:{qualname}"
    return f"{module}:{qualname}"


# ---------------------------------------------------------------- measuring from outside


def _own_shm_bytes(pids: Iterable[int]) -> int:
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


def _shm_size() -> int | None:
    try:
        st = os.statvfs(SHM_DIR)
    except OSError:
        return None
    return st.f_blocks * st.f_frsize


class _Sampler:
    """Samples the run's process tree with psutil; without psutil it records nothing."""

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

    def sample(self) -> None:
        psutil = self._psutil
        if psutil is None or self._root is None:
            self.shm_peak = max(self.shm_peak, _own_shm_bytes([self.pid]))
            return
        try:
            procs = [self._root, *self._root.children(recursive=True)]
        except psutil.Error:
            return
        self.shm_peak = max(self.shm_peak, _own_shm_bytes(p.pid for p in procs))
        for proc in procs:
            try:
                with proc.oneshot():
                    rss = _vm_hwm(proc.pid) or int(proc.memory_info().rss)
                    fds = int(proc.num_fds())
                    name = str(proc.name())
            except psutil.Error:
                continue
            self.record(proc.pid, name, rss, fds)

    def record(self, pid: int, name: str, rss: int, fds: int, role: str | None = None) -> None:
        peak = self.peaks.get(pid)
        if peak is None:
            role = role or ("main" if pid == self.pid else _role(name))
            self.peaks[pid] = [role, name, rss, fds]
            return
        if role:
            peak[0] = role
        elif name != peak[1] and peak[0] != "main":  # a forked worker renames itself after start
            peak[0] = _role(name)
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


def _vm_hwm(pid: int) -> int | None:
    """The kernel's peak RSS for `pid` (VmHWM): exact even between samples. Linux only."""
    try:
        with Path(f"/proc/{pid}/status").open(encoding="utf-8", errors="replace") as f:
            for line in f:
                if line.startswith("VmHWM:"):
                    return int(line.split()[1]) * 1024
    except (OSError, ValueError, IndexError):
        return None
    return None


def _role(name: str) -> str:
    return "worker" if name.startswith("pt_data_worker") else "helper"


class _Tail:
    """Reads a growing file incrementally: new text for the stall check, the last bytes at the end."""

    def __init__(self, path: Path) -> None:
        self.path = path
        self.pos = 0

    def new_text(self) -> str:
        try:
            with self.path.open("rb") as f:
                f.seek(self.pos)
                data = f.read()
        except OSError:
            return ""
        self.pos += len(data)
        return data.decode("utf-8", "replace")

    def tail(self, limit: int = OUTPUT_TAIL) -> str:
        try:
            with self.path.open("rb") as f:
                f.seek(0, os.SEEK_END)
                size = f.tell()
                f.seek(max(0, size - limit))
                data = f.read()
        except OSError:
            return ""
        # Worker crash messages end with a NUL byte; keep the text printable.
        return data.decode("utf-8", "replace").replace("\x00", "")


def _read_events(path: Path) -> list[dict[str, Any]]:
    events: list[dict[str, Any]] = []
    try:
        text = path.read_text(encoding="utf-8", errors="replace")
    except OSError:
        return events
    for line in text.splitlines():
        with contextlib.suppress(ValueError):
            item = json.loads(line)
            if isinstance(item, dict):
                events.append(item)
    return events


def _dump_workers(sampler: _Sampler) -> None:
    """Ask the stuck workers for their stacks (their faulthandler listens on SIGUSR1), then give
    them a moment to write; the main process dumps its own through dump_traceback_later."""
    sampler.sample()
    workers = [pid for pid, peak in sampler.peaks.items() if peak[0] == "worker"]
    for pid in workers:
        with contextlib.suppress(ProcessLookupError, PermissionError):
            os.kill(pid, DUMP_SIGNAL)
    if workers:
        time.sleep(0.3)


def _kill_group(pgid: int) -> None:
    with contextlib.suppress(ProcessLookupError, PermissionError):
        os.killpg(pgid, signal.SIGKILL)


def _remove_shm_leftovers(pids: Iterable[int]) -> None:
    """file_system sharing names files /dev/shm/torch_<pid>_*; a killed run cannot unlink its own."""
    shm = Path(SHM_DIR)
    for pid in pids:
        for leftover in shm.glob(f"torch_{pid}_*"):
            with contextlib.suppress(OSError):
                leftover.unlink()


# ---------------------------------------------------------------- one run


@dataclass(frozen=True)
class _Options:
    spec: str
    batch_size: int | None
    batches: int
    timeout: float
    startup_timeout: float
    nofile: int | None
    python: str
    cwd: str
    env: Mapping[str, str]
    sys_path: tuple[str, ...]


class _EventFeed:
    """The child's events as they arrive, complete lines only."""

    def __init__(self, path: Path) -> None:
        self._tail = _Tail(path)
        self._partial = ""

    def new(self) -> list[dict[str, Any]]:
        text = self._partial + self._tail.new_text()
        lines = text.split("\n")
        self._partial = lines.pop()
        out: list[dict[str, Any]] = []
        for line in lines:
            with contextlib.suppress(ValueError):
                item = json.loads(line)
                if isinstance(item, dict):
                    out.append(item)
        return out


def _margin(limit: float) -> float:
    """How long before the kill the child dumps its stacks."""
    return min(1.0, 0.2 * limit)


def _run_once(
    opts: _Options, num_workers: int, strategy: str, fd_pattern: re.Pattern[str]
) -> tuple[IsolateRun, list[dict[str, Any]]]:
    """Start one child and sample it until it ends, stalls on descriptors or reaches its time limit.

    Two limits: `startup_timeout` for importing torch and the user's module and calling the factory
    (slow on a busy machine, and not what is being tested), then `timeout` for the batches, counted
    from the moment the loader exists.
    """
    with tempfile.TemporaryDirectory(prefix="trainmedic-isolate-") as tmp:
        tmpdir = Path(tmp)
        events_path = tmpdir / "events.jsonl"
        output_path = tmpdir / "output.txt"
        config_path = tmpdir / "config.json"
        started_wall = time.time()
        config = {
            "factory": opts.spec,
            "num_workers": num_workers,
            "batch_size": opts.batch_size,
            "batches": opts.batches,
            "sharing_strategy": strategy,
            "nofile": opts.nofile,
            # faulthandler dumps the stacks a little before the parent kills the group.
            "dump_at": started_wall + opts.startup_timeout - _margin(opts.startup_timeout),
            "iterate_dump_after": opts.timeout - _margin(opts.timeout),
            "events": str(events_path),
            "sys_path": list(opts.sys_path),
        }
        config_path.write_text(json.dumps(config), encoding="utf-8")
        env = dict(opts.env)
        env["PYTHONUNBUFFERED"] = "1"
        env.pop("PYTHONFAULTHANDLER", None)
        cmd = [
            opts.python,
            "-c",
            "from trainmedic.torch._isolate_child import main; main()",
            str(config_path),
        ]
        hang = stalled = False
        fd_line = window = ""
        deadline = started_wall + opts.startup_timeout
        with output_path.open("wb") as out:
            start = time.monotonic()
            proc = subprocess.Popen(
                cmd,
                cwd=opts.cwd,
                env=env,
                stdin=subprocess.DEVNULL,
                stdout=out,
                stderr=subprocess.STDOUT,
                start_new_session=True,
            )
        sampler = _Sampler(proc.pid)
        output = _Tail(output_path)
        feed = _EventFeed(events_path)
        last_progress = start
        stall_grace = max(0.5, min(1.0, opts.timeout / 4))
        try:
            while proc.poll() is None:
                now = time.monotonic()
                if time.time() >= deadline:
                    hang = True
                    _dump_workers(sampler)
                    break
                sampler.sample()
                for event in feed.new():
                    if event.get("event") == "loader":
                        deadline = float(event.get("t") or time.time()) + opts.timeout
                    elif event.get("event") == "batch":
                        last_progress = now
                if not fd_line:
                    # Keep the end of the previous read: a message can arrive in two pieces.
                    window = window[-4096:] + output.new_text()
                    m = fd_pattern.search(window)
                    if m:
                        fd_line = _line_at(window, m.start())
                        last_progress = now
                # A worker that cannot pass a descriptor drops its batch, and the loader then waits
                # forever: stop once no batch came for a while after the first descriptor error.
                elif now - last_progress >= stall_grace:
                    stalled = True
                    break
                time.sleep(SAMPLE_INTERVAL)
        finally:
            _kill_group(proc.pid)
            returncode = proc.wait()
            elapsed = time.monotonic() - start
            events = _read_events(events_path)
            for event in events:
                if event.get("event") == "processes":
                    sampler.merge(event)
            sampler.await_exit()
            _remove_shm_leftovers(sampler.peaks)
        text = output.tail()
        run = _make_run(
            num_workers=num_workers,
            strategy=strategy,
            events=events,
            output=text,
            returncode=None if (hang or stalled) else returncode,
            hang=hang,
            stalled=stalled,
            fd_line=fd_line,
            elapsed=elapsed,
            timeout=opts.timeout,
            startup_timeout=opts.startup_timeout,
            batches=opts.batches,
            processes=sampler.result(num_workers),
            shm_bytes=sampler.shm_peak if Path(SHM_DIR).is_dir() else None,
            started_wall=started_wall,
        )
        return run, events


def _line_at(text: str, pos: int) -> str:
    start = text.rfind("\n", 0, pos) + 1
    end = text.find("\n", pos)
    return text[start : end if end >= 0 else len(text)].strip()


def _make_run(
    *,
    num_workers: int,
    strategy: str,
    events: list[dict[str, Any]],
    output: str,
    returncode: int | None,
    hang: bool,
    stalled: bool,
    fd_line: str,
    elapsed: float,
    timeout: float,
    startup_timeout: float,
    batches: int,
    processes: tuple[ProcessPeak, ...],
    shm_bytes: int | None,
    started_wall: float,
) -> IsolateRun:
    by_kind: dict[str, dict[str, Any]] = {}
    for event in events:
        by_kind.setdefault(str(event.get("event")), event)
    done = sum(1 for e in events if e.get("event") == "batch")
    error_event = by_kind.get("error") or by_kind.get("setup_error")
    ok = "done" in by_kind and returncode == 0 and not hang and not stalled
    error: str | None = None
    tb = ""
    if error_event is not None:
        error = str(error_event.get("final") or error_event.get("type"))
        tb = str(error_event.get("traceback") or "")
    elif stalled:
        error = f"{fd_line} (the loader stopped after {done} of {batches} batches)"
    elif hang and "loader" not in by_kind:
        error = f"hang while importing or calling the factory: nothing for {startup_timeout:g} s"
    elif hang:
        error = f"hang: {done} of {batches} batches, then nothing until the {timeout:g} s limit"
    elif returncode is not None and returncode < 0:
        error = f"the run's main process was killed by signal {_signal_name(-returncode)}"
    elif not ok:
        last = [line for line in output.splitlines() if line.strip()]
        error = last[-1].strip() if last else f"exited with code {returncode} and no output"
    stack = ""
    m = _STACK_START.search(output)
    if m:
        stack = output[m.start() :]
    start = by_kind.get("start", {})
    first = by_kind.get("first_batch", {})
    loader_t = by_kind.get("loader", {}).get("t")
    rss = [p.peak_rss for p in processes if p.role in ("main", "worker")]
    fds = [p.max_fds for p in processes if p.role in ("main", "worker")]
    return IsolateRun(
        num_workers=num_workers,
        sharing_strategy=strategy,
        ok=ok,
        error=error,
        traceback=tb,
        cause=None,
        evidence="",
        hang=hang,
        stalled=stalled,
        elapsed=elapsed,
        startup=float(loader_t) - started_wall if isinstance(loader_t, (int, float)) else None,
        batches=done,
        batch_bytes=_int_or_none(first.get("batch_bytes")),
        peak_rss=max(rss) if rss else None,
        max_fds=max(fds) if fds else None,
        fd_limit=_int_or_none(start.get("fd_limit")),
        shm_bytes=shm_bytes,
        returncode=returncode,
        processes=processes,
        stack=stack,
        output=output,
    )


def _int_or_none(value: Any) -> int | None:
    return int(value) if isinstance(value, (int, float)) else None


def _signal_name(num: int) -> str:
    try:
        return signal.Signals(num).name
    except ValueError:
        return str(num)


# ---------------------------------------------------------------- classification


@dataclass(frozen=True)
class _Matcher:
    """The library's own fingerprints for the DataLoader entry, so isolate and diagnose agree on ids."""

    patterns: tuple[tuple[str, re.Pattern[str]], ...]  # (cause id, regex), in CAUSE_ORDER
    titles: Mapping[str, str]
    fixes: Mapping[str, tuple[str, ...]]

    @classmethod
    def load(cls) -> _Matcher:
        from trainmedic.catalog import LIBRARY_DIR, LibraryError, load_entry

        # Only this entry is needed: load its file alone, so a problem elsewhere in the library
        # (checked by `trainmedic library check`) does not stop isolate.
        path = next(iter(sorted(LIBRARY_DIR.glob(f"*/{ENTRY}.yaml"))), None)
        if path is None:
            raise IsolateError(f"the library has no {ENTRY} entry")
        try:
            entry = load_entry(path)
        except LibraryError as exc:
            raise IsolateError(f"library: {exc}") from exc
        causes = {c.id: c for c in entry.causes}
        patterns: list[tuple[str, re.Pattern[str]]] = []
        for cause_id in (*CAUSE_ORDER, *(c for c in causes if c not in CAUSE_ORDER)):
            cause = causes.get(cause_id)
            if cause is None:
                continue
            for fp in cause.fingerprints:
                flags = re.IGNORECASE if fp.ignore_case else 0
                patterns.append((cause_id, re.compile(fp.regex, flags)))
        return cls(
            patterns=tuple(patterns),
            titles={c.id: c.title for c in entry.causes},
            fixes={c.id: tuple(c.fix) for c in entry.causes},
        )

    def fd_pattern(self) -> re.Pattern[str]:
        regexes = [p.pattern for cid, p in self.patterns if cid == _FD_CAUSE]
        return re.compile("|".join(f"(?:{r})" for r in regexes) or r"Too many open files")

    def match(self, text: str) -> tuple[str, str] | None:
        """The first cause (in CAUSE_ORDER) with a fingerprint in `text`, and the line it matched."""
        for cause_id, pattern in self.patterns:
            m = pattern.search(text)
            if m:
                return cause_id, _line_at(text, m.start())
        return None


def _classify(run: IsolateRun, matcher: _Matcher) -> IsolateRun:
    """Name the cause this failed run's own text and exit status point at."""
    if run.ok:
        return run
    from dataclasses import replace

    text = "\n".join(part for part in (run.traceback, run.output) if part)
    found = matcher.match(text)
    structural = ("worker-hang",) if run.hang else ()
    if found and (found[0] not in ("getitem-exception", "worker-exited", "worker-hang") or not structural):
        return replace(run, cause=found[0], evidence=found[1])
    if run.hang:
        return replace(run, cause="worker-hang", evidence=_stuck_frame(run.stack) or run.error or "")
    if run.returncode is not None and run.returncode < 0:
        sig = -run.returncode
        if sig == signal.SIGBUS:
            return replace(run, cause="shm-exhausted", evidence=run.error or "")
        if sig in _NATIVE_SIGNALS:
            return replace(run, cause="worker-segfault", evidence=run.error or "")
        if sig == signal.SIGKILL:
            return replace(run, cause="worker-killed", evidence=run.error or "")
    if found:
        return replace(run, cause=found[0], evidence=found[1])
    return replace(run, cause="getitem-exception", evidence=run.error or "")


def _stuck_frame(stack: str) -> str:
    """The innermost frame of user code in faulthandler's dump: where the loader was stuck."""
    for m in _FRAME.finditer(stack):
        if not _INTERNAL_FRAME.search(m.group("path")):
            return f"{m.group('path')}:{m.group('line')} in {m.group('func')}"
    return ""


def _fmt_bytes(n: int | None) -> str:
    if n is None:
        return "?"
    size = float(n)
    for unit in ("B", "KiB", "MiB", "GiB"):
        if abs(size) < 1024 or unit == "GiB":
            return f"{size:.0f} {unit}" if unit == "B" else f"{size:.1f} {unit}"
        size /= 1024
    return f"{size:.1f} GiB"


def conclude(
    runs: tuple[IsolateRun, ...],
    *,
    shm_demand: int | None,
    shm_size: int | None,
    matcher: _Matcher | None = None,
) -> Conclusion:
    """One verdict from the runs: change one variable at a time and see which change matters."""
    matcher = matcher or _Matcher.load()

    def done(cause: str | None, why: str) -> Conclusion:
        if cause is None:
            return Conclusion(None, why)
        return Conclusion(f"{ENTRY}/{cause}", why, matcher.titles.get(cause, ""), matcher.fixes.get(cause, ()))

    base = [r for r in runs if r.sharing_strategy != "file_system"]
    zero = next((r for r in base if r.num_workers == 0), None)
    if zero is not None and not zero.ok:
        if zero.hang:
            where = _stuck_frame(zero.stack)
            at = f" (stuck at {where})" if where else ""
            if zero.startup is None:
                return done("worker-hang", f"{zero.error}{at}: the factory itself blocks, before any worker")
            return done(
                "worker-hang",
                f"hangs at num_workers=0 too{at}: the dataset itself blocks, not the workers",
            )
        cause = zero.cause if zero.cause in ("worker-segfault", "worker-killed", "worker-oom") else None
        if cause:
            return done(cause, f"fails at num_workers=0 too: {zero.error}")
        return done(
            "getitem-exception",
            f"fails at num_workers=0 too → the dataset, not the workers: {zero.error}",
        )
    failed = [r for r in base if not r.ok and r.num_workers > 0]
    rerun = [r for r in runs if r.sharing_strategy == "file_system"]
    over = shm_demand is not None and shm_size is not None and shm_demand > shm_size
    demand = (
        f"shm demand {_fmt_bytes(shm_demand)} (workers × prefetch_factor × batch bytes) "
        f"vs /dev/shm {_fmt_bytes(shm_size)}"
    )
    if not failed:
        parts = [f"passes with num_workers={', '.join(str(r.num_workers) for r in base)}"]
        near = [r for r in base if r.fds_near_limit]
        if near:
            parts.append(f"but descriptors reached {near[0].max_fds} of the {near[0].fd_limit} limit")
        if over:
            parts.append(f"but the {demand} leaves no margin")
        return done(None, "healthy: " + "; ".join(parts))
    causes = {r.cause for r in failed}
    first = failed[0]

    def evidence(cause: str) -> str:
        run = next(r for r in failed if r.cause == cause)
        return f"with num_workers={run.num_workers}: {run.evidence or run.error}"

    lead = "passes at num_workers=0, fails "
    if "cuda-in-forked-worker" in causes:
        return done("cuda-in-forked-worker", lead + evidence("cuda-in-forked-worker"))
    generic = {"worker-exited", "worker-killed", "getitem-exception", None}
    if "shm-exhausted" in causes or (over and causes <= generic):
        cause_text = evidence("shm-exhausted") if "shm-exhausted" in causes else f"with workers: {first.error}"
        return done("shm-exhausted", f"{lead}{cause_text}; {demand}")
    if _FD_CAUSE in causes:
        fixed = [r for r in rerun if r.ok]
        if fixed:
            tail = f"; passes with sharing strategy file_system (num_workers={fixed[0].num_workers})"
        elif rerun:
            tail = f"; still fails with file_system ({rerun[0].error}): raise `ulimit -n` too"
        else:
            tail = ""
        return done(_FD_CAUSE, f"{lead}on descriptors {evidence(_FD_CAUSE)}{tail}")
    for cause, note in (
        ("worker-oom", ""),
        ("worker-segfault", "; a native crash in the worker"),
        ("worker-killed", "; an out-of-memory kill is not confirmed: check the kernel log (dmesg)"),
    ):
        if cause in causes:
            return done(cause, f"{lead}{evidence(cause)}{note}")
    if "worker-hang" in causes:
        hung = next(r for r in failed if r.cause == "worker-hang")
        where = _stuck_frame(hung.stack)
        at = f"; stuck at {where}" if where else ""
        return done(
            "worker-hang",
            f"{lead}with num_workers={hung.num_workers}: no batch for the rest of the time limit (hang){at}",
        )
    if "getitem-exception" in causes:
        return done(
            "getitem-exception",
            f"{lead}{evidence('getitem-exception')}: the dataset raises only inside workers "
            "(code that depends on worker state or on what fork copied)",
        )
    cause = first.cause or "worker-exited"
    return done(cause, f"{lead}with num_workers={first.num_workers}: {first.evidence or first.error}")


# ---------------------------------------------------------------- the public entry


def isolate(
    factory: str | Callable[..., Any],
    *,
    workers: int = 4,
    batch_size: int | None = None,
    batches: int = 10,
    timeout: float = 60.0,
    startup_timeout: float | None = None,
    nofile: int | None = None,
    python: str | None = None,
    cwd: str | os.PathLike[str] | None = None,
    env: Mapping[str, str] | None = None,
    progress: Callable[[IsolateRun], None] | None = None,
) -> IsolateReport:
    """Iterate `batches` batches of the factory's loader with 0, 1 and `workers` workers, each in a
    fresh subprocess, rerun with the file_system sharing strategy when descriptors are the suspect,
    and conclude with a `dataloader-worker-failure/<cause>` id.

    Each run gets `startup_timeout` seconds (default 120, or `timeout` if larger) to import and call
    the factory, then `timeout` seconds for its batches; a run past either is killed and is a hang.

    `factory` is "module:function" (module dotted or a .py path) or a module-level callable; it returns
    a Dataset (batched with `batch_size`, default 1) or a DataLoader (its settings are kept; `batch_size`
    overrides). `nofile` sets RLIMIT_NOFILE in the runs, to reproduce a limit. Raises IsolateError
    when the factory cannot be imported, called or used.
    """
    if workers < 1:
        raise IsolateError("--workers must be at least 1 (0 and 1 are always run)")
    if batches < 1:
        raise IsolateError("--batches must be at least 1")
    if batch_size is not None and batch_size < 1:
        raise IsolateError("--batch-size must be at least 1")
    if timeout <= 0:
        raise IsolateError("--timeout must be positive")
    if startup_timeout is not None and startup_timeout <= 0:
        raise IsolateError("--startup-timeout must be positive")
    if nofile is not None and nofile < 32:
        raise IsolateError("--nofile below 32 leaves Python too few descriptors to start")
    spec = factory_spec(factory)
    opts = _Options(
        spec=spec,
        batch_size=batch_size,
        batches=batches,
        timeout=float(timeout),
        startup_timeout=float(startup_timeout or max(DEFAULT_STARTUP_TIMEOUT, timeout)),
        nofile=nofile,
        python=python or sys.executable,
        cwd=str(cwd or Path.cwd()),
        env=dict(os.environ if env is None else env),
        # The caller's import path, so a factory it can import the child can too (same interpreter only).
        sys_path=tuple(p for p in sys.path if p) if python in (None, sys.executable) else (),
    )
    matcher = _Matcher.load()
    fd_pattern = matcher.fd_pattern()
    runs: list[IsolateRun] = []
    loader: dict[str, Any] = {}
    shm_size_child: int | None = None
    for count in sorted({0, 1, workers}):
        run, events = _run_once(opts, count, "file_descriptor", fd_pattern)
        setup = next((e for e in events if e.get("event") == "setup_error"), None)
        if setup is not None:
            stage = {"import": "cannot import", "factory": "the factory failed", "build": "cannot build"}
            raise IsolateError(f"{stage.get(str(setup.get('stage')), 'cannot use')} {spec}: {setup.get('final')}")
        if count == 0 and not events and not run.hang:
            last = [line for line in run.output.splitlines() if line.strip()]
            raise IsolateError(f"the subprocess ({opts.python}) did not start: {last[-1] if last else 'no output'}")
        for event in events:
            if event.get("event") == "loader" and not loader:
                loader = {k: v for k, v in event.items() if k not in ("event", "t")}
            if event.get("event") == "start" and shm_size_child is None:
                shm_size_child = _int_or_none(event.get("shm_size"))
        run = _classify(run, matcher)
        runs.append(run)
        if progress:
            progress(run)
        if count == 0 and run.hang and run.startup is None:
            break  # the import or the factory itself hangs: every other run would wait as long

    suspects = [r for r in runs if r.num_workers > 0 and (r.cause == _FD_CAUSE or (r.ok and r.fds_near_limit))]
    if suspects:
        count = max(r.num_workers for r in suspects)
        run, _ = _run_once(opts, count, "file_system", fd_pattern)
        run = _classify(run, matcher)
        runs.append(run)
        if progress:
            progress(run)

    batch_bytes = next((r.batch_bytes for r in runs if r.batch_bytes is not None), None)
    prefetch = _int_or_none(loader.get("prefetch_factor")) or DEFAULT_PREFETCH
    shm_demand = workers * prefetch * batch_bytes if batch_bytes is not None else None
    shm_size = shm_size_child if shm_size_child is not None else _shm_size()
    runs_t = tuple(runs)
    return IsolateReport(
        factory=spec,
        workers=workers,
        batches=batches,
        timeout=float(timeout),
        runs=runs_t,
        batch_size=_int_or_none(loader.get("batch_size")),
        prefetch_factor=prefetch,
        batch_bytes=batch_bytes,
        shm_demand=shm_demand,
        shm_size=shm_size,
        conclusion=conclude(runs_t, shm_demand=shm_demand, shm_size=shm_size, matcher=matcher),
        loader=loader,
    )


class _CallableModule(types.ModuleType):
    """`trainmedic.torch.isolate(...)` must work after this submodule is imported too.

    Importing a submodule sets it as an attribute of its package, replacing the package's lazy
    `isolate` function of the same name; a callable module keeps both `trainmedic.torch.isolate(...)`
    and `import trainmedic.torch.isolate as m` working.
    """

    def __call__(self, *args: Any, **kwargs: Any) -> IsolateReport:
        return isolate(*args, **kwargs)


sys.modules[__name__].__class__ = _CallableModule
