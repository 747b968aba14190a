"""The guard's callbacks inside real training: Lightning and HF Trainer on the CPU, a few steps each.

The stand-in tests (test_guard.py) drive the hooks by hand; these run the frameworks for real, so they
catch what stand-ins cannot: which hooks a framework really calls and when, where it keeps the
DataLoader's iterator, and whether the guard's lines reach the log the diagnosis reads.
"""

from __future__ import annotations

import importlib.util
import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

from tests.live.conftest import PROGRAMS, live_group, needs_torch
from trainmedic.api import diagnose

FRAMEWORK_MODULE = {"lightning": "lightning", "hf": "transformers"}
SLOW_FIRST = re.compile(r"^\[trainmedic\] guard: slow-first-batch seconds=\d+\.\d persistent_workers=False "
                        r"num_workers=2 epoch=1$", re.MULTILINE)

pytestmark = [needs_torch, live_group, pytest.mark.slow, pytest.mark.timeout(240)]


def _train(framework: str, failure: str, tmp_path: Path) -> tuple[int, Path]:
    if importlib.util.find_spec(FRAMEWORK_MODULE[framework]) is None:
        pytest.skip(f"{FRAMEWORK_MODULE[framework]} is not installed (pip install 'trainmedic[lab]')")
    log = tmp_path / f"{framework}-{failure}.log"
    env = {**os.environ, "TMPDIR": str(tmp_path), "PYTHONUNBUFFERED": "1", "HF_HUB_OFFLINE": "1"}
    with log.open("wb") as out:
        proc = subprocess.run([sys.executable, str(PROGRAMS / "guarded_frameworks.py"), "--framework", framework,
                               "--failure", failure], stdout=out, stderr=subprocess.STDOUT, env=env,
                              cwd=tmp_path, timeout=200, check=False)
    return proc.returncode, log


@pytest.mark.parametrize("framework", ["lightning", "hf"])
def test_a_healthy_run_gets_the_guards_warning_and_stays_healthy(framework: str, tmp_path: Path) -> None:
    code, log = _train(framework, "none", tmp_path)
    text = log.read_text()
    assert code == 0, text[-2000:]
    assert f"guarded {framework} run done: 16 batches" in text  # every step went through the hooks
    assert len(SLOW_FIRST.findall(text)) == 1, text[-2000:]  # epoch 1 only: epoch 0 always starts workers
    d = diagnose([log])
    assert d.verdict == "healthy" and d.primary is None
    assert any("dataloader-worker-failure/slow-worker-respawn" in note for note in d.notes)


@pytest.mark.parametrize("framework", ["lightning", "hf"])
def test_a_worker_killed_inside_the_run_is_diagnosed_from_its_log(framework: str, tmp_path: Path) -> None:
    code, log = _train(framework, "worker-kill", tmp_path)
    text = log.read_text()
    assert code != 0
    assert re.search(r"DataLoader worker \(pid \d+\) is killed by signal: Killed\.", text)
    d = diagnose([log])
    assert d.verdict == "failure" and d.primary is not None
    assert d.primary.id == "dataloader-worker-failure/worker-oom", d.to_json()
    if framework == "lightning":
        # Lightning keeps the iterator where the guard finds it: the death has its own line, with the
        # worker's id and signal, before the DataLoader's error
        died = re.search(r"^\[trainmedic\] guard: worker-died pid=(\d+) worker_id=0 signal=SIGKILL exitcode=-9 "
                         r"epoch=1$", text, re.MULTILINE)
        assert died, text[-3000:]
        assert f"DataLoader worker (pid {died.group(1)}) is killed" in text
        assert any("guard: worker-died" in e.text for e in d.primary.evidence)
