"""`python -m trainmedic.evaluate [--corpus DIR] [--accept]`: score, write docs/accuracy.md and the
per-case outcomes, and fail when a committed figure got worse (run with --accept to take the new ones).
A case scored for the first time also gets its outcome recorded in first_seen.tsv, for good."""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

from trainmedic.api import Diagnoser
from trainmedic.evaluate import first_seen, unknown
from trainmedic.evaluate.corpus import load_corpus
from trainmedic.evaluate.report import render
from trainmedic.evaluate.score import calibrate, figures, regressions, run

LAB = Path("tests") / "fixtures" / "lab"  # the lab's captured failures (trainmedic lab), beside the corpus


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(prog="python -m trainmedic.evaluate", description=__doc__.splitlines()[0])
    p.add_argument("--corpus", type=Path, default=Path("corpus"), help="folder holding real/ and eval/")
    p.add_argument("--docs", type=Path, default=Path("docs/accuracy.md"))
    p.add_argument("--accept", action="store_true", help="write the new figures even if some got worse")
    p.add_argument("--check", action="store_true", help="write nothing; fail when the committed files are stale")
    p.add_argument("--calibrate", action="store_true",
                   help="measure each cause's precision on the dev split and write the library's calibration")
    args = p.parse_args(argv)
    real = args.corpus / "real"
    if not real.is_dir():
        print(f"eval: {real}: no such folder (expected the corpus of real logs)", file=sys.stderr)
        return 2
    cases = load_corpus(real)
    eval_dir = args.corpus / "eval"
    seen_path = eval_dir / "first_seen.tsv"
    known_first = first_seen.read(seen_path)
    if args.calibrate:
        written = calibrate([c for c in cases if c.split == "dev"], known_first)
        print(f"eval: wrote {written} from the dev split")
    outcomes = run(cases)
    now = {split: figures([o for o in outcomes if o.split == split]).to_json() for split in ("test", "dev")}
    diagnoser = Diagnoser()
    hidden = unknown.run(unknown.probes(cases, args.corpus.resolve().parent / LAB, diagnoser), diagnoser.library)
    unknown_figs = unknown.figures(hidden)
    now["unknown"] = unknown_figs.to_json()
    fig_path, rows_path = eval_dir / "figures.json", eval_dir / "outcomes.tsv"
    unknown_path = eval_dir / "unknown.tsv"
    unknown_rows = "\n".join(["case\tsource\tremoved\tverdict\tprimary\tstill_failure\trank\tline_top3",
                              *(r.row() for r in sorted(hidden, key=lambda r: (r.probe.source, r.probe.name)))]) + "\n"
    doc = render(cases, outcomes, unknown_figs,
                 [(r.split, r.result) for r in first_seen.merge(known_first, outcomes).values() if r.measured])
    rows = "\n".join(["case\tsplit\tresult\tlabel\tlabel_rank\tverdict\tprimary\tconfidence\trank\tsource",
                      *(o.row() for o in sorted(outcomes, key=lambda o: (o.split, o.case)))]) + "\n"
    fig_text = json.dumps(now, indent=2, sort_keys=True) + "\n"
    seen_text = first_seen.render(known_first, outcomes)
    if args.check:
        stale = [str(path) for path, text in ((args.docs, doc), (rows_path, rows), (fig_path, fig_text),
                                             (unknown_path, unknown_rows), (seen_path, seen_text))
                 if not path.is_file() or path.read_text(encoding="utf-8") != text]
        for path in stale:
            print(f"eval: {path} is stale: run `make eval`", file=sys.stderr)
        return 1 if stale else 0
    before = json.loads(fig_path.read_text(encoding="utf-8")) if fig_path.is_file() else {}
    worse = regressions(before, now)
    for line in worse:
        print(f"eval: worse than committed: {line}", file=sys.stderr)
    if worse and not args.accept:
        print("eval: nothing written; see corpus/eval/outcomes.tsv for the cases (or --accept)", file=sys.stderr)
        return 1
    eval_dir.mkdir(parents=True, exist_ok=True)
    args.docs.write_text(doc, encoding="utf-8")
    rows_path.write_text(rows, encoding="utf-8")
    unknown_path.write_text(unknown_rows, encoding="utf-8")
    fig_path.write_text(fig_text, encoding="utf-8")
    seen_path.write_text(seen_text, encoding="utf-8")
    t = now["test"]
    print(f"test split: top-1 {t['top1']:.1%}, top-3 {t['top3']:.1%}, rank {t['rank']:.1%} of {t['ranked']}, "
          f"healthy called failures {t['false_alarms']}/{t['healthy']}, failures called healthy "
          f"{t['called_healthy']}/{t['failures']}, ECE {t['ece']:.3f} ({t['cases']} cases)")
    u = now["unknown"]
    print(f"leave one entry out: still failures {u['still_failure']:.1%}, rank {u['rank']:.1%} of {u['ranked']}, "
          f"failure line in the top 3 {u['line_top3']:.1%} ({u['cases']} cases)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
