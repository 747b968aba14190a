"""`trainmedic run` on real processes: pass-through, exit codes, signals, the live diagnosis and its latency,
torchrun, the hang watchdog with real stack dumps, and the metrics endpoint."""

from __future__ import annotations

import json
import re
import signal
import subprocess
import sys
import time
import urllib.request
from pathlib import Path
from typing import Any

import pytest

from tests.conftest import run_cli
from tests.live.conftest import LAB_PROGRAMS, PROGRAMS, live_group, needs_torch
from trainmedic.live.output import BANNER, FINAL_BANNER

_WRITTEN = re.compile(r"failure-written-at=([\d.]+) pid=(\d+)")
_TORCHRUN = [sys.executable, "-m", "torch.distributed.run", "--rdzv-backend=c10d", "--rdzv-endpoint=127.0.0.1:0"]


def _report(path: Path) -> Any:
    return json.loads(path.read_text())


def _py(code: str) -> list[str]:
    return [sys.executable, "-c", code]


# ---------------------------------------------------------------- the command, passed through


def test_exit_code_passes_through() -> None:
    r = run_cli("run", "--", *_py("import sys; print('hello'); sys.exit(7)"))
    assert r.code == 7
    assert r.out == "hello\n"
    assert FINAL_BANNER in r.err and "exited with code 7" in r.err


def test_signal_death_is_128_plus_n() -> None:
    r = run_cli("run", "--", *_py("import os, signal; os.kill(os.getpid(), signal.SIGKILL)"))
    assert r.code == 128 + signal.SIGKILL
    assert "was killed by SIGKILL" in r.err


def test_usage_errors() -> None:
    assert run_cli("run").code == 2
    assert run_cli("run", "--").code == 2
    missing = run_cli("run", "--", "/nonexistent/trainmedic-no-such-command")
    assert missing.code == 127
    assert "command not found" in missing.err
    assert run_cli("run", "--hang-timeout", "0", "--", "true").code == 2


def test_output_is_passed_through_byte_for_byte(tmp_path: Path) -> None:
    """stdout unchanged (partial lines, CRLF, tqdm carriage returns, non-UTF-8 bytes); stderr too, plus ours."""
    payload = b"a\r\nb\rc\n\xff\xfe raw\nno newline at the end"
    script = tmp_path / "emit.py"
    script.write_text("import sys\n"
                      f"sys.stdout.buffer.write({payload!r}); sys.stdout.flush()\n"
                      f"sys.stderr.buffer.write({payload!r}); sys.stderr.flush()\n")
    proc = subprocess.run([sys.executable, "-m", "trainmedic", "run", "--", sys.executable, str(script)],
                          capture_output=True, timeout=60, check=False)
    assert proc.returncode == 0
    assert proc.stdout == payload
    assert proc.stderr.startswith(payload)
    assert FINAL_BANNER.encode() in proc.stderr


@live_group
def test_signals_reach_the_command(live: Any) -> None:
    """SIGTERM and SIGINT sent to trainmedic reach the job; its own exit status comes back."""
    code = ("import signal, sys, time\n"
            "signal.signal(signal.SIGTERM, lambda *a: (print('got SIGTERM', flush=True), sys.exit(42)))\n"
            "print('ready', flush=True)\n"
            "time.sleep(60)\n")
    run = live(["run", "--", *_py(code)])
    assert run.out.wait_for("ready", 30) is not None
    run.signal(signal.SIGTERM)
    assert run.wait(30) == 42
    assert "got SIGTERM" in run.out.text()

    # (the job takes Python's own SIGINT handler: a shell that started `make test` in the background
    # hands its children SIGINT ignored, and the job would inherit that)
    run = live(["run", "--", *_py("import signal, time; signal.signal(signal.SIGINT, signal.default_int_handler); "
                                  "print('ready', flush=True); time.sleep(60)")])
    assert run.out.wait_for("ready", 30) is not None
    run.signal(signal.SIGINT)
    assert run.wait(30) == 128 + signal.SIGINT  # Python dies of the SIGINT after its KeyboardInterrupt
    assert "KeyboardInterrupt" in run.err.text()


