"""The fleet report in `serve`: /fleet draws it (server-side SVG, every label escaped) and /api/fleet
returns the same JSON as `trainmedic fleet report --format json`, over the server's own database."""

from __future__ import annotations

import shutil
from pathlib import Path
from typing import Any

from tests.conftest import FIXTURES, run_cli

LAB = FIXTURES / "lab"


def test_the_fleet_page_shows_what_a_scan_stored(app_factory: Any, tmp_path: Path) -> None:
    from fastapi.testclient import TestClient

    db = f"sqlite:///{tmp_path / 'history.db'}"  # the app factory's database
    root = tmp_path / "fleet"
    for case in ("ddp-worker-crash", "hf-healthy", "ddp-unknown-exception"):
        shutil.copytree(LAB / case, root / case)
    (root / "<i>odd").mkdir()
    (root / "<i>odd" / "node-1.log").write_text("<script>alert(1)</script> Traceback (most recent call last):\n"
                                                     "LeaseExpired: <img src=x onerror=alert(1)>\n")
    with TestClient(app_factory()) as client:
        empty = client.get("/fleet")
        assert empty.status_code == 200 and "No jobs yet" in empty.text
        assert run_cli("fleet", "scan", str(root), "--db", db).code == 0
        page = client.get("/fleet")
        assert page.status_code == 200
        assert "jobs failed or hung" in page.text and "<svg class=\"bars\"" in page.text
        assert "dataloader-worker-failure/worker-oom" in page.text
        assert "<img src=x" not in page.text and "<script>alert" not in page.text  # log text is escaped
        api = client.get("/api/fleet").json()
    assert api == run_cli("fleet", "report", "--db", db, "--format", "json").json()
    assert api["jobs"] == 4


def test_the_diagnosis_page_and_the_editor_hover_say_the_next_action(client: Any) -> None:
    log = ("[INFO|trainer.py:4149] 2026-12-01 03:40:01,123 >> Saving model checkpoint to out/checkpoint-500\n"
           "{'loss': '3.9', 'grad_norm': '1.3', 'learning_rate': '5e-05', 'epoch': '0.5'}\n"
           "RuntimeError: DataLoader worker (pid 4242) is killed by signal: Killed.\n")
    body = client.post("/api/diagnose", json={"text": log}).json()
    action = body["diagnosis"]["action"]
    assert action["kind"] == "fix-then-resume" and action["checkpoint"]["checkpoint"] == "out/checkpoint-500"
    page = client.get(body["url"]).text
    assert "<strong>Next:</strong> Fix the cause, then resume from out/checkpoint-500 (step 500)" in page
    report = client.get(body["url"] + "/report.md").text
    assert "### Next: Fix the cause, then resume from out/checkpoint-500 (step 500)" in report

    from trainmedic.api import diagnose
    from trainmedic.lsp.marks import _finding_hover

    d = diagnose(log)
    assert d.primary is not None and "**Next.** Fix, then resume" in _finding_hover(d, d.primary, None)
