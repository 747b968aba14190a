"""Diagnose every corpus case and score the answers: top-1, top-3, initiating rank, healthy runs
called failures, failures called healthy, and calibration (is "80 %" right 80 % of the time?).

A case labelled with a mechanism the library lacks (`new: true`) is answered right only by an
unclassified failure: naming a known cause for it is wrong, calling it healthy is wrong.
"""

from __future__ import annotations

from collections import Counter, defaultdict
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Protocol

from trainmedic.api import Diagnoser, InputError, Named
from trainmedic.catalog import CALIBRATION, LIBRARY_DIR, Library, forget, load_library
from trainmedic.evaluate.corpus import Case, Split
from trainmedic.model import Diagnosis

UNCLASSIFIED = "unclassified-failure"  # the entry whose causes stand for failures no signature knows
# Answers a block of the isotonic map needs (chosen, with catalog.PSEUDO_ANSWERS, by the lowest
# calibration error on one half of the dev split's sources calibrated on the other, over six splits).
MIN_BLOCK = 25
MIN_MISTAKEN = 2  # a truth found behind an answer once is an anecdote; twice, a reading worth offering
MAX_MISTAKEN = 2  # the top 3 is the primary and two readings: more would only lengthen the list
BINS = 10


class FirstAnswer(Protocol):
    """A case's first answer (evaluate.first_seen.FirstSeen)."""

    @property
    def case(self) -> str: ...
    @property
    def result(self) -> str: ...  # ok | top3 | MISS | n/a
    @property
    def primary(self) -> str: ...


@dataclass(frozen=True)
class Outcome:
    case: str
    source: str
    split: Split
    label: str  # <entry>/<cause>, "healthy", or "new:<proposed id>"
    label_rank: int | None
    verdict: str
    primary: str | None
    confidence: float | None
    rank: int | None
    top3: tuple[str, ...]
    top1_ok: bool
    top3_ok: bool

    @property
    def rank_ok(self) -> bool | None:
        return None if self.label_rank is None else self.rank == self.label_rank

    @property
    def mark(self) -> str:
        return "ok" if self.top1_ok else ("top3" if self.top3_ok else "MISS")

    def row(self) -> str:
        """One line of the committed outcomes file: a regression shows as a diff of this line."""
        conf = "" if self.confidence is None else f"{self.confidence:.2f}"
        rank = "" if self.rank is None else str(self.rank)
        want_rank = "" if self.label_rank is None else str(self.label_rank)
        return "\t".join([self.case, self.split, self.mark, self.label, want_rank, self.verdict, self.primary or "-",
                          conf, rank, self.source])


def label_of(case: Case) -> str:
    if case.label.verdict == "healthy" or case.label.id is None:
        return "healthy"
    return f"new:{case.label.id}" if case.label.new else case.label.id


def answers(label: str, primary: str | None, *, from_message: bool = False) -> bool:
    """Whether a primary answer is the label's (`primary` None: the run was called healthy). A mechanism
    the library lacks ("new:") is answered only by an unclassified failure.

    A label from the message alone that names a signal which cannot say why (a SIGKILL with no sender, a
    bare device-side assert) is also answered by what resolved threads most often found behind it
    (catalog.likeliest_reading): the message cannot tell them apart, so it cannot contradict that. A
    thread that found the cause is answered by that cause alone."""
    if label == "healthy" or primary is None:
        return label == "healthy" and primary is None
    if label.startswith("new:"):
        return primary.startswith(UNCLASSIFIED + "/")
    reading = load_library().likeliest_reading(label) if from_message and primary != label else None
    return primary == label or (reading is not None and reading[0] == primary)


def readings(library: Library, cause: str) -> tuple[str, ...]:
    """The causes a signal that cannot say why may turn out to be: those it competes with, and the one
    a kernel record would confirm."""
    c = library.cause(cause)
    return tuple(dict.fromkeys([*([c.confirmed_as] if c.confirmed_as else []), *c.competes]))


def judge(case: Case, d: Diagnosis) -> Outcome:
    label = label_of(case)
    ids = [d.primary.id] if d.primary else []
    ids += [a.id for a in d.alternatives][: 3 - len(ids)]
    top1 = answers(label, None if d.verdict == "healthy" else (d.primary.id if d.primary else ""),
                   from_message=case.label.basis == "message")
    # (healthy and unknown mechanisms have one right answer; a known cause may be among the alternatives)
    top3 = top1 or (label != "healthy" and not label.startswith("new:") and d.verdict != "healthy" and label in ids)
    p = d.primary
    return Outcome(case.id, case.source, case.split, label, case.label.rank, d.verdict, p.id if p else None,
                   p.confidence if p else None, p.rank if p else None, tuple(ids), top1, top3)


def run(cases: Iterable[Case], diagnoser: Diagnoser | None = None) -> list[Outcome]:
    diagnoser = diagnoser or Diagnoser()
    out = []
    for case in cases:
        try:
            d = diagnoser.diagnose(Named("output.log", case.log.encode("utf-8")))
        except InputError as exc:  # a case the reader refuses is a miss, with the reason kept
            d = Diagnosis(verdict="healthy", primary=None, notes=(str(exc),))
        out.append(judge(case, d))
    return out


