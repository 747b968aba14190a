"""Failures no single line states, read from what a rank's metric lines say over time.

A run whose step waits on its DataLoader most of the time, whose loss jumps by orders of magnitude
and stays there, or whose loss turns NaN and stays NaN, prints no error: its metric lines are the
evidence. Which cause each shape stands for is library data (`data_wait_share`, `loss_jump`,
`loss_nonfinite` on the cause; a cause that stands for an unknown failure, `fallback`, answers only
when no other cause claims the shape), the running figures come from the reader (`RankProgress`:
summed data and step times, the loss's minimum and largest jump, where it turned non-finite).
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from dataclasses import dataclass

from trainmedic.catalog import Library
from trainmedic.model import Cause, RankProgress

MIN_TIMED = 3  # metric lines with both times before a share means anything
RECOVERED = 10.0  # a loss back within this factor of its earlier minimum has recovered
NONFINITE_LINES = 2  # metric lines in a row, to the last, before a non-finite loss is where the run ended
VANISHED_LINES = 2  # metric lines in a row at exactly 0, to the last, before a loss has vanished


@dataclass(frozen=True)
class Pattern:
    cause: str
    progress: RankProgress
    line: int
    text: str
    why: str
    failed: bool  # False: it happened and went away (a note, not a failure)


def _claiming(library: Library) -> Iterator[Cause]:
    """The library's causes, those that stand for an unknown failure last."""
    causes = list(library.causes())
    yield from (c for c in causes if not c.fallback)
    yield from (c for c in causes if c.fallback)


Run = tuple[int, str, int]  # (line, text, metric lines since) of a trailing run of one loss shape


def _earliest_run(library: Library, progress: dict[int | None, RankProgress], claims: Callable[[Cause], bool],
                  run: Callable[[RankProgress], Run | None], at_least: int) -> tuple[Cause, RankProgress, Run] | None:
    """The first cause that claims a shape, and the rank whose trailing run of it (to the last metric
    line, at least `at_least` lines long) started earliest."""
    cause = next((c for c in _claiming(library) if claims(c)), None)
    stuck = [(p, r) for p in progress.values() if (r := run(p)) is not None and r[2] >= at_least]
    if cause is None or not stuck:
        return None
    first, r = min(stuck, key=lambda pr: (pr[0].path, pr[1][0]))
    return cause, first, r


def _never_finite_or_run(p: RankProgress) -> Run | None:
    """The rank's trailing non-finite run when it is long enough, or when the rank never printed a finite loss."""
    run = p.nonfinite
    if run is None or (run[2] < NONFINITE_LINES and p.loss_min is not None):
        return None
    return run


def nonfinite(library: Library, progress: dict[int | None, RankProgress]) -> Pattern | None:
    """The rank whose loss turned NaN or Inf earliest and never came back, over two metric lines or
    more, for the first cause that claims the shape. A loss that came back finite was one bad batch,
    not this; one last line alone may be that batch too, unless the rank never printed a finite loss
    at all: then nothing says it ever trained."""
    found = _earliest_run(library, progress, lambda c: c.loss_nonfinite, _never_finite_or_run, 1)
    if found is None:
        return None
    cause, first, (line, text, _) = found
    why = (f"the loss turned non-finite at {first.path}:{line} and every later metric line of "
           + ("the run" if first.rank is None else f"rank {first.rank}")
           + " kept it so: training went on computing nothing")
    return Pattern(cause.full_id, first, line, text, why, failed=True)


def vanished(library: Library, progress: dict[int | None, RankProgress]) -> Pattern | None:
    """The rank whose loss fell straight from a real value to exactly 0 and stayed 0 for the last
    VANISHED_LINES metric lines or more: nothing contributes to it any more (every label masked, a
    skipped or replaced loss). A loss that decreased to 0 by degrees is printed rounded, not this."""
    found = _earliest_run(library, progress, lambda c: c.loss_vanished, lambda p: p.vanished, VANISHED_LINES)
    if found is None:
        return None
    cause, first, (line, text, n) = found
    why = (f"the loss fell straight to exactly 0 at {first.path}:{line} and stayed 0 for {n} metric lines to the "
           "end: nothing trains any more (every label masked or ignored, or a loss replaced by 0)")
    return Pattern(cause.full_id, first, line, text, why, failed=True)


def starved(library: Library, progress: dict[int | None, RankProgress]) -> Pattern | None:
    """The rank whose steps spent the largest share waiting for data, if at or above the cause's share."""
    for cause in _claiming(library):
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


def loss_jumped(library: Library, progress: dict[int | None, RankProgress], finished: bool = False) -> Pattern | None:
    """The largest jump of a rank's loss over its earlier minimum, if at or above the cause's factor. In a
    run that says it finished (`finished`), the jump stopped nothing: its loss is noisy or high."""
    for cause in _claiming(library):
        if cause.loss_jump is None:
            continue
        jumps = [p for p in progress.values() if p.spike is not None and p.spike[2] >= cause.loss_jump]
        if not jumps:
            continue
        worst = max(jumps, key=lambda p: p.spike[2] if p.spike else 0.0)
        assert worst.spike is not None and worst.loss_min is not None and worst.loss_last is not None
        line, text, ratio = worst.spike
        # (a loss ending at 0 is back at its minimum; one ending no higher than its first figure is back where
        # training began: the jump was measured from one low batch of a noisy per-batch loss, and nothing diverged)
        back = worst.loss_last <= RECOVERED * worst.loss_min or (
            worst.loss_first is not None and worst.loss_last <= worst.loss_first)
        # (the minimum is the run's, later than the jump when the loss went lower after it: a 0 it reached
        # then is no figure the jump was measured from)
        why = (f"the loss jumped to {ratio:,.0f} times its earlier minimum"
               + (f" ({worst.loss_min:g})" if worst.loss_min > 0 else "")
               + (f" and came back ({worst.loss_last:g} at the end)" if back
                  else f" and stayed up ({worst.loss_last:g} at the end)"))
        return Pattern(cause.full_id, worst, line, text, why, failed=not back and not finished)
    return None
