"""Run a training command under trainmedic: pass its output through, diagnose it as it happens.

One thread, one event loop: the command's stdout and stderr are read as they come (non-blocking
pipes), written through unchanged and at once, joined line by line into one analysis stream (as
`2>&1 > log` would, minus mid-line interleaving), and scanned when the output goes quiet for a
moment. That keeps the failure-to-diagnosis latency near the quiet period (0.25 s) plus one
reasoning pass, without re-reading anything. The watchdog, the metrics and the final report hang
off the same loop.
"""

from __future__ import annotations

import os
import selectors
import shutil
import signal
import subprocess
import tempfile
import time
from collections import deque
from collections.abc import Callable
from concurrent.futures import Future, ThreadPoolExecutor
from dataclasses import dataclass, replace
from pathlib import Path
from types import FrameType
from typing import TextIO

from trainmedic.cli.env import Env
from trainmedic.live import output
from trainmedic.live.hang import inspect
from trainmedic.live.session import LiveOptions, LiveSession
from trainmedic.live.stacks import STACK_DIR_ENV, collect, find_py_spy, process_tree
from trainmedic.model import Diagnosis
from trainmedic.util.procs import signal_group, signal_process, start_group

OUTPUT = "<output>"  # the analysis stream: the command's stdout and stderr, joined by lines
QUIET = 0.25  # seconds of silence after which received lines are scanned
MAX_UNSCANNED = 0.5  # a chatty command is scanned at least this often anyway, except ...
HOLD = 0.1  # ... its lines younger than this: a traceback being written is not cut in two
DRAIN_QUIET = 0.3  # after the command exits: stop reading once its pipes were quiet this long
DRAIN_MAX = 5.0  # ... or after this long (orphaned workers may hold the pipes open)
KILL_GRACE = 5.0  # --on-hang kill: SIGTERM, then SIGKILL after this long
MAX_PENDING_LINE = 64 * 1024  # a line longer than this (a tqdm bar without newline) is passed on as is
FORWARDED = (signal.SIGINT, signal.SIGTERM, signal.SIGHUP)


@dataclass(frozen=True, kw_only=True)
class JobOptions(LiveOptions):
    argv: list[str]
    on_hang: str = "keep"  # keep | kill


class Passthrough:
    """The command's bytes to one of our streams, unchanged and flushed at once."""

    def __init__(self, text: TextIO) -> None:
        self.text = text
        self.buffer = getattr(text, "buffer", None)
        self.broken = False
        self.at_line_start = True

    def write(self, data: bytes) -> None:
        if self.broken or not data:
            return
        try:
            if self.buffer is not None:
                self.text.flush()
                self.buffer.write(data)
                self.buffer.flush()
            else:
                self.text.write(data.decode(errors="replace"))
                self.text.flush()
        except (BrokenPipeError, ValueError):  # reader gone, or stream closed: keep running the job
            self.broken = True
        self.at_line_start = data.endswith(b"\n")

    def start_line(self) -> None:
        """Our own text starts on a fresh line, even when the command left half a line."""
        if not self.at_line_start:
            self.write(b"\n")


class LineMerger:
    """stdout and stderr joined at line boundaries, so a line of one never splits a line of the other."""

    def __init__(self) -> None:
        self._pending: dict[str, bytes] = {}

    def add(self, key: str, data: bytes) -> bytes:
        held = self._pending.get(key)
        if not held and data.endswith(b"\n"):  # the common case: whole lines, nothing to join or copy
            self._pending[key] = b""
            return data
        cut = data.rfind(b"\n") + 1
        if cut == 0 and len(held or b"") + len(data) > MAX_PENDING_LINE:
            cut = len(data)
        view = memoryview(data)
        self._pending[key] = (held + bytes(view[cut:])) if cut == 0 and held else bytes(view[cut:])
        if cut == 0:
            return b""
        return b"".join((held, view[:cut])) if held else bytes(view[:cut])  # one copy of the chunk

    def rest(self) -> bytes:
        """Unfinished lines at the end, each ended."""
        out = b"".join(v + b"\n" for v in self._pending.values() if v)
        self._pending.clear()
        return out


READ_SIZE = 1 << 20  # bytes per read of the child's output: few, large reads cost the job least
_F_SETPIPE_SZ = 1031  # Linux fcntl: the pipe's capacity


