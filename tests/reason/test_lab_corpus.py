"""Every log that real PyTorch printed in the lab (tests/fixtures/lab, see its manifest) is diagnosed exactly:
the cause id, the initiating rank and the collateral ranks of its ground truth."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from trainmedic.api import diagnose
from trainmedic.torch.lab import cases as lab_cases
from trainmedic.torch.lab.cases import Outcome

LAB = Path(__file__).resolve().parents[1] / "fixtures" / "lab"
MANIFEST: list[dict[str, Any]] = json.loads((LAB / "manifest.json").read_text()) if (LAB / "manifest.json").exists() else []


@pytest.mark.parametrize("case", MANIFEST, ids=[c["case"] for c in MANIFEST])
def test_lab_capture_is_diagnosed_exactly(case: dict[str, Any]) -> None:
    d = diagnose([LAB / f for f in case["files"]])
    assert lab_cases.mismatches(lab_cases.get(case["case"]), Outcome.of(d)) == [], d.to_json()
    if case["expected_verdict"] == "healthy":
        assert d.primary is None
        return
    assert d.primary is not None
    assert d.primary.evidence, "every verdict quotes its evidence"


def test_the_corpus_covers_the_dataloader_family() -> None:
    ids = {c["expected_id"] for c in MANIFEST} | {c["injected"] for c in MANIFEST}
    for cause in ("shm-exhausted", "worker-killed", "worker-oom", "worker-segfault", "getitem-exception",
                  "fd-exhaustion", "worker-hang", "slow-worker-respawn"):
        assert f"dataloader-worker-failure/{cause}" in ids
