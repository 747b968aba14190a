"""Running one isolate child: a fresh Python process in its own process group, under two time limits.

The child (trainmedic.torch._isolate_child) imports torch and the user's factory, builds the loader
and iterates it, reporting each step as a JSON line. This side starts it, samples it from outside,
hands its output as it arrives to a watch (which says when the output shows a failure after which
the loader stops delivering), and kills the whole group at the time limit, so a crash, a leak or a
hang in the user's code never reaches the caller. What the run did becomes an IsolateRun; what its
output means is for the reasoner (trainmedic.torch.isolate.diagnosis) to say. No torch here.
"""

from __future__ import annotations

import contextlib
import json
import os
import signal
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from trainmedic.torch.isolate.results import IsolateError, IsolateRun, ProcessPeak
from trainmedic.torch.isolate.sampler import SHM_DIR, Sampler
from trainmedic.torch.isolate.stacks import stack_dump

DEFAULT_STARTUP_TIMEOUT = 120.0  # importing torch on a busy machine can take tens of seconds
SAMPLE_INTERVAL = 0.05
OUTPUT_TAIL = 64 * 1024
DUMP_SIGNAL = signal.SIGUSR1  # the child registers faulthandler on it; see _isolate_child
CHILD_ENTRY = "from trainmedic.torch._isolate_child import main; main()"

# Given the run's output as it arrives, the line after which the loader is expected to stop
# delivering batches (descriptors ran out), or None.
Watch = Callable[[bytes], "str | None"]


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


@dataclass(frozen=True)
class Options:
    """What every run of one isolate call shares."""

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


# ---------------------------------------------------------------- reading the child


class _Tail:
    """Reads a growing file incrementally: new bytes as they come, the last bytes at the end."""

    def __init__(self, path: Path) -> None:
        self.path = path
        self.pos = 0

    def new_bytes(self) -> bytes:
        try:
            with self.path.open("rb") as f:
                f.seek(self.pos)
                data = f.read()
        except OSError:
            return b""
        self.pos += len(data)
        return data

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


def _parse_events(lines: Iterable[str]) -> list[dict[str, Any]]:
    out: list[dict[str, Any]] = []
    for line in lines:
        with contextlib.suppress(ValueError):
            item = json.loads(line)
            if isinstance(item, dict):
                out.append(item)
    return out


def _read_events(path: Path) -> list[dict[str, Any]]:
    try:
        text = path.read_text(encoding="utf-8", errors="replace")
    except OSError:
        return []
    return _parse_events(text.splitlines())


class _EventFeed:
    """The child's events as they arrive, complete lines only."""

    def __init__(self, path: Path) -> None:
        self._tail = _Tail(path)
        self._partial = ""

    def new(self) -> list[dict[str, Any]]:
        text = self._partial + self._tail.new_bytes().decode("utf-8", "replace")
        lines = text.split("\n")
        self._partial = lines.pop()
        return _parse_events(lines)


# ---------------------------------------------------------------- ending a run


def _dump_workers(sampler: Sampler) -> None:
    """Ask the stuck workers for their stacks (their faulthandler listens on SIGUSR1), then give
    them a moment to write; the main process dumps its own through dump_traceback_later."""
    sampler.sample()
    workers = sampler.workers()
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


def _margin(limit: float) -> float:
    """How long before the kill the child dumps its stacks."""
    return min(1.0, 0.2 * limit)


# ---------------------------------------------------------------- one run


def run_once(
    opts: Options, num_workers: int, strategy: str, watch: Watch | None = None
) -> tuple[IsolateRun, list[dict[str, Any]]]:
    """Start one child and sample it until it ends, stalls after a failure `watch` names, or reaches
    its time limit. Returns the run (not yet diagnosed: `cause` is None) and the child's events.

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
        cmd = [opts.python, "-c", CHILD_ENTRY, str(config_path)]
        hang = stalled = False
        stop_line: str | None = None
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
        sampler = Sampler(proc.pid)
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
                if stop_line is None:
                    stop_line = watch(output.new_bytes()) if watch is not None else None
                    if stop_line is not None:
                        last_progress = now
                # A worker that cannot pass a descriptor drops its batch, and the loader then waits
                # forever: stop once no batch came for a while after the output showed it.
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
        run = _make_run(
            num_workers=num_workers,
            strategy=strategy,
            events=events,
            output=output.tail(),
            returncode=None if (hang or stalled) else returncode,
            hang=hang,
            stalled=stalled,
            stop_line=stop_line or "",
            elapsed=elapsed,
            timeout=opts.timeout,
            startup_timeout=opts.startup_timeout,
            batches=opts.batches,
            processes=sampler.result(num_workers),
            shm_bytes=sampler.shm_peak if Path(SHM_DIR).is_dir() else None,
            started_wall=started_wall,
        )
        return run, events


def _make_run(
    *,
    num_workers: int,
    strategy: str,
    events: list[dict[str, Any]],
    output: str,
    returncode: int | None,
    hang: bool,
    stalled: bool,
    stop_line: str,
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
        error = f"{stop_line} (the loader stopped after {done} of {batches} batches)"
    elif hang and "loader" not in by_kind:
        error = f"hang while importing or calling the factory: nothing for {startup_timeout:g} s"
    elif hang:
        error = f"hang: {done} of {batches} batches, then nothing until the {timeout:g} s limit"
    elif returncode is not None and returncode < 0:
        error = f"the run's main process was killed by signal {signal_name(-returncode)}"
    elif not ok:
        last = [line for line in output.splitlines() if line.strip()]
        error = last[-1].strip() if last else f"exited with code {returncode} and no output"
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
        batch_bytes=int_or_none(first.get("batch_bytes")),
        peak_rss=max(rss) if rss else None,
        max_fds=max(fds) if fds else None,
        fd_limit=int_or_none(start.get("fd_limit")),
        shm_bytes=shm_bytes,
        returncode=returncode,
        processes=processes,
        stack=stack_dump(output),
        output=output,
    )


def int_or_none(value: Any) -> int | None:
    return int(value) if isinstance(value, (int, float)) else None


def signal_name(num: int) -> str:
    try:
        return signal.Signals(num).name
    except ValueError:
        return str(num)
