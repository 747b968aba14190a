"""What `trainmedic run` and `trainmedic watch` share: a live session over growing streams.

A session owns the streams' analysis, the hang watchdog, the metrics endpoint and a clock, and it
takes every diagnosis through the same two steps:
  - update (while the job runs): diagnose what was scanned if anything new matched, and print the
    diagnosis when it says something new (an initiating failure, or a hang);
  - final (once the streams end): the post-mortem diagnosis, printed under the final banner and
    written to --report.
`Job` (live/job.py) runs the command and reads its pipes; `Watcher` (live/watcher.py) follows files.
"""

from __future__ import annotations

import contextlib
import signal
import threading
import time
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from pathlib import Path
from types import FrameType
from typing import Any, Generic, TypeVar

from trainmedic.catalog import Library
from trainmedic.cli.env import Env
from trainmedic.live import output
from trainmedic.live.hang import HangReport, apply
from trainmedic.live.streams import LiveAnalysis
from trainmedic.live.watchdog import Watchdog
from trainmedic.model import Diagnosis, ExitCode, Fact
from trainmedic.report.jsonout import write_file

MAX_BACKOFF = 2.0  # reasoning is rate-limited to at most this long a pause (see `backoff`)


@dataclass(frozen=True, kw_only=True)
class LiveOptions:
    """The options of a live diagnosis, whatever feeds it."""

    library: Library
    hang_timeout: float | None = None
    startup_timeout: float | None = None
    metrics_port: int | None = None
    report: Path | None = None
    fmt: str = "text"
    facts: tuple[Fact, ...] = ()
    notify: str | None = None  # post the final diagnosis here (live/notify.py)
    notify_format: str = "auto"


OptionsT = TypeVar("OptionsT", bound=LiveOptions)


class LiveSession(Generic[OptionsT]):
    """The clock, the analysis, the watchdog and the metrics of one live diagnosis, and its update and
    final steps; subclasses feed the streams and say where diagnoses are printed (`_show`)."""

    # After a reasoning pass that took t seconds, the next waits min(MAX_BACKOFF, backoff * t): huge,
    # chatty logs are not re-reasoned on every scan. 0 reasons after every scan that found something.
    backoff = 0.0

    def __init__(self, opts: OptionsT, env: Env, clock: Callable[[], float] = time.monotonic) -> None:
        self.opts = opts
        self.env = env
        self.clock = clock
        self.analysis = LiveAnalysis(opts.library, facts=opts.facts)
        now = clock()
        self.watchdog = Watchdog(opts.hang_timeout, now, opts.startup_timeout)
        self.metrics: Any = None
        self.hang_report: HangReport | None = None
        self.printed: tuple[str, str | None, int | None] | None = None  # output.key of the last printed
        self.current: Diagnosis | None = None
        self.last_flush = now
        self.next_reason_at = 0.0
        self.reason_pending = False  # something new matched, but reasoning waits for its back-off
        self._old_handlers: dict[int, Any] = {}

    # ------------------------------------------------------------ the whole session

    def run(self) -> int:
        """Serve the metrics if asked, then the session itself (`_run`); the exit status."""
        if self.opts.metrics_port is not None:
            from trainmedic.live.metrics import listen

            self.metrics = listen(self.opts.metrics_port, self.env, self._since_progress, self._since_output)
            if self.metrics is None:
                return ExitCode.USAGE
            self._say(f"metrics at {self.metrics.url}")
        try:
            return self._run()
        finally:
            if self.metrics is not None:
                self.metrics.close()

    def _run(self) -> int:
        raise NotImplementedError

    # ------------------------------------------------------------ what subclasses decide

    def _show(self, d: Diagnosis, title: str) -> None:
        """Print one diagnosis under a banner titled `title`."""
        raise NotImplementedError

    def _live_title(self) -> str:
        """The banner of a diagnosis printed while the job runs."""
        raise NotImplementedError

    # ------------------------------------------------------------ update and final

    def _update(self, now: float, force: bool = False) -> bool:
        """Diagnose what was scanned, if anything new matched; print it if it says something new.

        True when it printed a diagnosis. `force` reasons now, changed or not, back-off or not.
        """
        if self.metrics is not None:
            self.metrics.count(self.analysis.new_matches())
        if not force and not self.analysis.changed():
            self.reason_pending = False
            return False
        if not force and now < self.next_reason_at:
            self.reason_pending = True
            return False
        started = self.clock()
        d = self.analysis.diagnose(alive=True)
        self.next_reason_at = self.clock() + min(MAX_BACKOFF, self.backoff * (self.clock() - started))
        self.reason_pending = False
        if self.hang_report is not None:
            d = apply(d, self.hang_report, self.opts.library)
        self.current = d
        if self.metrics is not None:
            self.metrics.set_verdict(d)
        if self._printable(d) and output.key(d) != self.printed:
            self.printed = output.key(d)
            self._show(d, self._live_title())
            return True
        return False

    def _printable(self, d: Diagnosis) -> bool:
        """Worth printing while the job runs: a hang, or a failure that starts a cascade (not collateral)."""
        if d.primary is None:
            return False
        if d.verdict == "hang":
            return True
        return d.verdict == "failure" and self.analysis.role(d.primary.id) == "initiating"

    def _record_hang(self, stream: str, line: str, *, force: bool) -> None:
        """The watchdog's line into the analysis (where the library's hang fingerprint matches it) and
        onto stderr; then a new diagnosis."""
        self.analysis.inject(stream, line)
        self._say_raw(line)
        self.watchdog.fire(self.clock())
        if self.metrics is not None:
            self.metrics.hangs.inc()
        self._update(self.clock(), force=force)

    def _final_diagnosis(self) -> Diagnosis:
        """End every stream: the post-mortem diagnosis, with what the stacks said about a hang."""
        d = self.analysis.finish()
        if self.hang_report is not None:
            d = apply(d, self.hang_report, self.opts.library)
        return d

    def _conclude(self, d: Diagnosis, title: str) -> None:
        """Print the final diagnosis, write it to --report and post it to --notify (once, here: the
        training is over, so a slow webhook delays only this command's exit, within notify's bound)."""
        self._show(d, title)
        if self.opts.report is not None:
            try:
                write_file(d, self.opts.report)
            except OSError as exc:
                self.env.error(f"--report {self.opts.report}: cannot write: {exc.strerror or exc}")
        if self.opts.notify is not None and d.verdict != "healthy":
            from trainmedic.live import notify

            sent = notify.post(d, self.opts.notify, self.opts.notify_format)
            if not sent.ok:
                self._say(f"--notify: not delivered after {sent.attempts} attempt(s): {sent.detail}")

    # ------------------------------------------------------------ talking and clocks

    def _say(self, message: str) -> None:
        self._say_raw(f"trainmedic: {message}")

    def _say_raw(self, line: str) -> None:
        with contextlib.suppress(BrokenPipeError, ValueError):
            self.env.stderr.write(f"{line}\n")
            self.env.stderr.flush()

    def _since_progress(self) -> float:
        return self.watchdog.since_progress(self.clock())

    def _since_output(self) -> float:
        return self.clock() - self.watchdog.last_output

    # ------------------------------------------------------------ signals

    def _install_signals(self, signals: Iterable[int], handler: Callable[[int, FrameType | None], None]) -> None:
        if threading.current_thread() is not threading.main_thread():
            return  # signal handlers can only be set from the main thread (in-process tests)
        for sig in signals:
            self._old_handlers[sig] = signal.signal(sig, handler)

    def _restore_signals(self) -> None:
        for sig, old in self._old_handlers.items():
            signal.signal(sig, old)
        self._old_handlers.clear()
