"""`trainmedic watch --follow`: diagnose growing log files while the job that writes them runs.

The job is not ours (a scheduler started it, maybe on another host), so there is nothing to pass
through or to signal: the diagnoses are this command's output, on stdout. With `--pid` the watchdog
can still take stacks, of that process tree, when the logs stop growing.
"""

from __future__ import annotations

import contextlib
import signal
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from types import FrameType
from typing import Any

from trainmedic.catalog import Library
from trainmedic.cli.env import Env
from trainmedic.live import output
from trainmedic.live.analysis import LiveAnalysis
from trainmedic.live.follow import Follower
from trainmedic.live.hang import HangReport, apply, inspect
from trainmedic.live.stacks import collect, find_py_spy
from trainmedic.live.watchdog import Watchdog, watchdog_line
from trainmedic.model import Diagnosis, ExitCode

WATCHDOG_STREAM = "<watchdog>"
MAX_UNSCANNED = 2.0


@dataclass(frozen=True)
class WatchOptions:
    paths: list[str]
    library: Library
    interval: float = 0.25
    hang_timeout: float | None = None
    startup_timeout: float | None = None
    pid: int | None = None
    exit_on_failure: bool = False
    metrics_port: int | None = None
    report: Path | None = None
    fmt: str = "text"


class Watcher:
    def __init__(self, opts: WatchOptions, env: Env, clock: Callable[[], float] = time.monotonic) -> None:
        self.opts = opts
        self.env = env
        self.clock = clock
        self.analysis = LiveAnalysis(opts.library)
        self.watchdog = Watchdog(opts.hang_timeout, clock(), opts.startup_timeout)
        self.follower = Follower(opts.paths, self.analysis, say=self._say, on_data=self._on_data)
        self.metrics: Any = None
        self.hang_report: HangReport | None = None
        self.printed: tuple[str, str | None, int | None] | None = None
        self.stop = False
        self.unscanned = False
        self.last_flush = clock()
        self._old: dict[int, Any] = {}

    def run(self) -> int:
        if self.opts.metrics_port is not None:
            from trainmedic.live.metrics import listen

            self.metrics = listen(self.opts.metrics_port, self.env, self._since_progress, self._since_output)
            if self.metrics is None:
                return ExitCode.USAGE
            self._say(f"metrics at {self.metrics.url}")
        self._install()
        try:
            self._loop()
        finally:
            self._restore()
            self.follower.close()
        try:
            return self._final()
        finally:
            if self.metrics is not None:
                self.metrics.close()

    def _loop(self) -> None:
        first = True
        while not self.stop:
            got = self.follower.poll()
            now = self.clock()
            if first:
                first = False
                self._say(f"following {len(self.follower.followed)} file(s); Ctrl-C ends the watch")
            if got:
                self.unscanned = True
            if self.unscanned and (not got or now - self.last_flush >= MAX_UNSCANNED):
                self.analysis.flush()
                self.unscanned = False
                self.last_flush = now
                if self._update() and self.opts.exit_on_failure:
                    return
            if self.watchdog.due(now) and not self._failed():
                self._on_hang(now)
                if self.opts.exit_on_failure:
                    return
            deadline = self.clock() + self.opts.interval
            while not self.stop and self.clock() < deadline:
                time.sleep(min(0.05, self.opts.interval))

    def _on_data(self, data: bytes) -> None:
        self.watchdog.observe(data, self.clock())

    def _failed(self) -> bool:
        return self.printed is not None and self.printed[0] == "failure"

    def _update(self) -> bool:
        """Diagnose if something new matched; print it if it says something new. True once it found one."""
        if self.metrics is not None:
            self.metrics.count(self.analysis.new_matches())
        if not self.analysis.changed():
            return False
        d = self.analysis.diagnose(alive=True)
        if self.hang_report is not None:
            d = apply(d, self.hang_report, self.opts.library)
        if self.metrics is not None:
            self.metrics.set_verdict(d)
        printable = d.primary is not None and (
            d.verdict == "hang" or (d.verdict == "failure" and self.analysis.role(d.primary.id) == "initiating"))
        if printable and output.key(d) != self.printed:
            self.printed = output.key(d)
            output.render(d, self.env.stdout, fmt=self.opts.fmt, color=self.env.stdout_isatty,
                          title=f"{output.BANNER} (following {len(self.follower.followed)} file(s))")
            return True
        return False

    def _on_hang(self, now: float) -> None:
        stalled = self.watchdog.stalled_for(now)
        if self.opts.pid is not None:
            self._say(f"the logs stopped growing {stalled:.1f} s ago: taking the stacks of pid {self.opts.pid}")
            stacks = collect(self.opts.pid, py_spy=find_py_spy(self.env.environ), stack_dir=None)
            self.hang_report = inspect(stacks, stalled)
            line = self.hang_report.line()
        else:
            line = watchdog_line(stalled, "the logs stopped growing (pass --pid to take the job's stacks)")
        self.analysis.inject(WATCHDOG_STREAM, line)
        with contextlib.suppress(BrokenPipeError, ValueError):
            self.env.stderr.write(line + "\n")
            self.env.stderr.flush()
        self.watchdog.fire(self.clock())
        if self.metrics is not None:
            self.metrics.hangs.inc()
        self._update()

    def _final(self) -> int:
        d: Diagnosis = self.analysis.finish()
        if self.hang_report is not None:
            d = apply(d, self.hang_report, self.opts.library)
        if self.metrics is not None:
            self.metrics.set_verdict(d)
        output.render(d, self.env.stdout, fmt=self.opts.fmt, color=self.env.stdout_isatty,
                      title=f"{output.FINAL_BANNER} ({len(d.inputs)} input(s))")
        if self.opts.report is not None:
            try:
                output.write_report(d, self.opts.report)
            except OSError as exc:
                self.env.error(f"--report {self.opts.report}: cannot write: {exc.strerror or exc}")
        return ExitCode.HEALTHY if d.verdict == "healthy" else ExitCode.FOUND

    def _say(self, message: str) -> None:
        with contextlib.suppress(BrokenPipeError, ValueError):
            self.env.stderr.write(f"trainmedic: {message}\n")
            self.env.stderr.flush()

    def _since_progress(self) -> float:
        return self.watchdog.since_progress(self.clock())

    def _since_output(self) -> float:
        return self.clock() - self.watchdog.last_output

    # Ctrl-C and SIGTERM end the watch normally: the final diagnosis is the point of it.
    def _install(self) -> None:
        if threading.current_thread() is not threading.main_thread():
            return
        for sig in (signal.SIGINT, signal.SIGTERM):
            self._old[sig] = signal.signal(sig, self._on_signal)

    def _on_signal(self, signum: int, frame: FrameType | None) -> None:
        self.stop = True

    def _restore(self) -> None:
        for sig, old in self._old.items():
            signal.signal(sig, old)
        self._old.clear()
