"""Python stacks of every process of a job, taken from outside while it hangs.

py-spy reads a process's memory (ptrace), so it works on a process that is stuck in C code and
never runs a Python signal handler. Where it cannot attach (no ptrace permission, an unsupported
Python), a process that runs trainmedic's guard has registered faulthandler on SIGUSR1, writing to
a file in TRAINMEDIC_STACK_DIR: the fallback signals it and reads that file. A process without the
guard is never signalled (SIGUSR1's default action would kill it).
"""

from __future__ import annotations

import contextlib
import json
import linecache
import os
import re
import shutil
import signal
import subprocess
import sys
import time
from collections.abc import Mapping, Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from pathlib import Path
from typing import Any

STACK_DIR_ENV = "TRAINMEDIC_STACK_DIR"  # where guarded processes write faulthandler dumps
PY_SPY_ENV = "TRAINMEDIC_PY_SPY"  # path of the py-spy binary (or a failing one, to test the fallback)
MAIN_THREAD_HEADER = "main-thread 0x"  # first line of a guard's stack file: which thread is main
DUMP_TIMEOUT = 10.0
MAX_FRAMES = 14  # innermost frames shown per thread; the outer ones are the program's entry
_FH_THREAD = re.compile(r"^(Current thread|Thread) (0x[0-9a-f]+) \(most recent call first\):", re.M)
_FH_FRAME = re.compile(r'^  File "(.*)", line (\d+) in (.*)$')


@dataclass(frozen=True)
class Frame:
    function: str
    path: str
    line: int
    code: str = ""  # the source line, when the file is readable here

    def where(self) -> str:
        return f"{self.function} ({short_path(self.path)}:{self.line})"


@dataclass(frozen=True)
class ThreadStack:
    name: str
    main: bool
    active: bool | None  # py-spy: running on a CPU (None when unknown)
    frames: tuple[Frame, ...]  # innermost first


@dataclass(frozen=True)
class ProcessInfo:
    pid: int
    ppid: int
    name: str  # the kernel's comm: DataLoader workers call themselves pt_data_worker
    cmdline: str
    rank: int | None
    local_rank: int | None


@dataclass(frozen=True)
class ProcessStacks:
    process: ProcessInfo
    threads: tuple[ThreadStack, ...]
    method: str  # "py-spy", "faulthandler" or "" when no stack could be taken
    error: str = ""

    def main_thread(self) -> ThreadStack | None:
        for t in self.threads:
            if t.main:
                return t
        return self.threads[-1] if self.threads else None


def short_path(path: str) -> str:
    """torch/utils/data/dataloader.py rather than the whole site-packages path."""
    p = path.replace("\\", "/")
    for marker in ("site-packages/", "dist-packages/"):
        if marker in p:
            return p.split(marker, 1)[1]
    m = re.search(r"/lib/python3\.\d+/(.*)", p)
    if m:
        return m.group(1)
    return p.rsplit("/", 1)[-1]


def _source(path: str, line: int) -> str:
    try:
        return linecache.getline(path, line).strip()
    except (OSError, UnicodeDecodeError):
        return ""


# ---------------------------------------------------------------- the process tree


def _env_int(environ: Mapping[str, str], key: str) -> int | None:
    value = environ.get(key, "")
    return int(value) if value.isdigit() else None


def process_tree(root: int) -> list[ProcessInfo]:
    """The root and all its descendants that are still alive, parents first."""
    import psutil

    try:
        top = psutil.Process(root)
        procs = [top, *top.children(recursive=True)]
    except psutil.Error:
        return []
    out: list[ProcessInfo] = []
    for p in procs:
        try:
            with p.oneshot():
                if p.status() == psutil.STATUS_ZOMBIE:
                    continue
                environ: dict[str, str] = {}
                with contextlib.suppress(psutil.Error):
                    environ = p.environ()
                out.append(ProcessInfo(
                    pid=p.pid, ppid=p.ppid(), name=p.name(), cmdline=" ".join(p.cmdline())[:300],
                    rank=_env_int(environ, "RANK"), local_rank=_env_int(environ, "LOCAL_RANK"),
                ))
        except psutil.Error:
            continue
    return out