def calibrate(dev: Sequence[Case], first: Mapping[str, FirstAnswer] | None = None) -> Path:
    """Count, per cause given as the primary on the dev split with calibration off, how often it was
    the thread's answer; the library pulls each confidence towards that (catalog.Library.calibrated).
    Only dev cases are used, so the test split measures the calibration honestly.

    A fallback (an answer for a failure no signature knows) is measured on its first answers instead
    (`first`, evaluate.first_seen): on dev, each wrong fallback answer became a fingerprint, so its share
    right there says how well the split's gaps were filled, not how often it is right on a new log."""
    import dataclasses

    library = load_library()
    raw = dataclasses.replace(library, calibration={}, raw_map=(), resolved={}, mistaken={})
    counts: dict[str, list[int]] = defaultdict(lambda: [0, 0])
    resolved: dict[str, Counter[str]] = defaultdict(Counter)
    given: Counter[str] = Counter()  # dev cases answered with each cause
    instead: dict[str, Counter[str]] = defaultdict(Counter)  # ... and the library cause their thread found
    known = set(library.cause_ids)
    pairs: list[tuple[float, bool]] = []
    for case, o in zip(dev, run(dev, Diagnoser(raw)), strict=True):
        silent = o.primary is not None and library.cause(o.primary).silent_exit
        if o.primary is not None and (case.label.basis == "thread" or silent) and o.primary not in library.fallbacks:
            # A signal that cannot say why, whose cause the thread found: what it was. A worker's silent death
            # lacks the signal itself, which the thread's own message states (the exit code a paste cut).
            resolved[o.primary][o.label] += 1
        if o.primary is not None:
            given[o.primary] += 1
            if not o.top1_ok and o.label in known:
                instead[o.primary][o.label] += 1
        # A collateral-only answer with a lead to one rank keeps its low confidence (reason.engine): not measured.
        lead = library.cause(o.primary).role != "initiating" and o.rank is not None if o.primary else False
        if o.primary is not None and o.confidence is not None and not lead and o.primary not in library.fallbacks:
            pairs.append((o.confidence, o.top1_ok))
            counts[o.primary][0] += 1
            counts[o.primary][1] += int(o.top1_ok)
    labels = {c.id: label_of(c) for c in dev}
    for r in (first or {}).values():
        if r.case in labels and r.result != "n/a" and r.primary in library.fallbacks:
            # Judged against today's label: a mechanism proposed then and in the library now ("new:" then)
            # made an unclassified first answer right then, and wrong now.
            counts[r.primary][0] += 1
            counts[r.primary][1] += int(answers(labels[r.case], r.primary))
    lines = ["# Written by `make eval CALIBRATE=1` (python -m trainmedic.evaluate --calibrate); do not edit by hand.",
             "# cause: [answers, right] - how often this cause, given as the primary on the dev split of the",
             "# real-log corpus, was the answer the public thread arrived at (a fallback: on its first answers).",
             "causes:"]
    lines += [f"  {cause}: [{n}, {r}]" for cause, (n, r) in sorted(counts.items())]
    truths = Counter(c.label.id for c in dev if c.label.id in known and not c.label.new)
    lines += ["# cause: N - how many dev cases it is the answer of (the prior that orders competing causes)",
              "truths:"]
    lines += [f"  {cause}: {n}" for cause, n in sorted(truths.items())]
    lines += ["# cause: [resolved, found, target] - dev cases answered with this signal that cannot say why (a kill",
              "# with no sender, a bare device-side assert) whose thread found the cause, and how many found the",
              "# commonest of the causes it competes with (then the answer when the smoothed share favours it)",
              "resolved:"]
    for cause, found in sorted(resolved.items()):
        targets = [(n, t) for t, n in found.items() if t in readings(library, cause)]
        n, target = max(targets) if targets else (0, "")
        if target:
            lines.append(f"  {cause}: [{sum(found.values())}, {n}, {target}]")
    lines += ["# cause: [answers, {truth: cases}] - dev cases answered with this cause, and the other causes of the",
              f"# library their threads found ({MIN_MISTAKEN}+ cases each, the {MAX_MISTAKEN} commonest): readings "
              "offered next",
              "mistaken:"]
    for cause, found in sorted(instead.items()):
        top = sorted(((n, t) for t, n in found.items() if n >= MIN_MISTAKEN), key=lambda x: (-x[0], x[1]))
        if top:
            shown = ", ".join(f"{t}: {n}" for n, t in top[:MAX_MISTAKEN])
            lines.append(f"  {cause}: [{given[cause]}, {{{shown}}}]")
    lines += ["# raw confidence -> share of answers that sure that were right (isotonic fit, any cause but the",
              "# fallbacks)",
              "raw_map:"]
    lines += [f"  - [{x:.4f}, {y:.4f}]" for x, y in isotonic(pairs)]
    path = LIBRARY_DIR / CALIBRATION
    path.write_text("\n".join(lines) + "\n", encoding="utf-8")
    forget()
    return path


