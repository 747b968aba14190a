"""Failures no single line states, read from what a rank's metric lines say over time.

A run whose step waits on its DataLoader most of the time, or whose loss jumps by orders of magnitude
and stays there, prints no error: its metric lines are the evidence. The thresholds are library data
(`data_wait_share`, `loss_jump` on the cause), the running figures come from the reader
(`RankProgress`: summed data and step times, the loss's minimum and largest jump).
"""

from __future__ import annotations

from dataclasses import dataclass

from trainmedic.catalog import Library
from trainmedic.model import RankProgress

MIN_TIMED = 3  # metric lines with both times before a share means anything
RECOVERED = 10.0  # a loss back within this factor of its earlier minimum has recovered


@dataclass(frozen=True)
class Pattern:
    cause: str
    progress: RankProgress
    line: int
    text: str
    why: str
    failed: bool  # False: it happened and went away (a note, not a failure)


def starved(library: Library, progress: dict[int | None, RankProgress]) -> Pattern | None:
    """The rank whose steps spent the largest share waiting for data, if at or above the cause's share."""
    for cause in library.causes():
        if cause.data_wait_share is None:
            continue
        timed = [p for p in progress.values() if p.timed >= MIN_TIMED and p.step_time > 0]
        if not timed:
            continue
        worst = max(timed, key=lambda p: p.data_time / p.step_time)
        share = worst.data_time / worst.step_time
        if share >= cause.data_wait_share:
            why = (f"waiting for data took {share:.0%} of step time over {worst.timed} timed steps "
                   f"({worst.data_time:.1f} s of {worst.step_time:.1f} s): the GPU waits on the input pipeline")
            return Pattern(cause.full_id, worst, worst.line, worst.text, why, failed=True)
    return None


def loss_jumped(library: Library, progress: dict[int | None, RankProgress]) -> Pattern | None:
    """The largest jump of a rank's loss over its earlier minimum, if at or above the cause's factor."""
    for cause in library.causes():
        if cause.loss_jump is None:
            continue
        jumps = [p for p in progress.values() if p.spike is not None and p.spike[2] >= cause.loss_jump]
        if not jumps:
            continue
        worst = max(jumps, key=lambda p: p.spike[2] if p.spike else 0.0)
        assert worst.spike is not None and worst.loss_min is not None and worst.loss_last is not None
        line, text, ratio = worst.spike
        back = worst.loss_last < RECOVERED * worst.loss_min
        why = (f"the loss jumped to {ratio:,.0f} times its earlier minimum ({worst.loss_min:g})"
               + (f" and came back ({worst.loss_last:g} at the end)" if back
                  else f" and stayed up ({worst.loss_last:g} at the end)"))
        return Pattern(cause.full_id, worst, line, text, why, failed=not back)
    return None
