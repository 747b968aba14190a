"""`trainmedic fleet`: jobs found in the layouts teams keep, diagnosed into the history database, read
again only when they change, and reported by cause, by host (above chance, with a binomial test) and
by the template of failures no signature knows."""

from __future__ import annotations

import json
import shutil
import sys
from pathlib import Path

import pytest

from tests.conftest import FIXTURES, run_cli
from trainmedic.fleet.jobs import discover
from trainmedic.fleet.report import binomial_tail, summarise

LAB = FIXTURES / "lab"
sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "benchmarks"))


def test_jobs_are_found_in_each_layout(tmp_path: Path) -> None:
    shutil.copytree(LAB / "ddp-worker-crash-logdir", tmp_path / "torchrun-job")  # --log-dir: one job
    (tmp_path / "slurm").mkdir()
    (tmp_path / "slurm" / "slurm-1234.out").write_text("step 1 loss 0.5\n")
    (tmp_path / "slurm" / "slurm-1235.out").write_text("step 1 loss 0.5\n")
    (tmp_path / "plain").mkdir()
    (tmp_path / "plain" / "node-01.log").write_text("x\n")
    (tmp_path / "plain" / "node-02.log.gz").write_bytes(b"")
    (tmp_path / "plain" / "notes.md").write_text("not a log\n")
    jobs = {Path(j.id).relative_to(tmp_path).as_posix(): j for j in discover([tmp_path])}
    assert set(jobs) == {"torchrun-job", "slurm/slurm-1234.out", "slurm/slurm-1235.out", "plain"}
    assert len(jobs["torchrun-job"].files) > 1 and all("logdir" in f or "output" in f for f in jobs["torchrun-job"].files)
    assert [Path(f).name for f in jobs["plain"].files] == ["node-01.log", "node-02.log.gz"]


def test_scan_stores_each_job_and_reads_only_what_changed(tmp_path: Path) -> None:
    root = tmp_path / "fleet"
    for case in ("ddp-worker-crash", "hf-healthy", "ddp-unknown-exception"):
        shutil.copytree(LAB / case, root / case)
    db = f"sqlite:///{tmp_path / 'fleet.db'}"
    first = run_cli("fleet", "scan", str(root), "--db", db, "--jobs", "2")
    assert first.code == 0, first.err
    assert "read 3 job(s), 0 unchanged" in first.err
    again = run_cli("fleet", "scan", str(root), "--db", db)
    assert "read 0 job(s), 3 unchanged" in again.err  # nothing is read again
    log = root / "hf-healthy" / "output.log"
    log.write_text(log.read_text() + "RuntimeError: DataLoader worker (pid 9) is killed by signal: Killed.\n")
    third = run_cli("fleet", "scan", str(root), "--db", db)
    assert "read 1 job(s), 2 unchanged" in third.err
    report = run_cli("fleet", "report", "--db", db, "--format", "json").json()
    assert report["jobs"] == 3 and report["failed"] == 3
    causes = {c["id"]: c["jobs"] for c in report["causes"]}
    assert causes == {"dataloader-worker-failure/worker-oom": 2, "unclassified-failure/uncaught-exception": 1}
    (unknown,) = report["unclassified"]
    assert "LeaseExpired" in unknown["template"] and "<NUM>" in unknown["template"]  # masked, to group by
    md = run_cli("fleet", "report", "--db", db)
    assert md.code == 0 and md.out.startswith("## trainmedic fleet: 3 of 3 jobs failed or hung")


def test_bad_inputs_are_one_line_and_exit_2(tmp_path: Path) -> None:
    res = run_cli("fleet", "scan", str(tmp_path / "missing"), "--db", f"sqlite:///{tmp_path / 'f.db'}")
    assert res.code == 2 and "no such file or directory" in res.err and "Traceback" not in res.err
    res = run_cli("fleet", "report", "--db", "mysql://x")
    assert res.code == 2 and "unsupported database URL" in res.err


def test_binomial_tail_against_exact_values() -> None:
    assert binomial_tail(0, 10, 0.3) == 1.0
    assert binomial_tail(10, 10, 0.5) == pytest.approx(0.5**10)
    assert binomial_tail(3, 5, 0.5) == pytest.approx(0.5)  # symmetric: P(X >= 3) of 5 fair coins
    assert binomial_tail(60, 1000, 1 / 64) < 1e-12  # a host with 1/64 of the slots starting 6 % of failures


def test_the_planted_bad_host_comes_out_on_top(tmp_path: Path) -> None:
    from bench_fleet import BAD_HOST, generate  # the benchmark's seeded generator

    generate(tmp_path / "fleet", 400, seed=11)
    db = f"sqlite:///{tmp_path / 'fleet.db'}"
    assert run_cli("fleet", "scan", str(tmp_path / "fleet"), "--db", db).code == 0
    report = run_cli("fleet", "report", "--db", db, "--format", "json").json()
    # jobs 10 minutes apart: their failures fall in more than one ISO week (a failure without a time in
    # its lines counts in the week it was scanned)
    assert len(report["weeks"]) >= 2 and sum(w["failed"] for w in report["weeks"]) == report["failed"]
    top = report["hosts"][0]
    assert top["host"] == BAD_HOST and top["causes"].get("nvidia-xid/fallen-off-bus", 0) >= 3
    assert top["gpus"].get("PCI 0000:3b:00", 0) >= 3  # the GPU its Xid lines name
    assert summarise([])["jobs"] == 0
    assert json.dumps(report)  # plain JSON


@pytest.mark.slow
@pytest.mark.timeout(600)
def test_ray_gives_the_same_rows_as_local_processes(tmp_path: Path) -> None:
    """`--ray local` starts a Ray instance for the scan, runs each diagnosis as a task, and stores the
    same rows as the local backend."""
    pytest.importorskip("ray")
    root = tmp_path / "fleet"
    for case in ("ddp-worker-crash", "hf-healthy", "ddp-unknown-exception", "accelerate-rank-hang"):
        shutil.copytree(LAB / case, root / case)
    reports = []
    for name, extra in (("local", []), ("ray", ["--ray", "local"])):
        db = f"sqlite:///{tmp_path / (name + '.db')}"
        res = run_cli("fleet", "scan", str(root), "--db", db, *extra)
        assert res.code == 0, res.err
        assert "read 4 job(s), 0 unchanged" in res.err
        reports.append(run_cli("fleet", "report", "--db", db, "--format", "json").json())
    assert reports[0] == reports[1]


def test_an_interrupted_scan_resumes_where_it_stopped(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    from trainmedic.fleet import scan as fleet_scan
    from trainmedic.fleet.store import FleetStore

    root = tmp_path / "fleet"
    for case in ("ddp-worker-crash", "hf-healthy", "ddp-unknown-exception", "hf-nan-loss"):
        shutil.copytree(LAB / case, root / case)
    store = FleetStore(f"sqlite:///{tmp_path / 'fleet.db'}")
    store.create()
    monkeypatch.setattr(fleet_scan, "BATCH", 2)
    stored: list[int] = []

    def interrupted(rows: list[dict[str, object]]) -> int:
        if stored:
            raise KeyboardInterrupt  # Ctrl-C after the first batch was stored
        stored.append(store.put(rows))
        return stored[-1]

    with pytest.raises(KeyboardInterrupt):
        fleet_scan.scan(discover([root]), store.signatures(), interrupted, workers=1)
    assert stored == [2] and len(store.rows()) == 2
    read, same = fleet_scan.scan(discover([root]), store.signatures(), store.put, workers=1)
    assert (read, same) == (2, 2) and len(store.rows()) == 4
    store.dispose()
