"""How sure a verdict is, as a probability. The numbers are documented in docs/confidence.md and
checked for calibration against the labelled corpus (tests/reason/test_calibration.py).

Evidence strength is the noisy-OR of the distinct fingerprints that matched (each weight is how often
that line alone names the right cause). An ambiguous signal (a SIGKILL, "exited unexpectedly")
names *that something happened* but not why, so it is discounted; a confirming record (a kernel
OOM kill for the same pid, a probe fact) lifts it; a competing failure that cannot be ordered
before or after the primary takes a share.
"""

from __future__ import annotations

AMBIGUOUS_FACTOR = 0.75
CONFIRMED_FLOOR = 0.9
UNORDERED_PENALTY = 0.5  # share taken by a competitor whose order relative to the primary is unknown
ORDERED_PENALTY = 0.1  # share taken by a competitor that clearly came later
# Only collateral failures seen: the primary id is then a symptom, almost never the root cause, so its
# probability of being the answer is low, whatever we know about *where* the cause is.
CASCADE_ONLY = {1: 0.15, 2: 0.1}
CASCADE_NO_SUSPECT = 0.05
HANG_WITH_LAGGARD = 0.75
HANG_PLAIN = 0.55


def clamp(p: float) -> float:
    return max(0.05, min(0.99, p))


def primary(strength: float, *, ambiguous: bool, confirmed: bool,
            unordered: list[float], later: list[float]) -> float:
    p = strength
    if ambiguous and not confirmed:
        p *= AMBIGUOUS_FACTOR
    if confirmed:
        p = max(p, CONFIRMED_FLOOR)
    for w in unordered:
        p *= 1.0 - UNORDERED_PENALTY * w
    for w in later:
        p *= 1.0 - ORDERED_PENALTY * w
    return clamp(p)


def cascade_only(suspects: int) -> float:
    return clamp(CASCADE_ONLY.get(suspects, CASCADE_NO_SUSPECT))


def hang(laggard: bool) -> float:
    return clamp(HANG_WITH_LAGGARD if laggard else HANG_PLAIN)


def alternative(strength: float, primary_confidence: float) -> float:
    """An alternative never outranks the primary: it gets its strength's share of what the primary
    leaves, so a stronger alternative always reads as likelier than a weaker one."""
    return clamp(strength * (1.0 - primary_confidence) if primary_confidence < 0.99 else 0.05)