# ---------------------------------------------------------------- py-spy


def find_py_spy(environ: Mapping[str, str] | None = None) -> str | None:
    """py-spy from $TRAINMEDIC_PY_SPY, next to this Python (a venv's bin), or on PATH."""
    env = os.environ if environ is None else environ
    if env.get(PY_SPY_ENV):
        return env[PY_SPY_ENV]
    beside = Path(sys.executable).parent / "py-spy"
    if beside.is_file() and os.access(beside, os.X_OK):
        return str(beside)
    return shutil.which("py-spy")


def parse_py_spy(data: Any, pid: int) -> tuple[ThreadStack, ...]:
    """Threads from `py-spy dump --json` output (a list of thread objects, frames innermost first)."""
    threads: list[ThreadStack] = []
    if not isinstance(data, list):
        return ()
    for t in data:
        if not isinstance(t, dict):
            continue
        frames = tuple(
            Frame(str(f.get("name", "?")), str(f.get("filename", "?")), int(f.get("line") or 0),
                  _source(str(f.get("filename", "")), int(f.get("line") or 0)))
            for f in t.get("frames") or [] if isinstance(f, dict)
        )
        name = str(t.get("thread_name") or t.get("thread_id") or "?")
        main = t.get("os_thread_id") == pid or name == "MainThread"
        active = t.get("active")
        threads.append(ThreadStack(name, main, bool(active) if active is not None else None, frames))
    return tuple(threads)


def dump_py_spy(pid: int, py_spy: str, timeout: float = DUMP_TIMEOUT) -> tuple[tuple[ThreadStack, ...], str]:
    """(threads, error): py-spy attaches for a moment, reads the stacks and lets the process go."""
    try:
        proc = subprocess.run([py_spy, "dump", "--json", "--pid", str(pid)], capture_output=True,
                              timeout=timeout, check=False)
    except subprocess.TimeoutExpired:
        return (), f"py-spy timed out after {timeout:.0f} s"
    except OSError as exc:
        return (), f"cannot run py-spy: {exc.strerror or exc}"
    if proc.returncode != 0:
        lines = [ln.strip() for ln in proc.stderr.decode(errors="replace").splitlines() if ln.strip()]
        err = next((ln for ln in lines if ln.startswith("Error")), lines[0] if lines else f"exit {proc.returncode}")
        return (), f"py-spy: {err}"
    try:
        return parse_py_spy(json.loads(proc.stdout), pid), ""
    except (ValueError, TypeError) as exc:
        return (), f"py-spy: unreadable output ({exc})"


# ---------------------------------------------------------------- faulthandler fallback


def parse_faulthandler(text: str) -> tuple[ThreadStack, ...]:
    """Threads from one faulthandler dump; the guard's header line says which one is the main thread."""
    main_ident = None
    for line in text.splitlines():
        if line.startswith(MAIN_THREAD_HEADER):
            main_ident = int(line[len("main-thread ") :].strip(), 16)
    heads = list(_FH_THREAD.finditer(text))
    threads: list[ThreadStack] = []
    for i, h in enumerate(heads):
        body = text[h.end() : heads[i + 1].start() if i + 1 < len(heads) else len(text)]
        frames = []
        for line in body.splitlines():
            m = _FH_FRAME.match(line)
            if m:
                frames.append(Frame(m.group(3), m.group(1), int(m.group(2)), _source(m.group(1), int(m.group(2)))))
            elif frames and not line.strip():
                break
        ident = int(h.group(2), 16)
        threads.append(ThreadStack(h.group(2), ident == main_ident, None, tuple(frames)))
    if main_ident is None and threads:  # no header: faulthandler lists the oldest thread (main) last
        last = threads[-1]
        threads[-1] = ThreadStack(last.name, True, None, last.frames)
    return tuple(threads)