def _widen_pipe(fd: int) -> None:
    """A 1 MiB pipe instead of 64 KiB: the child blocks less often and each read carries more, so the
    per-read work (passing it on, progress, matching) is spread over 16 times more output."""
    try:
        import fcntl

        fcntl.fcntl(fd, _F_SETPIPE_SZ, READ_SIZE)
    except (ImportError, OSError):  # not Linux, or over /proc/sys/fs/pipe-max-size: keep the default
        pass


def exit_status(returncode: int) -> int:
    """A shell's view of the exit: a child killed by signal N exits 128+N."""
    return 128 - returncode if returncode < 0 else returncode


def describe_exit(returncode: int) -> str:
    if returncode < 0:
        try:
            name = signal.Signals(-returncode).name
        except ValueError:
            name = f"signal {-returncode}"
        return f"was killed by {name} (exit status {exit_status(returncode)})"
    return f"exited with code {returncode}"


class Job(LiveSession[JobOptions]):
    """One supervised command."""

    backoff = 5.0  # reasoning on a huge, chatty log: wait 5 times as long as the last pass took

    def __init__(self, opts: JobOptions, env: Env, clock: Callable[[], float] = time.monotonic) -> None:
        super().__init__(opts, env, clock)
        self.out = Passthrough(env.stdout)
        self.err = Passthrough(env.stderr)
        self.merger = LineMerger()
        self.proc: subprocess.Popen[bytes] | None = None
        self.last_data = self.last_flush
        # output not yet given to the analysis, as read: (time, stream, bytes). Joining the two streams
        # at line ends (a copy of every chunk) is left to the scan thread, off the pass-through path.
        self.pending: deque[tuple[float, str, bytes]] = deque()
        self.exit_at: float | None = None
        self.kill_at: float | None = None
        self.condemned: list[int] = []
        self.forwarded: list[int] = []
        self._told = 0  # forwarded signals already reported (the loop reports them, not the handler)
        self.py_spy = find_py_spy(env.environ)
        self.stack_dir: Path | None = None
        # Matching runs beside the forwarding: the job's output is passed on while the last stretch is
        # scanned (hyperscan releases the GIL). Only that thread touches the analysis while it runs;
        # the loop reasons and prints once it is done.
        self._matcher = ThreadPoolExecutor(max_workers=1, thread_name_prefix="trainmedic-scan")
        self._scanning: Future[None] | None = None

    # ------------------------------------------------------------ the whole run

    def _run(self) -> int:
        self.stack_dir = Path(tempfile.mkdtemp(prefix="trainmedic-stacks-"))
        child_env = {**self.env.environ, "PYTHONUNBUFFERED": "1", STACK_DIR_ENV: str(self.stack_dir)}
        try:
            try:
                self.proc = start_group(self.opts.argv, env=child_env)
            except FileNotFoundError:
                self.env.error(f"{self.opts.argv[0]}: command not found")
                return 127
            except OSError as exc:
                self.env.error(f"{self.opts.argv[0]}: cannot run: {exc.strerror or exc}")
                return 126
            if self.metrics is not None:
                self.metrics.running.set(1)
            self._install_signals(FORWARDED, self._forward)
            try:
                self._loop()
            finally:
                self._restore_signals()
                self._reap()
            try:
                return self._final()
            finally:
                self._matcher.shutdown(wait=True)
        finally:
            shutil.rmtree(self.stack_dir, ignore_errors=True)

    def _loop(self) -> None:
        proc = self.proc
        assert proc is not None and proc.stdout is not None and proc.stderr is not None
        sel = selectors.DefaultSelector()
        for f, name in ((proc.stdout, "out"), (proc.stderr, "err")):
            os.set_blocking(f.fileno(), False)
            _widen_pipe(f.fileno())
            sel.register(f.fileno(), selectors.EVENT_READ, name)
        try:
            while True:
                for key, _ in sel.select(self._timeout(self.clock())):
                    try:
                        data = os.read(key.fd, READ_SIZE)
                    except BlockingIOError:
                        continue
                    except OSError:
                        data = b""
                    if not data:
                        sel.unregister(key.fd)
                        continue
                    self._on_data(str(key.data), data, self.clock())
                now = self.clock()
                self._tell_signals()
                if self.exit_at is None and proc.poll() is not None:
                    self.exit_at = now
                if self.exit_at is not None and (
                    not sel.get_map()
                    or (now - self.last_data >= DRAIN_QUIET and now - self.exit_at >= DRAIN_QUIET)
                    or now - self.exit_at >= DRAIN_MAX
                ):
                    return
                self._maybe_scan(now)
                if self.exit_at is None:
                    if self.watchdog.due(now):
                        self._on_hang()
                    if self.kill_at is not None and now >= self.kill_at:
                        self._signal_tree(signal.SIGKILL)
                        self.kill_at = None
        finally:
            sel.close()

    def _timeout(self, now: float) -> float:
        waits = [0.5]
        if self._scanning is not None:
            waits.append(0.05)  # pick its result up soon
        if self.pending:
            waits.append(self.last_data + QUIET - now)
            waits.append(max(self.last_flush + MAX_UNSCANNED, self.pending[0][0] + HOLD) - now)
        if self.reason_pending:
            waits.append(self.next_reason_at - now)
        if self.exit_at is None:
            nxt = self.watchdog.next_check(now)
            if nxt is not None:
                waits.append(nxt)
            if self.kill_at is not None:
                waits.append(self.kill_at - now)
        return max(0.01, min(waits))

    # ------------------------------------------------------------ output

    def _on_data(self, name: str, data: bytes, now: float) -> None:
        (self.out if name == "out" else self.err).write(data)
        self.watchdog.observe(data, now)
        self.last_data = now
        self.pending.append((now, name, data))

    def _take(self, older_than: float | None) -> list[tuple[str, bytes]]:
        """The pending output received before `older_than` (else all), in order."""
        out = []
        while self.pending and (older_than is None or self.pending[0][0] < older_than):
            _, name, data = self.pending.popleft()
            out.append((name, data))
        return out

    def _feed(self, chunks: list[tuple[str, bytes]]) -> None:
        for name, data in chunks:
            lines = self.merger.add(name, data)
            if lines:
                self.analysis.feed(OUTPUT, lines)
        self.analysis.flush()

    def _scan(self, older_than: float | None = None) -> None:
        """Give the analysis the pending lines (those received before `older_than`, else all) and scan
        them now, after any scan still running beside the loop."""
        self._settle()
        self._feed(self._take(older_than))

    def _settle(self) -> bool:
        """Wait for the scan running beside the loop, if any; True if there was one."""
        running, self._scanning = self._scanning, None
        if running is None:
            return False
        running.result()  # its exception, if any, is the loop's
        return True

    def _maybe_scan(self, now: float) -> None:
        """Scan when the output pauses; in a stream that never pauses, every MAX_UNSCANNED s up to HOLD
        ago. The scan runs beside the loop; its diagnosis is made when it is done."""
        if self._scanning is not None:
            if not self._scanning.done():
                return
            self._settle()
            self.last_flush = now
            self._update(now)
            return
        if self.pending and now - self.last_data >= QUIET:
            chunks = self._take(None)
        elif self.pending and now - self.last_flush >= MAX_UNSCANNED and self.pending[0][0] < now - HOLD:
            chunks = self._take(now - HOLD)
        elif self.reason_pending and now >= self.next_reason_at:
            self._update(now)
            return
        else:
            return
        self._scanning = self._matcher.submit(self._feed, chunks)

    def _live_title(self) -> str:
        pid = self.proc.pid if self.proc is not None else 0
        return f"{output.BANNER} (pid {pid} still running)"

    def _show(self, d: Diagnosis, title: str) -> None:
        """Diagnoses go to stderr, on a line of their own after whatever the command left half-written."""
        self.err.start_line()
        if self.err.broken:
            return
        try:
            output.render(d, self.env.stderr, fmt=self.opts.fmt, color=self.env.stderr_isatty, title=title)
        except (BrokenPipeError, ValueError):
            self.err.broken = True

    def _say_raw(self, line: str) -> None:
        self.err.start_line()
        super()._say_raw(line)

    # ------------------------------------------------------------ hangs

    def _on_hang(self) -> None:
        assert self.proc is not None
        now = self.clock()
        stalled = self.watchdog.stalled_for(now)
        self._say(f"no progress for {stalled:.1f} s: taking the Python stacks of every process of the job")
        stacks = collect(self.proc.pid, py_spy=self.py_spy, stack_dir=self.stack_dir)
        report = inspect(stacks, stalled)
        self.hang_report = report
        self._scan()
        self._record_hang(OUTPUT, report.line(), force=True)
        if self.opts.on_hang == "kill":
            self._say(f"--on-hang kill: stopping the job (SIGTERM, SIGKILL after {KILL_GRACE:.0f} s)")
            self.condemned = [p.pid for p in process_tree(self.proc.pid)]
            self._signal_tree(signal.SIGTERM)
            self.kill_at = self.clock() + KILL_GRACE

    def _signal_tree(self, sig: int) -> None:
        """The job's process group and every process found in its tree (torchrun's workers have their own)."""
        assert self.proc is not None
        signal_group(self.proc.pid, sig)
        for pid in self.condemned:
            signal_process(pid, sig)

    # ------------------------------------------------------------ signals

    def _forward(self, signum: int, frame: FrameType | None) -> None:
        """Ctrl-C and kill reach the whole job; the command decides how to stop, we keep reading. A
        command that ignores them is not left running: the second one ends the whole job (SIGKILL)."""
        self.forwarded.append(signum)
        if self.proc is None:
            return
        if len(self.forwarded) == 1:
            signal_group(self.proc.pid, signum)
        else:
            self._signal_tree(signal.SIGKILL)
        # (what happened is said by the loop, not here: writing from a signal handler could interrupt
        # a write in progress on the same stream)

    def _tell_signals(self) -> None:
        """Say what the forwarded signals did, once each."""
        while self._told < len(self.forwarded):
            name = signal.Signals(self.forwarded[self._told]).name
            pid = self.proc.pid if self.proc is not None else 0
            if self._told == 0:
                self._say_raw(f"[trainmedic] passed {name} to the job (pid {pid}); waiting for it to exit. "
                              "Press Ctrl-C again to kill it at once (SIGKILL).")
            elif self._told == 1:
                self._say_raw(f"[trainmedic] {name} again: killed the job (SIGKILL to its process tree)")
            self._told += 1

    def _reap(self) -> None:
        """Wait for the command; then end what is left of its process group, as a batch scheduler would.

        Orphaned DataLoader workers would otherwise linger until they notice (up to 5 s), holding the
        pipes; processes that left the group on purpose (torchrun's workers, daemons) are not touched,
        except after --on-hang kill, which ends the whole tree.
        """
        assert self.proc is not None
        if self.condemned:  # --on-hang kill: nothing of the job survives
            self._signal_tree(signal.SIGKILL)
        try:
            self.proc.wait(timeout=KILL_GRACE if self.exit_at is None else 1.0)
        except subprocess.TimeoutExpired:
            self._signal_tree(signal.SIGKILL)
            self.proc.wait()
        signal_group(self.proc.pid, signal.SIGTERM)
        for f in (self.proc.stdout, self.proc.stderr):
            if f is not None:
                f.close()

    # ------------------------------------------------------------ the end

    def _final(self) -> int:
        assert self.proc is not None
        rc = self.proc.returncode
        self._scan()
        rest = self.merger.rest()
        if rest:
            self.analysis.feed(OUTPUT, rest)
        if self.metrics is not None:
            self.analysis.flush()
            self.metrics.count(self.analysis.new_matches())
        d = self._final_diagnosis()
        if self.hang_report is not None:
            if rc == 0 and d.verdict == "hang" and d.primary is not None:
                # The watchdog fired, then the command finished and succeeded: a slow stretch (a long
                # evaluation, a checkpoint save, a quiet last phase), not a hang.
                after = "progress resumed and " if self.watchdog.resumed else ""
                d = replace(d, verdict="healthy", primary=None, alternatives=(), notes=(
                    *d.notes, f"the watchdog fired after {self.hang_report.stalled:.1f} s without progress, "
                    f"but {after}the command exited 0"))
        elif rc != 0 and d.verdict == "healthy":
            d = replace(d, notes=(*d.notes, f"the command {describe_exit(rc)} without a failure trainmedic knows"))
        if self.metrics is not None:
            self.metrics.set_verdict(d)
            self.metrics.running.set(0)
            self.metrics.exit_code.set(exit_status(rc))
        self._conclude(d, f"{output.FINAL_BANNER} (the command {describe_exit(rc)})")
        return exit_status(rc)