def isotonic(pairs: Sequence[tuple[float, bool]], min_block: int = MIN_BLOCK) -> list[tuple[float, float]]:
    """Pool-adjacent-violators: the non-decreasing step function closest to the outcomes, as
    (mean raw confidence of a block, share right in it) points; a block of fewer than `min_block`
    answers is then pooled with its neighbour (its share right says too little on its own)."""
    same: dict[float, list[float]] = defaultdict(lambda: [0.0, 0.0, 0.0])  # equal confidences form one block
    for raw, ok in pairs:
        same[raw][0] += raw
        same[raw][1] += float(ok)
        same[raw][2] += 1.0
    blocks: list[list[float]] = []  # [sum of raw, hits, count]
    for raw in sorted(same):
        blocks.append(list(same[raw]))
        while len(blocks) > 1 and blocks[-2][1] / blocks[-2][2] >= blocks[-1][1] / blocks[-1][2]:
            last = blocks.pop()
            for i in range(3):
                blocks[-1][i] += last[i]
    while len(blocks) > 1 and (small := next((i for i, b in enumerate(blocks) if b[2] < min_block), None)) is not None:
        into = small - 1 if small > 0 else 1  # the lower neighbour keeps the map non-decreasing
        for i in range(3):
            blocks[into][i] += blocks[small][i]
        del blocks[small]
    return [(s / n, min(0.99, max(0.05, h / n))) for s, h, n in blocks]


# ---------------------------------------------------------------- figures


@dataclass(frozen=True)
class Figures:
    cases: int
    top1: float
    top3: float
    ranked: int
    rank: float
    healthy: int
    false_alarms: int  # healthy runs called failures
    failures: int
    called_healthy: int  # failures (and hangs) called healthy
    ece: float

    def to_json(self) -> dict[str, float | int]:
        return asdict(self)


# Which way is better for each figure: a figure moving the other way is a regression.
HIGHER_IS_BETTER = {"top1": True, "top3": True, "rank": True, "false_alarms": False, "called_healthy": False,
                    "ece": False, "still_failure": True, "line_top3": True}


def _share(n: int, d: int) -> float:
    return round(n / d, 4) if d else 1.0


def reliability(outcomes: Sequence[Outcome]) -> list[tuple[float, float, int, float]]:
    """(bin low, bin high, cases, share right) for answers with a confidence."""
    bins: dict[int, list[Outcome]] = defaultdict(list)
    for o in outcomes:
        if o.confidence is not None:
            bins[min(int(o.confidence * BINS), BINS - 1)].append(o)
    rows = []
    for b in sorted(bins):
        group = bins[b]
        rows.append((b / BINS, (b + 1) / BINS, len(group), sum(o.top1_ok for o in group) / len(group)))
    return rows


def ece(outcomes: Sequence[Outcome]) -> float:
    """Expected calibration error of the primary's confidence against top-1 correctness."""
    scored = [o for o in outcomes if o.confidence is not None]
    if not scored:
        return 0.0
    bins: dict[int, list[Outcome]] = defaultdict(list)
    for o in scored:
        bins[min(int((o.confidence or 0.0) * BINS), BINS - 1)].append(o)
    total = 0.0
    for group in bins.values():
        conf = sum(o.confidence or 0.0 for o in group) / len(group)
        acc = sum(o.top1_ok for o in group) / len(group)
        total += len(group) / len(scored) * abs(conf - acc)
    return round(total, 4)


def figures(outcomes: Sequence[Outcome]) -> Figures:
    healthy = [o for o in outcomes if o.label == "healthy"]
    failing = [o for o in outcomes if o.label != "healthy"]
    ranked = [o for o in outcomes if o.label_rank is not None]
    return Figures(
        cases=len(outcomes),
        top1=_share(sum(o.top1_ok for o in outcomes), len(outcomes)),
        top3=_share(sum(o.top3_ok for o in outcomes), len(outcomes)),
        ranked=len(ranked),
        rank=_share(sum(bool(o.rank_ok) for o in ranked), len(ranked)),
        healthy=len(healthy),
        false_alarms=sum(o.verdict != "healthy" for o in healthy),
        failures=len(failing),
        called_healthy=sum(o.verdict == "healthy" for o in failing),
        ece=ece(outcomes),
    )


def regressions(before: dict[str, dict[str, float]], now: dict[str, dict[str, float]]) -> list[str]:
    """Figures that got worse, per split, as sentences."""
    out = []
    for split, old in before.items():
        new = now.get(split)
        if new is None:
            continue
        for key, higher in HIGHER_IS_BETTER.items():
            if key not in old or key not in new:
                continue
            worse = new[key] < old[key] if higher else new[key] > old[key]
            if worse:
                out.append(f"{split}: {key} went from {old[key]} to {new[key]}")
    return out
