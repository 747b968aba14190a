"""docs/accuracy.md: the figures a user can trust, per split, per entry and cause, and calibration."""

from __future__ import annotations

from collections import Counter, defaultdict
from collections.abc import Sequence

from trainmedic.evaluate.corpus import Case
from trainmedic.evaluate.score import Figures, Outcome, figures, reliability
from trainmedic.evaluate.unknown import Figures as UnknownFigures

TARGETS = {"top1": ">= 92 %", "top3": ">= 97 %", "rank": ">= 85 %", "false_alarms": "0", "called_healthy": "0",
           "ece": "<= 0.08"}


def _pct(x: float) -> str:
    return f"{x * 100:.1f} %"


def _headline(by_split: dict[str, Figures]) -> list[str]:
    t, d = by_split["test"], by_split["dev"]
    return [
        "| figure | test | dev | target (test) |",
        "|---|---|---|---|",
        f"| cases | {t.cases} | {d.cases} | |",
        f"| top-1 (primary is the thread's answer) | {_pct(t.top1)} | {_pct(d.top1)} | {TARGETS['top1']} |",
        f"| top-3 (answer among primary + 2 alternatives) | {_pct(t.top3)} | {_pct(d.top3)} | {TARGETS['top3']} |",
        f"| initiating rank (cases with a known rank) | {_pct(t.rank)} of {t.ranked} | {_pct(d.rank)} of {d.ranked} "
        f"| {TARGETS['rank']} |",
        f"| healthy runs called failures | {t.false_alarms} of {t.healthy} | {d.false_alarms} of {d.healthy} "
        f"| {TARGETS['false_alarms']} |",
        f"| failures called healthy | {t.called_healthy} of {t.failures} | {d.called_healthy} of {d.failures} "
        f"| {TARGETS['called_healthy']} |",
        f"| ECE (calibration error of the confidence) | {t.ece:.3f} | {d.ece:.3f} | {TARGETS['ece']} |",
    ]


def _per_label(outcomes: Sequence[Outcome]) -> list[str]:
    groups: dict[str, dict[str, list[Outcome]]] = defaultdict(lambda: defaultdict(list))
    for o in outcomes:
        groups[o.label][o.split].append(o)
    lines = ["| label | test: cases, top-1, top-3 | dev: cases, top-1, top-3 |", "|---|---|---|"]
    for label in sorted(groups):
        cells = []
        for split in ("test", "dev"):
            g = groups[label][split]
            if not g:
                cells.append("-")
                continue
            cells.append(f"{len(g)}, {sum(o.top1_ok for o in g)}, {sum(o.top3_ok for o in g)}")
        lines.append(f"| `{label}` | {cells[0]} | {cells[1]} |")
    return lines


def _reliability(outcomes: Sequence[Outcome]) -> list[str]:
    lines = ["| confidence | answers | right |", "|---|---|---|"]
    for lo, hi, n, acc in reliability(outcomes):
        lines.append(f"| {lo:.1f}-{hi:.1f} | {n} | {_pct(acc)} |")
    return lines


def _composition(cases: Sequence[Case]) -> list[str]:
    verdicts = Counter(c.label.verdict for c in cases)
    basis = Counter(c.label.basis for c in cases)
    return [
        f"{len(cases)} cases from {len({c.source for c in cases})} public threads and pages: "
        f"{verdicts['failure']} failures, {verdicts['hang']} hangs, {verdicts['healthy']} healthy runs that printed "
        f"something alarming; {sum(c.label.rank is not None for c in cases)} with a known initiating rank; "
        f"{sum(c.label.new for c in cases)} whose mechanism the library has no entry for yet. Labels: "
        f"{basis['thread']} from the thread's resolution, {basis['message']} from the message alone.",
    ]


def render(cases: Sequence[Case], outcomes: Sequence[Outcome], unknown: UnknownFigures | None = None,
           first: Sequence[tuple[str, str]] = ()) -> str:
    """`first`: (split, result) of each case's first answer that was kept (evaluate.first_seen)."""
    by_split = {s: figures([o for o in outcomes if o.split == s]) for s in ("test", "dev")}
    test = [o for o in outcomes if o.split == "test"]
    parts = [
        "# Accuracy on real logs",
        "",
        "<!-- Written by `make eval` (python -m trainmedic.evaluate); do not edit by hand. -->",
        "",
        "How often trainmedic's answer is the one the public thread arrived at, on logs real runs printed",
        "(`corpus/real/`, one file per case with its source). The corpus is split once by a hash of each",
        "case's source: rules and fingerprints are written looking at `dev`; `test` is for measuring.",
        "Per-case outcomes: `corpus/eval/outcomes.tsv`.",
        "",
        *_composition(cases),
        "",
        "## Headline",
        "",
        *_headline(by_split),
        "",
        "A case whose mechanism the library lacks counts as right only when trainmedic calls it an",
        "unclassified failure; a healthy case only when it is called healthy. A label from the message",
        "alone that names a signal which cannot say why (a SIGKILL with no sender, a bare device-side",
        "assert) is also answered by what resolved threads most often found behind it (the OOM killer, a",
        "class label out of range): the message cannot tell them apart; a thread that found the cause is",
        "answered by that cause alone.",
        "",
        "## Calibration (test split)",
        "",
        "When trainmedic says a confidence in this range, how often is its primary the right answer:",
        "",
        *_reliability(test),
        "",
        "## Calibration (all cases)",
        "",
        *_reliability(outcomes),
        "",
        *(_unknown(unknown) if unknown is not None else ()),
        *(_first_sight(first) if first else ()),
        "## Per label",
        "",
        *_per_label(outcomes),
        "",
    ]
    return "\n".join(parts)


def _first_sight(first: Sequence[tuple[str, str]]) -> list[str]:
    """How often the first answer to a case was right, before any rule was written looking at it: the
    figure closest to what a new user's logs get."""
    rows = ["## On first sight", "",
            "Each case's answer the first time `make eval` scored it, before any rule or fingerprint was",
            "written looking at it (`corpus/eval/first_seen.tsv`; cases older than that file are left out).",
            "Rules were written against the dev cases afterwards, so this is the figure closest to what logs",
            "nobody has seen get; `test` above measures the same reasoner with today's rules.", "",
            "| split | cases | right (top-1) | right within top-3 |", "|---|---|---|---|"]
    for split in ("test", "dev"):
        got = [r for s, r in first if s == split]
        if got:
            ok = sum(r == "ok" for r in got)
            top3 = sum(r in ("ok", "top3") for r in got)
            rows.append(f"| {split} | {len(got)} | {ok / len(got):.1%} | {top3 / len(got):.1%} |")
    return [*rows, ""]


def _unknown(f: UnknownFigures) -> list[str]:
    return [
        "## Failures no signature knows (leave one entry out)",
        "",
        "Every case the full library gets right (real logs of both splits, and the lab's captures) is",
        "diagnosed again with the library entry that explains it removed, as if its failure were new.",
        "Per-case rows: `corpus/eval/unknown.tsv`.",
        "",
        "| figure | value | target |",
        "|---|---|---|",
        f"| cases | {f.cases} | |",
        f"| still called a failure (not healthy) | {f.still_failure:.1%} | >= 95 % |",
        f"| initiating rank right (cases with a known rank) | {f.rank:.1%} of {f.ranked} | >= 85 % |",
        f"| the failure's own line among the top 3 evidence lines | {f.line_top3:.1%} | >= 85 % |",
        "",
    ]
