"""Every log that real PyTorch printed in the lab (tests/fixtures/lab, see its manifest) is diagnosed exactly:
the cause id, the initiating rank and the collateral ranks of its ground truth."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from trainmedic.api import diagnose

LAB = Path(__file__).resolve().parents[1] / "fixtures" / "lab"
MANIFEST: list[dict[str, Any]] = json.loads((LAB / "manifest.json").read_text()) if (LAB / "manifest.json").exists() else []


@pytest.mark.parametrize("case", MANIFEST, ids=[c["case"] for c in MANIFEST])
def test_lab_capture_is_diagnosed_exactly(case: dict[str, Any]) -> None:
    d = diagnose([LAB / f for f in case["files"]])
    assert d.verdict == case["expected_verdict"], d.to_json()
    if case["expected_verdict"] == "healthy":
        assert d.primary is None
        return
    assert d.primary is not None
    if case["expected_id"] is not None:
        assert d.primary.id == case["expected_id"]
    assert d.primary.rank == case["expected_rank"]
    if case["expected_collateral_ranks"]:
        assert sorted({c.rank for c in d.collateral if c.rank is not None}) == sorted(case["expected_collateral_ranks"])
    assert d.primary.evidence, "every verdict quotes its evidence"


def test_the_corpus_covers_the_dataloader_family() -> None:
    ids = {c["expected_id"] for c in MANIFEST} | {c["injected"] for c in MANIFEST}
    for cause in ("shm-exhausted", "worker-killed", "worker-oom", "worker-segfault", "getitem-exception",
                  "fd-exhaustion", "worker-hang", "slow-worker-respawn"):
        assert f"dataloader-worker-failure/{cause}" in ids
