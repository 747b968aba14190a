"""`trainmedic watch --follow`: diagnose growing log files while the job that writes them runs.

The job is not ours (a scheduler started it, maybe on another host), so there is nothing to pass
through or to signal: the diagnoses are this command's output, on stdout. With `--pid` the watchdog
can still take stacks, of that process tree, when the logs stop growing.
"""

from __future__ import annotations

import signal
import time
from collections.abc import Callable
from dataclasses import dataclass
from types import FrameType

from trainmedic.cli.env import Env
from trainmedic.live import output
from trainmedic.live.follow import Follower
from trainmedic.live.hang import inspect
from trainmedic.live.session import LiveOptions, LiveSession
from trainmedic.live.stacks import collect, find_py_spy
from trainmedic.live.watchdog import watchdog_line
from trainmedic.model import Diagnosis, ExitCode

WATCHDOG_STREAM = "<watchdog>"
MAX_UNSCANNED = 2.0


@dataclass(frozen=True, kw_only=True)
class WatchOptions(LiveOptions):
    paths: list[str]
    interval: float = 0.25
    pid: int | None = None
    exit_on_failure: bool = False


class Watcher(LiveSession[WatchOptions]):
    """Log files followed as they grow; diagnoses on stdout."""

    def __init__(self, opts: WatchOptions, env: Env, clock: Callable[[], float] = time.monotonic) -> None:
        super().__init__(opts, env, clock)
        self.follower = Follower(opts.paths, self.analysis, say=self._say, on_data=self._on_data)
        self.stop = False
        self.unscanned = False

    def _run(self) -> int:
        # Ctrl-C and SIGTERM end the watch normally: the final diagnosis is the point of it.
        self._install_signals((signal.SIGINT, signal.SIGTERM), self._on_signal)
        try:
            self._loop()
        finally:
            self._restore_signals()
            self.follower.close()
        return self._final()

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
                if self._update(now) and self.opts.exit_on_failure:
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
        """A failure was printed already: a quiet log after it is the job winding down, not a hang."""
        return self.printed is not None and self.printed[0] == "failure"

    def _live_title(self) -> str:
        return f"{output.BANNER} (following {len(self.follower.followed)} file(s))"

    def _show(self, d: Diagnosis, title: str) -> None:
        output.render(d, self.env.stdout, fmt=self.opts.fmt, color=self.env.stdout_isatty, title=title)

    def _on_hang(self, now: float) -> None:
        stalled = self.watchdog.stalled_for(now)
        if self.opts.pid is not None:
            self._say(f"the logs stopped growing {stalled:.1f} s ago: taking the stacks of pid {self.opts.pid}")
            stacks = collect(self.opts.pid, py_spy=find_py_spy(self.env.environ), stack_dir=None)
            self.hang_report = inspect(stacks, stalled)
            line = self.hang_report.line()
        else:
            line = watchdog_line(stalled, "the logs stopped growing (pass --pid to take the job's stacks)")
        self._record_hang(WATCHDOG_STREAM, line, force=False)

    def _final(self) -> int:
        d = self._final_diagnosis()
        if self.metrics is not None:
            self.metrics.set_verdict(d)
        self._conclude(d, f"{output.FINAL_BANNER} ({len(d.inputs)} input(s))")
        return ExitCode.HEALTHY if d.verdict == "healthy" else ExitCode.FOUND

    def _on_signal(self, signum: int, frame: FrameType | None) -> None:
        self.stop = True
