"""Machine facts confirm or refute causes: --dmesg, --facts (doctor JSON) and --probe change verdict and confidence."""

from __future__ import annotations

import json
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from tests.conftest import run_cli

BUS = ("[rank3]: RuntimeError: DataLoader worker (pid 5123) is killed by signal: Bus error. It is possible that "
       "dataloader's workers are out of shared memory. Please try to raise your shared memory limit.\n")
KILLED = ("[rank1]: RuntimeError: DataLoader worker (pid 30581) is killed by signal: Killed. \n"
          "[rank1]: RuntimeError: DataLoader worker (pid(s) 30581) exited unexpectedly\n")
EMFILE = "[rank0]: OSError: [Errno 24] Too many open files: '/data/shard-00042.tar'\n"
# OpenBLAS's words (blas_server.c) as a worker prints them on a node whose user ran out of tasks
THREADS = ("OpenBLAS blas_thread_init: pthread_create failed for thread 55 of 64: Resource temporarily unavailable\n"
           "OpenBLAS blas_thread_init: RLIMIT_NPROC 4096 current, 1544645 max\n")


def _doctor_json(tmp_path: Path, checks: list[dict[str, str]]) -> Path:
    path = tmp_path / "doctor.json"
    path.write_text(json.dumps({"checks": checks, "host": "node-3", "time": "2026-11-29T16:29:22+00:00"}))
    return path


def _check(cid: str, status: str, value: str, data: dict[str, object]) -> dict[str, object]:
    return {"id": cid, "status": status, "value": value, "threshold": "", "why": "", "fix": "", "data": data}


def test_dmesg_file_turns_a_kill_into_an_oom_kill_and_says_which_record(tmp_path: Path) -> None:
    log = tmp_path / "train.log"
    log.write_text(KILLED)
    dmesg = tmp_path / "dmesg.txt"
    dmesg.write_text(
        "[ 8811.000001] python invoked oom-killer: gfp_mask=0x140cca(GFP_HIGHUSER_MOVABLE|__GFP_COMP), order=0\n"
        "[ 8812.441235] Out of memory: Killed process 30581 (pt_data_worker) total-vm:31245880kB, "
        "anon-rss:25829144kB, file-rss:0kB, shmem-rss:0kB, UID:0 pgtables:51292kB oom_score_adj:0\n")
    before = run_cli("diagnose", str(log), "--json").json()
    after = run_cli("diagnose", str(log), "--dmesg", str(dmesg), "--json").json()
    # Before: the likeliest sender, unconfirmed (the kill is the first alternative, the record is asked for).
    assert before["primary"]["id"] == "dataloader-worker-failure/worker-oom"
    assert before["alternatives"][0]["id"] == "dataloader-worker-failure/worker-killed"
    assert any("dmesg" in m["command"] for m in before["primary"]["missing"])
    assert after["primary"]["id"] == "dataloader-worker-failure/worker-oom"
    assert after["primary"]["confidence"] > before["primary"]["confidence"]
    assert any("dmesg.txt:2" in e["text"] for e in after["primary"]["evidence"])
    assert not any("dmesg" in m["command"] for m in after["primary"]["missing"])
    assert any(f["id"] == "kernel.oom_kill" for f in after["facts"])


def test_doctor_json_with_a_64_mb_shm_confirms_and_quotes_the_size(tmp_path: Path) -> None:
    log = tmp_path / "train.log"
    log.write_text(BUS)
    small = _doctor_json(tmp_path, [_check("shm", "warn", "size 64 MiB, free 60 MiB",
                                           {"size_bytes": 64 << 20, "free_bytes": 60 << 20})])
    d = run_cli("diagnose", str(log), "--facts", str(small), "--json").json()
    assert d["primary"]["id"] == "dataloader-worker-failure/shm-exhausted"
    assert d["primary"]["confidence"] >= 0.92
    assert "64 MiB" in d["primary"]["why"]
    assert any(f["effect"] == "confirms shm-exhausted" for f in d["facts"])


def test_a_fact_that_contradicts_lowers_the_cause_and_says_so(tmp_path: Path) -> None:
    log = tmp_path / "train.log"
    log.write_text(BUS)
    big = _doctor_json(tmp_path, [_check("shm", "ok", "size 32 GiB, free 32 GiB",
                                         {"size_bytes": 32 << 30, "free_bytes": 32 << 30})])
    plain = run_cli("diagnose", str(log), "--json").json()["primary"]
    d = run_cli("diagnose", str(log), "--facts", str(big), "--json").json()["primary"]
    assert d["confidence"] < plain["confidence"]
    assert "argues against" in d["why"]


