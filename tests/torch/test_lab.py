"""The lab: its registry, its committed captures, and (marked `lab`) real reproductions run live.

The corpus tests need no torch: they check that every committed capture is listed in the manifest
with the registry's ground truth and still shows the real messages its case is about. The live
tests run a few cases through the runner and check what PyTorch printed and that nothing of the run
survives it (processes, temporary directory, cgroup).
"""

from __future__ import annotations

import importlib.util
import json
import os
from collections.abc import Callable
from dataclasses import replace
from pathlib import Path
from typing import Any, TypeVar

import pytest

from tests.conftest import FIXTURES, run_cli
from trainmedic.torch.lab import cases as lab_cases
from trainmedic.torch.lab.cases import Case, Outcome
from trainmedic.torch.lab.runner import WARMUP_LIMIT

LAB = FIXTURES / "lab"
MANIFEST = LAB / "manifest.json"
HAS_TORCH = importlib.util.find_spec("torch") is not None
MANIFEST_KEYS = {
    "case",
    "files",
    "expected_id",
    "expected_rank",
    "expected_collateral_ranks",
    "expected_verdict",
    "injected",
    "torch_version",
    "command",
    "python_version",
    "captured_at",
}


def _manifest() -> list[dict[str, Any]]:
    return json.loads(MANIFEST.read_text()) if MANIFEST.exists() else []


def _entry_id(entry: dict[str, Any]) -> str:
    return str(entry["case"])


# ---------------------------------------------------------------- registry


def test_registry_is_consistent() -> None:
    names = [c.name for c in lab_cases.CASES]
    assert len(names) == len(set(names))
    for case in lab_cases.CASES:
        assert case.program_path.is_file(), case.name
        assert case.expect_text, f"{case.name}: say which real message the capture must show"
        # DeepSpeed compiles its CPU op on a first run; every other case finishes well within 90 s
        assert case.time_limit <= (180 if case.launcher == "deepspeed" else 90)
        if case.expected_verdict == "healthy":
            assert case.expected_id is None and not case.expected_collateral_ranks
        if case.nproc > 1 and case.expected_verdict != "healthy" and not case.every_rank:
            # rank 0 as the culprit would make "the first rank" a correct guess by accident
            assert case.expected_rank not in (None, 0), case.name
            assert case.expected_rank not in case.expected_collateral_ranks
            assert case.expected_collateral_ranks <= set(range(case.nproc))
        else:
            assert case.expected_rank is None and not case.expected_collateral_ranks
        if case.launcher != "python":
            assert case.nproc > 1, case.name
        if case.every_rank:
            assert case.nproc > 1 and case.expected_id, case.name


def test_unknown_case_names_the_known_ones() -> None:
    with pytest.raises(KeyError, match="shm-exhausted"):
        lab_cases.get("no-such-case")


def _outcome(verdict: str = "failure", id: str | None = None, rank: int | None = None, *coll: int,
             action: str | None = "fix-then-resume", step: int | None = None) -> Outcome:
    return Outcome(verdict, id, rank, frozenset(coll), None if verdict == "healthy" else action, step)