def test_run_and_watch_do_not_import_torch(tmp_path: Path) -> None:
    log = tmp_path / "train.log"
    log.write_text("step 1\n")
    code = ("import io, sys\n"
            "from trainmedic.cli.env import Env\n"
            "from trainmedic.cli.main import main\n"
            "env = Env(stdin=io.BytesIO(), stdout=io.StringIO(), stderr=io.StringIO())\n"
            f"main(['run', '--', {sys.executable!r}, '-c', 'pass'], env=env)\n"
            f"main(['watch', {str(log)!r}], env=env)\n"
            "print('torch' in sys.modules)\n")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=60, check=True)
    assert out.stdout.strip() == "False"


# ---------------------------------------------------------------- the live diagnosis


def _latency(run: Any) -> tuple[float, int, float]:
    """(seconds from the failure written to the diagnosis printed, the child's pid, banner arrival time)."""
    t_banner = run.err.wait_for(BANNER, 60)
    assert t_banner is not None, run.err.text()[-3000:]
    m = _WRITTEN.search(run.err.text())
    assert m, run.err.text()[-3000:]
    return t_banner - float(m.group(1)), int(m.group(2)), t_banner


@live_group
def test_failure_is_diagnosed_within_a_second(live: Any) -> None:
    """A plain Python job (no torch): measures the pipeline's own latency."""
    code = ("import sys, time, os\n"
            "for i in range(5): print(f'step {i} loss 0.5', flush=True); time.sleep(0.05)\n"
            "print('RuntimeError: DataLoader worker (pid 4242) is killed by signal: Segmentation fault.', "
            "file=sys.stderr, flush=True)\n"
            "print(f'[test] failure-written-at={time.time():.6f} pid={os.getpid()}', file=sys.stderr, flush=True)\n"
            "time.sleep(3)\n")
    run = live(["run", "--", *_py(code)])
    latency, pid, _ = _latency(run)
    print(f"\n[latency] plain job: failure line written -> diagnosis printed: {latency * 1000:.0f} ms")
    assert latency < 5
    assert Path(f"/proc/{pid}").exists(), "the diagnosis came after the job exited"
    assert "dataloader-worker-failure/worker-segfault" in run.err.text()
    assert run.wait(30) == 0


@live_group
def test_failure_in_chatty_output_is_diagnosed_while_lines_keep_coming(live: Any) -> None:
    """Other ranks keep printing (a line every 20 ms): the scan cannot wait for silence."""
    code = ("import sys, time, os\n"
            "for i in range(50): print(f'[rank0]: step {i} loss 0.5', flush=True); time.sleep(0.02)\n"
            "print('[rank1]: RuntimeError: DataLoader worker (pid 4242) is killed by signal: Segmentation fault.', "
            "file=sys.stderr, flush=True)\n"
            "print(f'[test] failure-written-at={time.time():.6f} pid={os.getpid()}', file=sys.stderr, flush=True)\n"
            "for i in range(50, 250): print(f'[rank0]: step {i} loss 0.5', flush=True); time.sleep(0.02)\n")
    run = live(["run", "--", *_py(code)])
    latency, pid, _ = _latency(run)
    print(f"\n[latency] chatty job: failure line written -> diagnosis printed: {latency * 1000:.0f} ms")
    assert latency < 5
    assert Path(f"/proc/{pid}").exists()
    assert run.wait(30) == 0


@needs_torch
@live_group
def test_real_dataloader_crash_diagnosed_before_exit(live: Any, tmp_path: Path) -> None:
    report = tmp_path / "report.json"
    run = live(["run", "--report", str(report), "--",
                sys.executable, str(PROGRAMS / "crash_then_linger.py"), "4"])
    latency, pid, t_banner = _latency(run)
    alive = Path(f"/proc/{pid}").exists()
    print(f"\n[latency] real DataLoader crash: failure written -> diagnosis printed: {latency * 1000:.0f} ms")
    assert alive, "the diagnosis came after the job exited"
    exiting = run.err.wait_for("[test] exiting", 30)
    assert exiting is not None and exiting > t_banner
    assert latency < 5
    assert run.wait(60) == 1
    live_part = run.err.text().split(FINAL_BANNER)[0]
    assert "dataloader-worker-failure/worker-oom" in live_part
    assert re.search(r"\[trainmedic\] guard: worker-died pid=\d+ worker_id=\d signal=SIGKILL exitcode=-9", live_part)
    d = _report(report)
    assert d["schema"] == "trainmedic.diagnosis/v1"
    assert d["verdict"] == "failure"
    assert d["primary"]["id"] == "dataloader-worker-failure/worker-oom"
    assert any("is killed by signal: Killed" in e["text"] for e in d["primary"]["evidence"])