def test_ulimit_fact_is_quoted_for_descriptor_exhaustion(tmp_path: Path) -> None:
    log = tmp_path / "train.log"
    log.write_text(EMFILE)
    facts = _doctor_json(tmp_path, [_check("nofile", "warn", "soft 1024, hard 4096, open 12",
                                           {"soft": 1024, "hard": 4096, "open": 12})])
    d = run_cli("diagnose", str(log), "--facts", str(facts), "--json").json()["primary"]
    assert d["id"] == "dataloader-worker-failure/fd-exhaustion"
    assert "ulimit -n is 1024" in d["why"]
    assert d["confidence"] >= 0.92


def test_a_small_task_limit_confirms_a_thread_the_os_refused_and_none_weakens_it(tmp_path: Path) -> None:
    log = tmp_path / "train.log"
    log.write_text(THREADS)
    low = _doctor_json(tmp_path, [_check("nproc", "warn", "ulimit -u 4096, user's threads 3900",
                                         {"soft": 4096, "user_threads": 3900, "pids_max": None})])
    plain = run_cli("diagnose", str(log), "--json").json()["primary"]
    assert plain["id"] == "host-resource-limit/thread-creation-failed"
    d = run_cli("diagnose", str(log), "--facts", str(low), "--json").json()
    assert d["primary"]["confidence"] >= 0.9
    assert "allows 4096 tasks" in d["primary"]["why"]
    assert any(f["effect"] == "confirms thread-creation-failed" for f in d["facts"])
    # Near miss: no task limit at all leaves the threads' stacks (memory) as the reason, so it weighs less.
    none = _doctor_json(tmp_path, [_check("nproc", "ok", "ulimit -u unlimited", {"soft": -1, "pids_max": None})])
    weaker = run_cli("diagnose", str(log), "--facts", str(none), "--json").json()["primary"]
    assert weaker["confidence"] < plain["confidence"]


def test_bad_fact_files_get_one_line_and_exit_2(tmp_path: Path) -> None:
    log = tmp_path / "train.log"
    log.write_text(BUS)
    bad = tmp_path / "doctor.json"
    bad.write_text("{not json")
    res = run_cli("diagnose", str(log), "--facts", str(bad))
    assert res.code == 2 and res.err.count("\n") == 1
    res = run_cli("diagnose", str(log), "--dmesg", str(tmp_path / "missing.txt"))
    assert res.code == 2 and res.err.count("\n") == 1


@pytest.mark.slow
def test_probe_inside_a_namespace_with_a_4_mb_shm(tmp_path: Path) -> None:
    if shutil.which("unshare") is None:
        pytest.skip("unshare is not installed")
    log = tmp_path / "train.log"
    log.write_text(BUS)
    script = (f"mount -t tmpfs -o size=4M tmpfs /dev/shm && "
              f"{sys.executable} -m trainmedic diagnose {log} --probe --json")
    proc = subprocess.run(["unshare", "-m", "sh", "-c", script], capture_output=True, text=True, timeout=120,
                          check=False)
    if proc.returncode not in (0, 1) and "mount" in proc.stderr:
        pytest.skip(f"cannot make a private /dev/shm here: {proc.stderr.strip()}")
    d = json.loads(proc.stdout)
    assert d["primary"]["id"] == "dataloader-worker-failure/shm-exhausted"
    assert "4 MiB" in d["primary"]["why"]
    assert d["primary"]["confidence"] >= 0.92


def test_a_cgroup_that_counted_no_oom_kill_leaves_the_kill_to_another_sender(tmp_path: Path) -> None:
    """Without facts a worker's SIGKILL reads as the OOM killer (what real threads found most often); the
    job's cgroup counting no OOM kill at all (memory.events) says another sender killed it."""
    log = tmp_path / "train.log"
    log.write_text(KILLED)
    zero = _doctor_json(tmp_path, [_check("memory", "ok", "oom_kill 0", {"oom_kill_count": 0})])
    d = run_cli("diagnose", str(log), "--facts", str(zero), "--json").json()
    assert d["primary"]["id"] == "dataloader-worker-failure/worker-killed"
    assert "the cgroup counted no OOM kill" in d["primary"]["why"]
    some = _doctor_json(tmp_path, [_check("memory", "warn", "oom_kill 2", {"oom_kill_count": 2})])
    d = run_cli("diagnose", str(log), "--facts", str(some), "--json").json()
    assert d["primary"]["id"] == "dataloader-worker-failure/worker-oom" and d["primary"]["confidence"] >= 0.8