def _catches_sigusr1(pid: int) -> bool:
    try:
        status = Path(f"/proc/{pid}/status").read_text()
    except OSError:
        return False
    m = re.search(r"^SigCgt:\s*([0-9a-f]+)", status, re.M)
    if m is None:
        return False
    return bool(int(m.group(1), 16) >> (signal.SIGUSR1 - 1) & 1)


def dump_faulthandler(pid: int, stack_dir: Path, timeout: float = 3.0) -> tuple[tuple[ThreadStack, ...], str]:
    """(threads, error) from the guard's faulthandler file, after a SIGUSR1; never signals an unguarded process."""
    path = stack_dir / f"{pid}.txt"
    if not path.is_file():
        return (), "no trainmedic guard in this process (no faulthandler on SIGUSR1)"
    if not _catches_sigusr1(pid):
        return (), "the process does not catch SIGUSR1"
    header = path.read_text(errors="replace").split("\n", 1)[0]
    before = path.stat().st_size
    try:
        os.kill(pid, signal.SIGUSR1)
    except OSError as exc:
        return (), f"cannot signal: {exc.strerror or exc}"
    deadline = time.monotonic() + timeout
    size, stable_since = before, time.monotonic()
    while time.monotonic() < deadline:
        time.sleep(0.05)
        now_size = path.stat().st_size
        if now_size != size:
            size, stable_since = now_size, time.monotonic()
        elif size > before and time.monotonic() - stable_since >= 0.15:
            break
    if size <= before:
        return (), "faulthandler wrote nothing"
    with path.open("rb") as fh:
        fh.seek(before)
        text = fh.read(size - before).decode(errors="replace")
    return parse_faulthandler(header + "\n" + text), ""


# ---------------------------------------------------------------- everything


def collect(root: int, *, py_spy: str | None, stack_dir: Path | None,
            timeout: float = DUMP_TIMEOUT) -> list[ProcessStacks]:
    """Stacks of the whole process tree under `root`, dumped in parallel, each bounded by `timeout`."""
    procs = process_tree(root)

    def one(info: ProcessInfo) -> ProcessStacks:
        errors = []
        if py_spy:
            threads, err = dump_py_spy(info.pid, py_spy, timeout)
            if threads:
                return ProcessStacks(info, threads, "py-spy")
            errors.append(err)
        else:
            errors.append("py-spy is not installed (pip install py-spy)")
        if stack_dir is not None:
            threads, err = dump_faulthandler(info.pid, stack_dir)
            if threads:
                return ProcessStacks(info, threads, "faulthandler")
            errors.append(err)
        return ProcessStacks(info, (), "", "; ".join(e for e in errors if e))

    if not procs:
        return []
    with ThreadPoolExecutor(max_workers=min(8, len(procs))) as pool:
        return list(pool.map(one, procs))


def format_stacks(stacks: Sequence[ProcessStacks], describe: Mapping[int, str]) -> list[str]:
    """One text block per process: who it is, how its stack was taken, every thread innermost first."""
    out = []
    for ps in stacks:
        if not ps.threads:
            continue
        lines = [f"stacks of {describe.get(ps.process.pid, f'pid {ps.process.pid}')} ({ps.method}):"]
        for t in sorted(ps.threads, key=lambda t: not t.main):
            lines.append(f"  thread {t.name}{' (main)' if t.main else ''}:")
            for f in t.frames[:MAX_FRAMES]:
                code = f"  `{f.code}`" if f.code else ""
                lines.append(f"    {f.where()}{code}")
            if len(t.frames) > MAX_FRAMES:
                lines.append(f"    ... {len(t.frames) - MAX_FRAMES} outer frame(s)")
        out.append("\n".join(lines))
    return out
