"""The GitHub Action (action.yml) runs `python -m trainmedic.github_action` with what a runner gives a
step: its inputs as INPUT_* variables, and the job summary and step outputs as files to append to."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest
import yaml

from tests.cli.test_machine_formats import _validator
from tests.conftest import FIXTURES, ROOT

LAB = FIXTURES / "lab"


def _run_step(tmp_path: Path, logs: str, sarif: str = "") -> tuple[subprocess.CompletedProcess[str], Path, Path]:
    summary, outputs = tmp_path / "step_summary.md", tmp_path / "github_output"
    summary.write_text("## Tests\n\nearlier content of the summary\n")
    env = {**os.environ, "INPUT_LOGS": logs, "INPUT_SARIF": sarif, "GITHUB_STEP_SUMMARY": str(summary),
           "GITHUB_OUTPUT": str(outputs), "GITHUB_ACTIONS": "true"}
    proc = subprocess.run([sys.executable, "-m", "trainmedic.github_action"], env=env, cwd=ROOT,
                          capture_output=True, text=True, timeout=120, check=False)
    return proc, summary, outputs


def _outputs(path: Path) -> dict[str, str]:
    return dict(line.split("=", 1) for line in path.read_text().splitlines())


@pytest.mark.parametrize(("case", "verdict", "action"), [
    ("ddp-worker-crash", "failure", "fix-then-resume"),
    ("hf-checkpoint-disk-full", "failure", "fix-then-resume"),
    ("accelerate-rank-hang", "hang", "restart"),
])
def test_the_step_writes_the_summary_annotations_outputs_and_sarif(case: str, verdict: str, action: str,
                                                                    tmp_path: Path) -> None:
    sarif = tmp_path / "out" / "trainmedic.sarif"
    proc, summary, outputs = _run_step(tmp_path, f"tests/fixtures/lab/{case}/*.log", str(sarif))
    assert proc.returncode == 0, proc.stderr  # the failed training step already failed the job
    text = summary.read_text()
    assert text.startswith("## Tests\n\nearlier content of the summary\n")  # appended, never replaced
    assert "## trainmedic: " in text and "### Next: " in text
    got = _outputs(outputs)
    d = json.loads(got["json"])
    assert got["verdict"] == verdict == d["verdict"]
    assert got["cause"] == d["primary"]["id"] and got["action"] == action == d["action"]["kind"]
    assert proc.stdout.startswith("::error file=tests/fixtures/lab/")
    assert list(_validator().iter_errors(json.loads(sarif.read_text()))) == []
    if case == "hf-checkpoint-disk-full":
        assert got["checkpoint"].endswith("/checkpoint-2")


def test_no_matching_logs_is_an_annotation_not_a_crash(tmp_path: Path) -> None:
    proc, _, outputs = _run_step(tmp_path, "no/such/*.log")
    assert proc.returncode == 0 and "Traceback" not in proc.stderr
    assert proc.stdout.startswith("::error title=trainmedic::no log paths matched")
    assert not outputs.exists()


def test_action_yml_runs_the_entry_with_its_inputs() -> None:
    spec = yaml.safe_load((ROOT / "action.yml").read_text())
    assert spec["runs"]["using"] == "composite"
    steps = spec["runs"]["steps"]
    assert "-m trainmedic.github_action" in steps[-1]["run"]
    assert steps[-1]["env"] == {"INPUT_LOGS": "${{ inputs.logs }}", "INPUT_SARIF": "${{ inputs.sarif }}"}
    for name in ("verdict", "cause", "action", "checkpoint", "json"):
        assert spec["outputs"][name]["value"] == f"${{{{ steps.diagnose.outputs.{name} }}}}"
