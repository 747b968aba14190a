"""Confidence is a probability: on the lab corpus (logs real PyTorch printed, with what was really injected),
how often the primary names the injected cause must match how sure it said it was. See docs/confidence.md."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from trainmedic.api import diagnose, load_library

LAB = Path(__file__).resolve().parents[1] / "fixtures" / "lab"
BINS = ((0.0, 0.3), (0.3, 0.7), (0.7, 0.9), (0.9, 1.01))
ECE_LIMIT = 0.15


def _sent_by_the_lab(truth: str, primary: str, alternatives: list[str]) -> bool:
    """A kill the lab sent itself, read as the sender real threads most often found behind such a kill
    (the OOM killer), with the kill as the first alternative: its confidence is that measured share of
    real senders (make eval scores it, docs/accuracy.md), which a lab that sends every kill itself cannot
    reproduce. Such rows are left out of the lab's reliability table, and still must not be sure."""
    return load_library().read_as_sender(truth, primary, alternatives[0] if alternatives else None)


def corpus(sent: list[tuple[str, float]] | None = None) -> list[tuple[str, float, bool]]:
    """(case, confidence, correct) for every capture with an injected failure, and for multi-file
    captures also the first file alone (a user who only kept the console log). Kills the lab sent,
    read as their likeliest sender, go to `sent` instead."""
    rows = []
    for case in json.loads((LAB / "manifest.json").read_text()):
        if case["injected"] is None or case["expected_verdict"] == "healthy":
            continue
        variants = [case["files"]] + ([case["files"][:1]] if len(case["files"]) > 1 else [])
        for files in variants:
            d = diagnose([LAB / f for f in files])
            truth = case["injected"]
            if d.primary is None:
                rows.append((case["case"], 0.0, False))
                continue
            if _sent_by_the_lab(truth, d.primary.id, [a.id for a in d.alternatives]):
                if sent is not None:
                    sent.append((case["case"], d.primary.confidence))
                continue
            # A silent worker hang is named as the stall it is; the library calls that training-hang.
            correct = d.primary.id == truth or (truth.endswith("/worker-hang") and d.primary.id.startswith("training-hang/"))
            rows.append((case["case"], d.primary.confidence, correct))
    return rows


def reliability(rows: list[tuple[str, float, bool]]) -> tuple[float, list[dict[str, Any]]]:
    table, ece = [], 0.0
    for lo, hi in BINS:
        inside = [(c, ok) for _, c, ok in rows if lo <= c < hi]
        if not inside:
            continue
        mean_conf = sum(c for c, _ in inside) / len(inside)
        accuracy = sum(ok for _, ok in inside) / len(inside)
        ece += len(inside) / len(rows) * abs(mean_conf - accuracy)
        table.append({"bin": f"[{lo:.1f}, {min(hi, 1.0):.1f})", "n": len(inside),
                      "confidence": round(mean_conf, 2), "accuracy": round(accuracy, 2)})
    return ece, table


def test_confidence_is_calibrated_on_the_lab_corpus() -> None:
    sent: list[tuple[str, float]] = []
    rows = corpus(sent)
    print("\nkills the lab sent, read as their likeliest sender:", sent)
    assert all(c < 0.9 for _, c in sent)
    assert len(rows) >= 20
    ece, table = reliability(rows)
    print("\nreliability:", json.dumps(table), f"ECE={ece:.3f}")  # quoted in docs/confidence.md
    assert ece <= ECE_LIMIT, table
    # Sure answers are right; wrong answers are never sure. (The confidence is calibrated on real logs,
    # docs/accuracy.md, where a worker killed by SIGKILL with no kernel record is labelled just that about
    # three times in four, so it is said at about 0.8; the lab's OOM capture without its kernel log is
    # such a case, and its label is the OOM the lab caused.)
    assert all(ok for _, c, ok in rows if c >= 0.9)
    assert all(c < 0.9 for _, c, ok in rows if not ok)