@needs_torch
@live_group
def test_torchrun_multi_rank_names_the_failing_rank(live: Any, tmp_path: Path) -> None:
    """2 ranks on gloo; rank 1's DataLoader worker is SIGKILLed: rank 1 is named live, before torchrun's summary."""
    report = tmp_path / "report.json"
    run = live(["run", "--report", str(report), "--", *_TORCHRUN, "--nproc_per_node=2",
                str(LAB_PROGRAMS / "ddp.py"), "--failure", "worker-kill", "--fail-rank", "1"])
    t_banner = run.err.wait_for(BANNER, 120)
    assert t_banner is not None, run.err.text()[-3000:]
    assert run.wait(120) == 1
    live_part = run.err.text().split(FINAL_BANNER)[0].split(BANNER, 1)[1]
    assert "dataloader-worker-failure/worker-oom" in live_part
    assert "rank 1" in live_part
    t_summary = run.err.wait_for("Root Cause", 1)
    if t_summary is not None:
        assert t_banner <= t_summary, "the live diagnosis came only after torchrun's summary"
    d = _report(report)
    assert d["primary"]["id"] == "dataloader-worker-failure/worker-oom"
    assert d["primary"]["rank"] == 1
    assert 0 in {c["rank"] for c in d["collateral"]}


# ---------------------------------------------------------------- hangs


@needs_torch
@live_group
def test_real_hang_found_with_py_spy(live: Any, tmp_path: Path) -> None:
    """Workers forked while a thread holds the dataset's lock: the watchdog names the worker and its frame."""
    report = tmp_path / "report.json"
    run = live(["run", "--hang-timeout", "3", "--on-hang", "kill", "--report", str(report), "--",
                sys.executable, str(LAB_PROGRAMS / "worker_hang.py"), "--timeout", "0"])
    assert run.wait(90) == 128 + signal.SIGTERM  # --on-hang kill
    err = run.err.text()
    assert "[trainmedic] watchdog: no progress for 3." in err
    d = _report(report)
    assert d["verdict"] == "hang"
    p = d["primary"]
    assert p["id"] == "dataloader-worker-failure/worker-hang"
    assert "DataLoader worker pid" in p["why"] and "blocked on a lock in Locked.__getitem__ (worker_hang.py:" in p["why"]
    assert any(e["path"].endswith("worker_hang.py") for e in p["evidence"])
    assert any("_try_get_data" in e["text"] for e in p["evidence"])  # the main process waits on the queue
    assert any("(py-spy)" in n for n in d["notes"])
    assert err.index(BANNER) < err.index("--on-hang kill")  # reported while the job was alive


@needs_torch
@live_group
def test_hang_falls_back_to_the_guards_faulthandler(live: Any, tmp_path: Path) -> None:
    """py-spy cannot attach (a failing binary stands in for it): the guard's SIGUSR1 dump is used instead."""
    report = tmp_path / "report.json"
    run = live(["run", "--hang-timeout", "3", "--on-hang", "kill", "--report", str(report), "--",
                sys.executable, str(PROGRAMS / "guarded_hang.py")], env={"TRAINMEDIC_PY_SPY": "/bin/false"})
    assert run.wait(90) == 128 + signal.SIGTERM
    d = _report(report)
    assert d["verdict"] == "hang"
    assert d["primary"]["id"] == "dataloader-worker-failure/worker-hang"
    assert "Stuck.__getitem__" in d["primary"]["why"] or "__getitem__ (guarded_hang.py:" in d["primary"]["why"]
    notes = "\n".join(d["notes"])
    assert "(faulthandler)" in notes
    assert "_try_get_data" in notes  # the main process's dump, from its own faulthandler file


@pytest.mark.slow
@needs_torch
@live_group
def test_torchrun_hang_names_the_rank_outside_the_collective(live: Any, tmp_path: Path) -> None:
    """Rank 1 stops (sleeps) at step 4; rank 0 waits in DDP's all-reduce: the watchdog names rank 1 and its frame."""
    report = tmp_path / "report.json"
    run = live(["run", "--hang-timeout", "4", "--on-hang", "kill", "--report", str(report), "--", *_TORCHRUN,
                "--nproc_per_node=2", str(LAB_PROGRAMS / "ddp.py"), "--failure", "hang", "--fail-rank", "1"])
    run.wait(150)
    d = _report(report)
    assert d["verdict"] == "hang"
    p = d["primary"]
    assert p["id"] == "training-hang/stalled-progress"
    assert p["rank"] == 1
    assert "sleeps in train (ddp.py:" in p["why"]
    assert "rank 0 waits for it in a collective" in p["why"]


