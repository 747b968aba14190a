"""When is a live run stuck? No output for the hang timeout, or progress lines that stopped advancing.

A hang prints nothing, so silence is the signal. Output alone is not progress, though: a job whose
ranks repeat the same warning while the training loop is blocked still "prints". Once a run has
shown progress lines (steps, tqdm counts, HF loss dicts), a progress line that is new counts as
progress; repeated identical lines and tqdm redraws of the same count do not.

Before the first progress line the job is starting (imports, rendezvous, loading data and weights),
which routinely takes longer than a step, so silence gets a longer allowance there (`startup`).
"""

from __future__ import annotations

import re
from collections import deque

from trainmedic.scan.database import PROGRESS
from trainmedic.util import linear

WATCHDOG_PREFIX = "[trainmedic] watchdog: no progress for"
_PROGRESS = linear.compile_bytes("|".join(f"(?:{p.regex})" for p in PROGRESS if p.kind == "progress"))
_TQDM_COUNT = re.compile(rb"(\d{1,18}(?!\d))/(\d{1,18}(?!\d)) \[")
_RECENT = 256  # progress lines remembered, to tell a new step from a repeated line
TAIL = 4 << 10  # bytes at the end of each chunk read for progress
RECENT_LINES = 16  # of its progress lines, the newest this many are compared with what came before
STARTUP_FACTOR = 5  # default start-up allowance: this many hang timeouts


class Watchdog:
    """Tracks output and progress times; says when the run has been stalled for `timeout` seconds."""

    def __init__(self, timeout: float | None, now: float, startup: float | None = None) -> None:
        self.timeout = timeout if timeout and timeout > 0 else None
        self.startup = startup if startup and startup > 0 else (
            STARTUP_FACTOR * self.timeout if self.timeout is not None else None)
        self.started = now
        self.last_output = now
        self.last_progress: float | None = None
        self.fired_at: float | None = None
        self.fires = 0
        self.resumed = False  # progress came back after the watchdog fired
        self._recent: deque[bytes] = deque(maxlen=_RECENT)
        self._recent_set: set[bytes] = set()

    def observe(self, data: bytes, now: float) -> None:
        """Note new output (a chunk as read; a line split across two chunks only delays its progress)."""
        if not data:
            return
        self.last_output = now
        advanced = False
        # Only the newest progress lines of a chunk decide whether the run advanced: reading every
        # line of a fast job's output in Python would slow the job it watches (`run` passes it on).
        cut = data.rfind(b"\n", 0, max(0, len(data) - TAIL))
        data = data[cut + 1 :] if len(data) > TAIL else data
        for m in list(_PROGRESS.finditer(data))[-RECENT_LINES:]:
            start = data.rfind(b"\n", 0, m.start()) + 1
            end = data.find(b"\n", m.end())
            line = data[start : end if end >= 0 else len(data)]
            seg = line[line.rfind(b"\r", 0, m.start() - start) + 1 :] if b"\r" in line else line
            count = _TQDM_COUNT.search(seg)
            key = count.group(0) if count else seg.strip()[:300]
            if key in self._recent_set:
                continue
            if len(self._recent) == self._recent.maxlen:
                self._recent_set.discard(self._recent[0])
            self._recent.append(key)
            self._recent_set.add(key)
            advanced = True
        if advanced:
            self.last_progress = now
            if self.fired_at is not None:
                self.fired_at = None
                self.resumed = True
        elif self.fired_at is not None and self.last_progress is None:
            # A run that never showed progress lines re-arms on any output.
            self.fired_at = None
            self.resumed = True

    def stalled_for(self, now: float) -> float:
        """Seconds without progress (or, before any progress line, without output)."""
        ref = self.last_progress if self.last_progress is not None else self.last_output
        return max(0.0, now - ref)

    def since_progress(self, now: float) -> float:
        return now - (self.last_progress if self.last_progress is not None else self.started)

    def _quiet_limit(self) -> float | None:
        if self.timeout is None:
            return None
        if self.last_progress is None and self.startup is not None:
            return max(self.timeout, self.startup)
        return self.timeout

    def due(self, now: float) -> bool:
        """True once per stall: the watchdog should inspect the job now."""
        limit = self._quiet_limit()
        if limit is None or self.timeout is None or self.fired_at is not None:
            return False
        quiet = now - self.last_output >= limit
        no_progress = self.last_progress is not None and now - self.last_progress >= self.timeout
        return quiet or no_progress

    def fire(self, now: float) -> None:
        self.fired_at = now
        self.fires += 1

    def next_check(self, now: float) -> float | None:
        """Seconds until due() can first become true, for the event loop's timeout."""
        limit = self._quiet_limit()
        if limit is None or self.timeout is None or self.fired_at is not None:
            return None
        times = [self.last_output + limit]
        if self.last_progress is not None:
            times.append(self.last_progress + self.timeout)
        return max(0.0, min(times) - now)


def watchdog_line(stalled: float, detail: str = "", rank: int | None = None) -> str:
    """The line the library's training-hang/stalled-progress fingerprint matches."""
    prefix = f"[rank{rank}]: " if rank is not None else ""
    tail = f"; {detail}" if detail else ""
    return f"{prefix}{WATCHDOG_PREFIX} {stalled:.1f} s{tail}"