def test_mismatches_compare_verdict_id_rank_and_collateral() -> None:
    ddp = lab_cases.get("ddp-worker-crash")
    good = _outcome("failure", ddp.expected_id, 2, 0, 1, 3)
    assert lab_cases.mismatches(ddp, good) == []
    assert lab_cases.mismatches(ddp, replace(good, rank=0)) == ["rank 0 != 2"]
    assert lab_cases.mismatches(ddp, replace(good, collateral_ranks=frozenset({1, 3})))
    assert lab_cases.mismatches(ddp, replace(good, id="launcher-teardown/failure-summary"))
    # no id in the ground truth: any id passes, the rank still counts
    missing = lab_cases.get("ddp-worker-crash-missing-rank")
    assert lab_cases.mismatches(missing, _outcome("failure", "whatever", 2, 0, 1, 3, action="stop")) == []
    assert lab_cases.mismatches(missing, _outcome("failure", None, None, 0, 1, 3, action="stop")) == ["rank None != 2"]
    # single process: a rank on the finding is wrong
    sigkill = lab_cases.get("worker-sigkill")
    assert lab_cases.mismatches(sigkill, _outcome("failure", sigkill.expected_id, 0))
    # the next action and its checkpoint are compared where the case names them
    assert lab_cases.mismatches(ddp, replace(good, action="restart"))
    disk = lab_cases.get("hf-checkpoint-disk-full")
    assert lab_cases.mismatches(disk, _outcome("failure", disk.expected_id, None, step=2)) == []
    assert lab_cases.mismatches(disk, _outcome("failure", disk.expected_id, None, step=4))
    assert lab_cases.mismatches(missing, _outcome("failure", None, 2, 0, 1, 3, action="restart"))
    healthy = lab_cases.get("shm-control")
    assert lab_cases.mismatches(healthy, _outcome("healthy")) == []
    assert lab_cases.mismatches(healthy, replace(_outcome("healthy"), action="restart"))
    # every rank fails alike: any one rank first, the others its collateral
    config = lab_cases.get("deepspeed-batch-config")
    assert config.every_rank and config.nproc == 3
    assert lab_cases.mismatches(config, _outcome("failure", config.expected_id, 2, 0, 1)) == []  # fix-then-resume
    assert lab_cases.mismatches(config, _outcome("failure", config.expected_id, 0, 1, 2)) == []
    assert lab_cases.mismatches(config, _outcome("failure", config.expected_id, 0, 1))
    assert lab_cases.mismatches(config, _outcome("failure", config.expected_id, None, 0, 1, 2))
    assert lab_cases.mismatches(healthy, _outcome("hang", action=None)) == ["verdict 'hang' != 'healthy'"]


def _without(path: Path, dest: Path, text: str) -> Path:
    """A copy of a capture without the lines that hold `text`."""
    lines = path.read_text().splitlines(keepends=True)
    dest.write_text("".join(line for line in lines if text not in line))
    return dest


def test_a_rank_the_deepspeed_launcher_killed_silent_is_not_expected(tmp_path: Path) -> None:
    """The DeepSpeed launcher SIGTERMs every rank once one has failed; a collateral rank killed before its
    peer's closed socket reached it printed nothing (seen on a loaded CI machine), so neither the capture
    nor the diagnosis is held to it. Another launcher, or no teardown line, keeps the full expectation."""
    case = lab_cases.get("deepspeed-worker-killed")
    capture = LAB / case.name / lab_cases.CONSOLE_LOG
    silent = [_without(capture, tmp_path / "silent.log", "[rank0]:")]
    assert lab_cases.silenced_by_teardown(case, silent) == {0}
    assert lab_cases.capture_problems(case, silent) == []
    got = _outcome("failure", case.expected_id, 1, 2, action="fix-then-resume")
    assert lab_cases.mismatches(case, got, frozenset({0})) == []
    assert lab_cases.mismatches(case, got)  # without the teardown, rank 0 is owed
    assert lab_cases.silenced_by_teardown(case, [capture]) == frozenset()
    # near misses: the teardown line gone, or a launcher that lets the survivors report
    untorn = [_without(silent[0], tmp_path / "untorn.log", "] Killing subprocess")]
    assert lab_cases.capture_problems(case, untorn) == ["no trace of collateral rank(s) [0]"]
    torchrun = replace(case, launcher="torchrun")
    assert lab_cases.capture_problems(torchrun, silent) == ["no trace of collateral rank(s) [0]"]


def test_build_command_wraps_shm_cases_in_a_private_namespace(tmp_path: Path) -> None:
    from trainmedic.torch.lab import runner

    shm = runner.build_command(lab_cases.get("shm-exhausted"), python="py", work=tmp_path)
    assert shm[:5] == ["unshare", "--mount", "--propagation", "private", "--"]
    assert "4m" in shm
    assert shm[-6:] == ["py", str(lab_cases.PROGRAMS_DIR / "shm.py"), "--mode", "collate", "--sample-mb", "8"]
    ddp = runner.build_command(lab_cases.get("ddp-worker-crash-logdir"), python="py", work=tmp_path)
    i = ddp.index("py")
    assert ddp[i : i + 3] == ["py", "-m", "torch.distributed.run"]
    assert "--nproc_per_node=4" in ddp and ddp[ddp.index("--redirects") :][:2] == ["--redirects", "3"]
    assert ddp[ddp.index("--log-dir") + 1] == str(tmp_path / "logdir")