# ---------------------------------------------------------------- metrics


def _scrape(url: str) -> str:
    with urllib.request.urlopen(url, timeout=5) as resp:  # loopback only
        return str(resp.read().decode())


@live_group
def test_metrics_endpoint_over_loopback(live: Any) -> None:
    code = ("import sys, time\n"
            "for i in range(3): print(f'step {i} loss 0.5', flush=True)\n"
            "print('[rank1]: RuntimeError: DataLoader worker (pid 4242) is killed by signal: Segmentation fault.', "
            "file=sys.stderr, flush=True)\n"
            "time.sleep(30)\n")
    run = live(["run", "--metrics-port", "0", "--", *_py(code)])
    assert run.err.wait_for("metrics at http://127.0.0.1:", 30) is not None
    url = re.search(r"metrics at (http://127\.0\.0\.1:\d+/metrics)", run.err.text())
    assert url
    assert run.err.wait_for(BANNER, 30) is not None
    body = _scrape(url.group(1))
    assert re.search(r'trainmedic_fingerprint_matches_total\{cause="dataloader-worker-failure/worker-segfault",'
                     r'fingerprint="dataloader-worker-failure/worker-segfault#[\w-]+",rank="1"\} 1\.0', body), body
    assert 'trainmedic_verdict{verdict="failure"} 1.0' in body
    assert 'trainmedic_primary{cause="dataloader-worker-failure/worker-segfault",rank="1"} 1.0' in body
    since = re.search(r"^trainmedic_seconds_since_progress ([\d.e+-]+)$", body, re.M)
    assert since and 0 <= float(since.group(1)) < 30
    assert "trainmedic_command_running 1.0" in body
    time.sleep(1.0)
    later = re.search(r"^trainmedic_seconds_since_progress ([\d.e+-]+)$", _scrape(url.group(1)), re.M)
    assert later and float(later.group(1)) > float(since.group(1))  # a silent job's gauge keeps growing
    run.signal(signal.SIGTERM)
    assert run.wait(30) == 128 + signal.SIGTERM
    with pytest.raises(OSError):  # the endpoint is gone with trainmedic
        _scrape(url.group(1))


@live_group
def test_a_silence_the_command_survives_to_exit_0_is_not_a_hang(live: Any, tmp_path: Path) -> None:
    """The watchdog may fire during a quiet last phase; once the command exits 0 the run did not hang."""
    report = tmp_path / "report.json"
    program = ("import time\nfor i in range(3):\n    print(f'step {i} loss 0.5', flush=True)\n    time.sleep(0.2)\n"
               "time.sleep(3)\n")
    run = live(["run", "--hang-timeout", "1", "--report", str(report), "--", sys.executable, "-c", program])
    assert run.wait(60) == 0
    assert "[trainmedic] watchdog: no progress" in run.err.text()
    d = _report(report)
    assert d["verdict"] == "healthy", d["primary"]
    assert any("the command exited 0" in n for n in d["notes"])


@live_group
def test_a_job_that_ignores_ctrl_c_is_killed_by_the_second(live: Any) -> None:
    program = ("import signal, time\nsignal.signal(signal.SIGINT, signal.SIG_IGN)\n"
               "signal.signal(signal.SIGTERM, signal.SIG_IGN)\nprint('step 1', flush=True)\ntime.sleep(120)\n")
    run = live(["run", "--", sys.executable, "-c", program])
    deadline = time.monotonic() + 30
    while "step 1" not in run.out.text() and time.monotonic() < deadline:
        time.sleep(0.1)
    run.proc.send_signal(signal.SIGINT)
    time.sleep(1.0)
    assert run.proc.poll() is None  # the job ignores it: run keeps waiting, and says so
    assert "Press Ctrl-C again" in run.err.text()
    run.proc.send_signal(signal.SIGINT)
    assert run.wait(30) == 128 + signal.SIGKILL
    assert "killed the job" in run.err.text()
