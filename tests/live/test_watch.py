"""`trainmedic watch`: one-shot like diagnose; --follow over growing, rotated and truncated logs."""

from __future__ import annotations

import gzip
import json
import signal
import sys
import time
from pathlib import Path
from typing import Any

from tests.conftest import run_cli
from tests.live.conftest import live_group
from trainmedic.catalog import load_library
from trainmedic.live.follow import Follower
from trainmedic.live.output import BANNER, FINAL_BANNER
from trainmedic.live.streams import LiveAnalysis

KILLED = "RuntimeError: DataLoader worker (pid 4711) is killed by signal: Segmentation fault.\n"


def test_without_follow_it_diagnoses_once_like_diagnose(tmp_path: Path) -> None:
    log = tmp_path / "train.log"
    log.write_text("step 1 loss 0.5\n" + KILLED)
    watched = run_cli("watch", "--json", str(log))
    diagnosed = run_cli("diagnose", "--json", str(log))
    assert watched.code == diagnosed.code == 1
    assert watched.json() == diagnosed.json()
    assert run_cli("watch", str(tmp_path / "missing.log")).code == 2


def _follower(tmp_path: Path) -> tuple[LiveAnalysis, Follower, list[str]]:
    analysis = LiveAnalysis(load_library())
    said: list[str] = []
    return analysis, Follower([str(tmp_path)], analysis, say=said.append), said


def test_follow_new_files_truncation_and_rotation(tmp_path: Path) -> None:
    """In-process, poll by poll: what each event does to the streams."""
    analysis, follower, said = _follower(tmp_path)
    log = tmp_path / "train.log"
    log.write_text("step 1\n")
    assert follower.poll() == 7
    assert follower.followed == [str(log)]

    with log.open("a") as f:  # growth: only the new bytes are read
        f.write("step 2\n")
    assert follower.poll() == 7

    log.write_text(KILLED)  # truncated (and rewritten): that stream starts over
    follower.poll()
    analysis.flush()
    assert any("truncated" in s for s in said)
    d = analysis.diagnose(alive=True)
    assert d.primary is not None and d.primary.id == "dataloader-worker-failure/worker-segfault"
    assert d.inputs[0].lines == 1  # the old "step" lines are gone with the truncation

    log.rename(tmp_path / "train.log.1")  # rotation: the old content keeps its findings, under its new name
    log.write_text("step 3\n")
    (tmp_path / "rank1.log").write_text("step 3\n")  # a new file in the directory
    follower.poll()
    assert any("rotated" in s and "train.log.1" in s for s in said)
    assert sorted(follower.followed) == sorted([str(log), str(tmp_path / "rank1.log")])
    with gzip.open(tmp_path / "train.log.2.gz", "wt") as gz:  # an archived rotation is read once, whole
        gz.write("step 0\n")
    follower.poll()
    d = analysis.finish()
    names = sorted(i.path for i in d.inputs)
    assert names == sorted([str(log), str(tmp_path / "rank1.log"), str(tmp_path / "train.log.1"),
                            str(tmp_path / "train.log.2.gz")])
    assert d.primary is not None and d.primary.evidence[0].path == str(tmp_path / "train.log.1")
    follower.close()


@live_group
def test_follow_a_rotated_log(live: Any, tmp_path: Path) -> None:
    """A real `watch --follow` process: the log is rotated mid-run and the failure lands in the new file."""
    logs = tmp_path / "logs"
    logs.mkdir()
    log = logs / "train.log"
    log.write_text("".join(f"step {i} loss 0.5\n" for i in range(5)))
    report = tmp_path / "report.json"
    run = live(["watch", "--follow", "--exit-on-failure", "--report", str(report), str(logs)])
    assert run.err.wait_for("following 1 file(s)", 30) is not None
    log.rename(logs / "train.log.1")
    log.write_text("step 5 loss 0.4\n")
    assert run.err.wait_for("rotated", 10) is not None
    with log.open("a") as f:
        f.write(KILLED)
    assert run.out.wait_for(BANNER, 10) is not None
    assert run.wait(30) == 1
    out = run.out.text()
    assert "dataloader-worker-failure/worker-segfault" in out.split(FINAL_BANNER)[0]
    d = json.loads(report.read_text())
    assert d["primary"]["evidence"][0]["path"] == str(log)
    assert d["primary"]["evidence"][0]["line"] == 2
    assert sorted(i["path"] for i in d["inputs"]) == [str(log), str(logs / "train.log.1")]
    assert next(i for i in d["inputs"] if i["path"].endswith(".1"))["lines"] == 5


@live_group
def test_follow_ends_on_ctrl_c_with_the_final_diagnosis(live: Any, tmp_path: Path) -> None:
    log = tmp_path / "train.log"
    log.write_text("step 1\nTraining completed\n")
    run = live(["watch", "--follow", "--json", str(log)])
    assert run.err.wait_for("following 1 file(s)", 30) is not None
    run.signal(signal.SIGINT)
    assert run.wait(30) == 0
    final = json.loads(run.out.text().strip().splitlines()[-1])
    assert final["verdict"] == "healthy"


@live_group
def test_follow_reports_a_silent_log_as_a_hang(live: Any, tmp_path: Path) -> None:
    log = tmp_path / "train.log"
    log.write_text("step 1 loss 0.5\n")
    run = live(["watch", "--follow", "--hang-timeout", "1", "--exit-on-failure", "--json", str(log)])
    assert run.wait(30) == 1
    assert "[trainmedic] watchdog: no progress for" in run.err.text()
    live_diag = json.loads(run.out.text().strip().splitlines()[0])
    assert live_diag["verdict"] == "hang"
    assert live_diag["primary"]["id"] == "training-hang/stalled-progress"


@live_group
def test_follow_with_pid_takes_the_stacks_of_a_silent_job(live: Any, tmp_path: Path) -> None:
    """The job is not ours (a scheduler started it): --pid lets the watchdog dump its stacks anyway."""
    log = tmp_path / "train.log"
    script = tmp_path / "job.py"
    script.write_text(f"import time\nopen({str(log)!r}, 'w').write('step 1 loss 0.5\\n')\n"
                      "def wait_for_the_storage():\n    time.sleep(60)\nwait_for_the_storage()\n")
    job = live(["run", "--", sys.executable, str(script)])
    deadline = time.monotonic() + 30
    while not log.exists() and time.monotonic() < deadline:
        time.sleep(0.05)
    report = tmp_path / "report.json"
    run = live(["watch", "--follow", "--hang-timeout", "1", "--pid", str(job.proc.pid), "--exit-on-failure",
                "--report", str(report), str(log)])
    assert run.wait(60) == 1
    d = json.loads(report.read_text())
    assert d["verdict"] == "hang"
    assert "sleeps in wait_for_the_storage (job.py:4)" in d["primary"]["why"]  # not in `trainmedic run` above it
    job.signal(signal.SIGTERM)
    job.wait(30)