def test_warm_up_runs_once_outside_the_limit_and_clears_locks_of_killed_builds(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A one-time build (DeepSpeed's CPU op) runs before the case, once, in the lab's own extension
    directory; a lock a killed build left there (torch waits ten minutes on one) is cleared."""
    import sys
    import time

    from trainmedic.torch.lab import runner

    ext = tmp_path / "ext"
    monkeypatch.setattr(runner, "EXTENSIONS_DIR", ext)
    monkeypatch.setattr(runner, "_warmed", set())
    stale, current = ext / "py311_cpu" / "old_op" / "lock", ext / "py311_cpu" / "busy_op" / "lock"
    for lock in (stale, current):
        lock.parent.mkdir(parents=True)
        lock.touch()
    old = time.time() - runner.WARMUP_LIMIT - 60
    os.utime(stale, (old, old))
    seen = tmp_path / "seen.txt"
    code = f"import os; open({str(seen)!r}, 'a').write(os.environ['TORCH_EXTENSIONS_DIR'] + chr(10))"
    case = replace(lab_cases.get("getitem-exception-w0"), warmup=code)
    runner._warm_up(case, sys.executable)
    runner._warm_up(case, sys.executable)
    assert seen.read_text().splitlines() == [str(ext)]
    assert not stale.exists() and current.exists()  # a build may hold the recent one

    # A build past the limit is killed, and the lock it took goes with it.
    monkeypatch.setattr(runner, "WARMUP_LIMIT", 1.0)
    left = ext / "py311_cpu" / "slow_op" / "lock"
    hung = f"import pathlib, time; p = pathlib.Path({str(left)!r}); p.parent.mkdir(); p.touch(); time.sleep(60)"
    start = time.monotonic()
    runner._warm_up(replace(case, warmup=hung), sys.executable)
    assert time.monotonic() - start < 30
    assert not left.exists() and left.parent.is_dir()


def test_build_command_runs_each_framework_through_its_own_launcher(tmp_path: Path) -> None:
    from trainmedic.torch.lab import runner

    def after_python(case: str) -> list[str]:
        argv = runner.build_command(lab_cases.get(case), python="py", work=tmp_path)
        return argv[argv.index("py") + 1 :]

    acc = after_python("accelerate-rank-hang")
    assert acc[:3] == ["-m", "accelerate.commands.launch", "--multi_gpu"]
    assert acc[acc.index("--num_processes") + 1] == "3" and int(acc[acc.index("--main_process_port") + 1]) > 0
    assert acc[-5:] == [str(lab_cases.PROGRAMS_DIR / "accelerate_ddp.py"), "--failure", "hang", "--fail-rank", "1"]
    ds = after_python("deepspeed-worker-killed")
    assert ds[:4] == ["-m", "deepspeed.launcher.runner", "--num_accelerators", "3"]
    assert dict(lab_cases.get("deepspeed-worker-killed").env) == {"DS_ACCELERATOR": "cpu"}
    # Lightning starts its own ranks: a plain script
    assert after_python("lightning-rank-hang")[0] == str(lab_cases.PROGRAMS_DIR / "lightning_ddp.py")


def test_a_disk_that_fills_is_a_small_tmpfs_in_the_runs_own_namespace(tmp_path: Path) -> None:
    from trainmedic.torch.lab import runner

    case = lab_cases.get("hf-checkpoint-disk-full")
    assert case.needs_root
    argv = runner.build_command(case, python="py", work=tmp_path)
    script = argv[argv.index("-c") + 1]
    assert '"$TMPDIR/small"' in script and argv[argv.index("-c") + 2 : argv.index("-c") + 4] == ["1g", "300k"]


def test_without_root_cases_that_need_it_are_skipped_with_the_reason(monkeypatch: pytest.MonkeyPatch) -> None:
    from trainmedic.torch.lab import runner

    monkeypatch.setattr(os, "geteuid", lambda: 1000)
    for probe in ("private_shm_problem", "_memory_cgroup_root"):
        monkeypatch.setattr(runner, probe, getattr(runner, probe).__wrapped__)  # past the cache
    assert "needs root" in (runner.skip_reason(lab_cases.get("shm-exhausted")) or "")
    assert "needs root" in (runner.skip_reason(lab_cases.get("worker-oom")) or "")
    plain = lab_cases.get("worker-sigkill")
    assert runner.skip_reason(plain) in (None, "torch is not installed (pip install 'trainmedic[torch]')")
    # without a private /dev/shm the plain cases run as they are
    assert runner.build_command(plain, python="py", work=Path("/w"))[0] == "py"


# ---------------------------------------------------------------- committed corpus (no torch needed)


@pytest.mark.skipif(not MANIFEST.exists(), reason="no lab captures yet (make lab)")
def test_manifest_matches_registry_and_files() -> None:
    entries = _manifest()
    assert entries, "empty manifest"
    listed: set[Path] = set()
    for entry in entries:
        assert entry.keys() >= MANIFEST_KEYS, f"{entry.get('case')}: missing {MANIFEST_KEYS - entry.keys()}"
        case = lab_cases.get(entry["case"])
        truth = case.ground_truth()
        assert {k: entry[k] for k in truth} == truth, f"{case.name}: rerun scripts/capture_lab.py --manifest-only"
        assert entry["torch_version"].startswith("2.13.0")
        assert entry["files"] and entry["files"][0] == f"{case.name}/{lab_cases.CONSOLE_LOG}"
        for name in entry["files"]:
            assert name.startswith(f"{case.name}/")
            assert (LAB / name).is_file(), name
            listed.add(LAB / name)
    on_disk = {p for p in LAB.rglob("*") if p.is_file() and p != MANIFEST}
    assert on_disk == listed, f"files not in the manifest: {sorted(map(str, on_disk - listed))}"


@pytest.mark.skipif(not MANIFEST.exists(), reason="no lab captures yet (make lab)")
@pytest.mark.parametrize("entry", _manifest(), ids=_entry_id)
def test_capture_shows_its_real_messages(entry: dict[str, Any]) -> None:
    case = lab_cases.get(entry["case"])
    paths = [LAB / f for f in entry["files"]]
    assert lab_cases.capture_problems(case, paths) == []
    if case.drop_rank_logs is not None:
        assert not any(f"/attempt_0/{case.drop_rank_logs}/" in f for f in entry["files"])


def test_cli_lab_list_json() -> None:
    res = run_cli("lab", "list", "--json")
    assert res.code == 0, res.err
    listed = res.json()
    assert [c["case"] for c in listed] == [c.name for c in lab_cases.CASES]
    for item in listed:
        assert item["runs_here"] is (item["skip_reason"] is None)


def test_cli_lab_usage_errors() -> None:
    assert run_cli("lab").code == 2
    res = run_cli("lab", "run", "no-such-case")
    assert res.code == 2 and "known:" in res.err and "Traceback" not in res.err


# ---------------------------------------------------------------- live reproductions


F = TypeVar("F", bound=Callable[..., None])


def live(timeout: int) -> Callable[[F], F]:
    """Marks of a test that runs real PyTorch programs: `lab`, `slow`, a timeout, and torch needed. They
    share one xdist worker: two multi-rank runs at once (a DeepSpeed build beside a Lightning job) once
    starved each other on a loaded two-core CI machine until ranks died before printing."""

    def mark(test: F) -> F:
        marks = (
            pytest.mark.lab,
            pytest.mark.slow,
            pytest.mark.xdist_group("lab-live"),
            pytest.mark.timeout(timeout),
            pytest.mark.skipif(not HAS_TORCH, reason="needs torch (pip install 'trainmedic[torch]')"),
        )
        for m in marks:
            test = m(test)
        return test

    return mark


def _run(case: Case, tmp_path: Path) -> Any:
    from trainmedic.torch.lab import runner

    result = runner.run_case(case, tmp_path / case.name)
    if result.skipped:
        pytest.skip(result.skipped)
    assert runner.marked_pids(result.token) == [], "a process of the run survived it"
    assert not Path(result.work).exists(), "the run's temporary directory survived it"
    return result


@pytest.mark.parametrize(
    ("name", "message"),
    [
        ("worker-sigkill", "is killed by signal: Killed."),
        ("worker-segfault", "Unexpected segmentation fault encountered in worker."),
        ("getitem-exception", "KeyError: Caught KeyError in DataLoader worker process"),
        ("fd-exhaustion", "Too many open files. Communication with the workers is no longer possible."),
        ("shm-exhausted", "No space left on device (28)"),
        ("shm-bus-error", "is killed by signal: Bus error."),
        ("ddp-worker-crash-missing-rank", "Root Cause (first observed failure):"),
    ],
)
@live(timeout=180)
def test_live_case_prints_the_real_message(name: str, message: str, tmp_path: Path) -> None:
    case = lab_cases.get(name)
    result = _run(case, tmp_path)
    assert not result.timed_out
    assert result.returncode != 0
    assert message.encode() in b"".join(p.read_bytes() for p in result.paths)
    assert lab_cases.capture_problems(case, result.paths) == []
    if case.drop_rank_logs is not None:
        ranks = {Path(f).parts[-2] for f in result.files if f.startswith(lab_cases.RANK_LOG_DIR)}
        assert ranks == {"0", "1", "3"}


@live(timeout=120)
def test_live_stall_is_stopped_and_the_log_just_stops(tmp_path: Path) -> None:
    case = lab_cases.get("worker-hang-silent")
    result = _run(case, tmp_path)
    assert result.stopped and not result.timed_out
    text = result.paths[0].read_text()
    assert text.rstrip().endswith("epoch 1 with num_workers=2 timeout=0")


@live(timeout=120)
def test_live_time_limit_kills_everything(tmp_path: Path) -> None:
    """A reproduction that misbehaves (hangs past its limit) is killed with all its workers."""
    stuck = replace(lab_cases.get("worker-hang-silent"), name="stuck", stop_after=None, time_limit=6.0)
    result = _run(stuck, tmp_path)
    assert result.timed_out and not result.stopped


@live(timeout=180)
def test_live_memory_cgroup_case_leaves_no_cgroup(tmp_path: Path) -> None:
    case = lab_cases.get("worker-oom")
    result = _run(case, tmp_path)
    kernel = (result.directory / lab_cases.KERNEL_LOG).read_text()
    assert "(pt_data_worker)" in kernel
    cgroups = list(Path("/sys/fs/cgroup").rglob(f"trainmedic-lab-{result.token}"))
    assert cgroups == []


@live(timeout=120)
def test_live_cli_run_keeps_logs_with_out(tmp_path: Path) -> None:
    res = run_cli("lab", "run", "getitem-exception-w0", "--no-diagnose", "--out", str(tmp_path), "--json")
    assert res.code == 0, res.out + res.err
    report = res.json()
    assert report["summary"]["captured"] == 1
    (case,) = report["cases"]
    assert case["status"] == "captured"
    assert Path(case["files"][0]).read_text().rstrip().endswith("KeyError: 'dgo'")


@pytest.mark.parametrize("name", ["hf-getitem-exception", "accelerate-worker-killed", "lightning-callback-raises",
                                  "deepspeed-worker-killed"])
@live(timeout=300 + int(WARMUP_LIMIT))  # a first DeepSpeed case builds its op before its run
def test_live_framework_case_is_diagnosed_exactly(name: str, tmp_path: Path) -> None:
    """One case per framework, run for real with the frameworks installed here: the program still works
    with them, the capture shows its messages, and the diagnosis matches the ground truth."""
    from trainmedic.api import diagnose

    case = lab_cases.get(name)
    result = _run(case, tmp_path)
    # (what the run printed, in the failure message: a CI run that loses it leaves nothing else to read)
    tail = (result.directory / lab_cases.CONSOLE_LOG).read_text(errors="replace")[-4000:]
    assert not result.timed_out and result.returncode != 0, tail
    assert lab_cases.capture_problems(case, result.paths) == [], tail
    silenced = lab_cases.silenced_by_teardown(case, result.paths)
    assert lab_cases.mismatches(case, Outcome.of(diagnose(result.paths)), silenced) == [], tail
