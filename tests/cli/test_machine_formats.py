"""`--format sarif` validates against the official SARIF 2.1.0 schema and says what the diagnosis says;
`--format github` annotates the evidence lines and cannot be forged by what a log line holds."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from tests.conftest import FIXTURES, ROOT, run_cli

SCHEMA = ROOT / ".venv" / "share" / "sarif-2.1.0-rtm.5.json"  # the Makefile fetches it (npm registry)
LAB = FIXTURES / "lab"


def _validator() -> Any:
    jsonschema = pytest.importorskip("jsonschema")
    if not SCHEMA.is_file():
        pytest.skip(f"the SARIF schema is fetched by `make pytest` into {SCHEMA.relative_to(ROOT)}")
    schema = json.loads(SCHEMA.read_text())
    return jsonschema.Draft4Validator(schema)  # the schema's own $schema: draft-04


@pytest.mark.parametrize("case", ["ddp-worker-crash", "hf-checkpoint-disk-full", "accelerate-rank-hang",
                                  "lightning-healthy", "ddp-unknown-exception"])
def test_sarif_validates_and_carries_the_verdict(case: str) -> None:
    res = run_cli("diagnose", str(LAB / case), "--format", "sarif")
    assert res.code in (0, 1), res.err
    doc = json.loads(res.out)
    errors = sorted(_validator().iter_errors(doc), key=str)
    assert errors == [], [e.message for e in errors[:5]]
    diag = run_cli("diagnose", str(LAB / case), "--json").json()
    (run,) = doc["runs"]
    results, rules = run["results"], run["tool"]["driver"]["rules"]
    assert run["properties"]["verdict"] == diag["verdict"]
    if diag["primary"] is None:
        assert results == []
        return
    first = results[0]
    assert first["level"] == "error" and first["ruleId"] == diag["primary"]["id"]
    where = first["locations"][0]["physicalLocation"]
    assert where["region"]["startLine"] == diag["primary"]["evidence"][0]["line"]
    assert where["artifactLocation"]["uri"] == diag["primary"]["evidence"][0]["path"]
    assert first["properties"]["action"] == diag["action"]
    notes = [r for r in results[1:] if r["level"] == "note"]
    assert len(notes) == len(diag["collateral"])
    # every result's rule is in the driver's rules, at its index, with the library's help
    for r in results:
        assert rules[r["ruleIndex"]]["id"] == r["ruleId"]
    primary_rule = rules[first["ruleIndex"]]
    assert "trainmedic explain " + diag["primary"]["id"] in primary_rule["help"]["text"]


def test_sarif_links_each_rule_to_the_teams_encyclopedia_when_told_where(monkeypatch: pytest.MonkeyPatch) -> None:
    from trainmedic.api import diagnose
    from trainmedic.report.sarif import sarif

    d = diagnose([LAB / "ddp-worker-crash"])
    assert all("helpUri" not in r for r in sarif(d)["runs"][0]["tool"]["driver"]["rules"])
    monkeypatch.setenv("TRAINMEDIC_SITE_URL", "https://ml.example.org/trainmedic/")
    rule = sarif(d)["runs"][0]["tool"]["driver"]["rules"][0]
    assert rule["helpUri"] == "https://ml.example.org/trainmedic/dataloader-worker-failure/worker-oom/"


def test_github_annotations_point_at_the_evidence_and_collateral() -> None:
    res = run_cli("diagnose", str(LAB / "ddp-worker-crash"), "--format", "github")
    assert res.code == 1, res.err
    lines = res.out.splitlines()
    diag = run_cli("diagnose", str(LAB / "ddp-worker-crash"), "--json").json()
    ev = diag["primary"]["evidence"][0]
    # a path relative to the working directory (the workspace, on a runner), as annotations need
    rel = Path(ev["path"]).resolve().relative_to(Path.cwd())
    assert lines[0].startswith(f"::error file={rel},line={ev['line']},title=trainmedic%3A ")
    assert "%0ANext: Fix the cause, then resume" in lines[0]
    assert sum(1 for ln in lines if ln.startswith("::notice ")) == len(diag["collateral"])


def test_github_annotations_escape_what_a_log_line_holds(tmp_path: Path) -> None:
    """A log line that carries a workflow command, a newline escape or a percent sign stays data."""
    log = tmp_path / "train,name:odd.log"
    log.write_text("step 10 loss 0.5\n"
                   "RuntimeError: DataLoader worker (pid 4242) is killed by signal: Killed. ::add-mask::x %0A 50%\n")
    res = run_cli("diagnose", str(log), "--format", "github")
    (first, *_) = res.out.splitlines()
    assert first.startswith("::error file=") and "train%2Cname%3Aodd.log" in first
    message = first.split("::", 2)[2]
    assert "::add-mask::" in message  # inside the message, after the command's own '::': not a command
    assert "%250A" in message and "50%25" in message
    assert res.out.count("\n") == len(res.out.splitlines())  # one command per line, none split by the text


def test_a_healthy_run_is_one_notice() -> None:
    res = run_cli("diagnose", str(LAB / "hf-healthy"), "--format", "github")
    assert res.code == 0
    assert res.out.startswith("::notice title=trainmedic::trainmedic: no failure found.")
    assert len(res.out.splitlines()) == 1
