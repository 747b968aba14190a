"""End-to-end: one rank fails, the others time out and get SIGTERM; the answer is the initiating rank.

Message formats come from torch 2.13's own source (ProcessGroupNCCL watchdog, torch.distributed.elastic's
failure summary template, the DataLoader's worker error messages).
"""

from __future__ import annotations

from pathlib import Path

from tests.conftest import run_cli
from tests.helpers import diagnose_with
from trainmedic.api import Diagnoser, Named

WATCHDOG = ("[rank{r}]:[E1129 16:39:2{r}.217000 47{r} torch/csrc/distributed/c10d/ProcessGroupNCCL.cpp:632] "
            "[Rank {r}] Watchdog caught collective operation timeout: WorkNCCL(SeqNum=1201, OpType=ALLREDUCE, "
            "NumelIn=1, NumelOut=1, Timeout(ms)=600000) ran for 600080 milliseconds before timing out.")
SIGTERM = "W1129 16:39:30.000000 4700 torch/distributed/elastic/multiprocessing/api.py:908] Sending process 47{r} closing signal SIGTERM"


def _summary(failed: int, code: int, ranks: int = 4, others: int = -15) -> list[str]:
    lines = [
        "torch.distributed.elastic.multiprocessing.errors.ChildFailedError: ",
        "============================================================",
        "train.py FAILED",
        "------------------------------------------------------------",
        "Failures:",
    ]
    idx = 0
    for r in range(ranks):
        if r == failed:
            continue
        sig = {-15: " (SIGTERM)", -9: " (SIGKILL)"}.get(others, "")
        msg = f"Signal {-others} ({sig.strip(' ()')}) received by PID 47{r}" if others < 0 else "<N/A>"
        lines += [f"[{idx + 1}]:", "  time      : 2026-11-29_16:39:30", "  host      : node-0",
                  f"  rank      : {r} (local_rank: {r})", f"  exitcode  : {others} (pid: 47{r}){sig}",
                  "  error_file: <N/A>", f"  traceback : {msg}"]
        idx += 1
    sig = " (SIGKILL)" if code == -9 else ""
    msg = f"Signal 9 (SIGKILL) received by PID 47{failed}" if code == -9 else "<N/A>"
    lines += ["------------------------------------------------------------", "Root Cause (first observed failure):",
              "[0]:", "  time      : 2026-11-29_16:29:22", "  host      : node-0",
              f"  rank      : {failed} (local_rank: {failed})", f"  exitcode  : {code} (pid: 47{failed}){sig}",
              "  error_file: <N/A>", f"  traceback : {msg}", "============================================================"]
    return lines


def _bus_error(r: int) -> list[str]:
    return [f"[rank{r}]: {t}" for t in [
        "Traceback (most recent call last):",
        '  File "/opt/train.py", line 88, in <module>',
        "    for batch in loader:",
        '  File "/usr/lib/python3/site-packages/torch/utils/data/dataloader.py", line 1293, in _try_get_data',
        "    data = self._data_queue.get(timeout=timeout)",
        "RuntimeError: DataLoader worker (pid 5123) is killed by signal: Bus error. It is possible that "
        "dataloader's workers are out of shared memory. Please try to raise your shared memory limit.",
        "",
        "The above exception was the direct cause of the following exception:",
        "",
        "Traceback (most recent call last):",
        '  File "/opt/train.py", line 88, in <module>',
        "RuntimeError: DataLoader worker (pid(s) 5123) exited unexpectedly",
    ]]


def _steps(r: int, n: int = 3) -> list[str]:
    return [f"[rank{r}]: step {s} loss 1.{s}" for s in range(n)]


def test_one_rank_dies_others_time_out_and_get_sigterm() -> None:
    lines = [*_steps(0), *_steps(1), *_steps(2), *_steps(3)]
    lines += ["ERROR: Unexpected bus error encountered in worker. This might be caused by insufficient shared memory (shm)."]
    lines += _bus_error(2)
    lines += [WATCHDOG.format(r=r) for r in (0, 1, 3)]
    lines += [SIGTERM.format(r=r) for r in (0, 1, 3)]
    lines += _summary(failed=2, code=1)
    d = diagnose_with("\n".join(lines).encode() + b"\n")
    p = d["primary"]
    assert d["verdict"] == "failure"
    assert (p["id"], p["rank"]) == ("dataloader-worker-failure/shm-exhausted", 2)
    assert p["confidence"] >= 0.9
    assert any("Bus error" in e["text"] for e in p["evidence"])
    collateral = {(c["rank"], c["id"].split("/")[0]) for c in d["collateral"]}
    assert {r for r, _ in collateral} >= {0, 1, 3}
    assert ("nccl-timeout" in {e for _, e in collateral}) and ("launcher-teardown" in {e for _, e in collateral})
    assert all(c["explained_by"] == p["id"] for c in d["collateral"])
    assert 2 not in {c["rank"] for c in d["collateral"] if c["id"].startswith("nccl-timeout")}


def test_the_initiating_rank_wins_even_when_its_error_is_printed_last() -> None:
    # Without clocks, order of lines inside one file decides; a cascade printed first still never wins.
    lines = [WATCHDOG.format(r=r) for r in (0, 1, 3)] + _bus_error(2)
    d = diagnose_with("\n".join(lines).encode() + b"\n")
    assert (d["primary"]["id"], d["primary"]["rank"]) == ("dataloader-worker-failure/shm-exhausted", 2)


def test_only_cascades_names_the_silent_rank() -> None:
    lines = ["world_size=4", *_steps(0), *_steps(1), *_steps(2, 2), *_steps(3)]
    lines += [WATCHDOG.format(r=r) for r in (0, 1, 3)] + [SIGTERM.format(r=r) for r in (0, 1, 2, 3)]
    d = diagnose_with("\n".join(lines).encode() + b"\n")
    p = d["primary"]
    # Rank 2 printed no error while every other rank timed out waiting for it: it hung.
    assert (d["verdict"], p["id"], p["rank"]) == ("hang", "training-hang/stalled-progress", 2)
    assert "rank 2" in p["why"]
    assert any("rank 2" in m["fact"] and "py-spy" in m["command"] for m in p["missing"])
    assert {c["rank"] for c in d["collateral"] if c["id"].startswith("nccl-timeout")} == {0, 1, 3}


def test_only_cascades_with_a_missing_rank_file_asks_for_that_log(tmp_path: Path) -> None:
    for r in (0, 1, 3):
        (tmp_path / f"rank{r}.log").write_text(
            "\n".join([f"step {s}" for s in range(3)] + [WATCHDOG.format(r=r).split("]:", 1)[1]]) + "\n")
    (tmp_path / "launcher.log").write_text("\n".join(_summary(failed=0, code=-15)) + "\n")
    res = run_cli("diagnose", str(tmp_path), "--json")
    p = res.json()["primary"]
    assert res.code == 1
    assert p["rank"] == 2
    assert any(m["fact"] == "the log of rank 2" for m in p["missing"])


def test_sigkill_from_the_launcher_summary_leads_with_the_oom_killer_it_cannot_confirm() -> None:
    lines = [*_steps(0), *_steps(3), *_summary(failed=3, code=-9)]
    d = diagnose_with("\n".join(lines).encode() + b"\n")
    p = d["primary"]
    # Not confirmed: the likeliest sender real threads found, below a confirmed kill's certainty, with the
    # kill itself as the first alternative and the kernel record that would decide asked for.
    assert (p["id"], p["rank"]) == ("host-oom/oom-killer", 3)
    assert "no sender named" in p["why"] and p["confidence"] < 0.9
    assert any("dmesg" in m["command"] for m in p["missing"])
    assert d["alternatives"][0]["id"] == "host-oom/sigkill"


def test_worker_kill_confirmed_by_the_kernel_record_for_its_pid() -> None:
    log = [
        "[rank1]: RuntimeError: DataLoader worker (pid 30581) is killed by signal: Killed. ",
        "[rank1]: RuntimeError: DataLoader worker (pid(s) 30581) exited unexpectedly",
    ]
    dmesg = ["[Sun Nov 29 16:29:21 2026] Out of memory: Killed process 30581 (pt_data_worker) total-vm:31245880kB, "
             "anon-rss:25829144kB, file-rss:0kB, shmem-rss:0kB, UID:0 pgtables:51292kB oom_score_adj:0"]
    unconfirmed = diagnose_with("\n".join(log).encode() + b"\n")
    assert unconfirmed["primary"]["id"] == "dataloader-worker-failure/worker-oom"
    assert unconfirmed["alternatives"][0]["id"] == "dataloader-worker-failure/worker-killed"
    assert any("dmesg" in m["command"] for m in unconfirmed["primary"]["missing"])

    confirmed = diagnose_with([("train.log", "\n".join(log).encode() + b"\n"),
                               ("dmesg.txt", "\n".join(dmesg).encode() + b"\n")])
    p = confirmed["primary"]
    assert (p["id"], p["rank"]) == ("dataloader-worker-failure/worker-oom", 1)
    assert p["confidence"] >= 0.9 and p["confidence"] > unconfirmed["primary"]["confidence"]
    assert "a kernel OOM-killer record names the same process" in p["why"]
    assert any("Killed process 30581" in e["text"] for e in p["evidence"])
    assert p["missing"] == []


def test_a_kernel_record_for_another_pid_confirms_nothing() -> None:
    log = "[rank1]: RuntimeError: DataLoader worker (pid 30581) is killed by signal: Killed. \n"
    dmesg = "Out of memory: Killed process 999 (python) total-vm:1kB, anon-rss:1kB\n"
    d = diagnose_with([("train.log", log.encode()), ("dmesg.txt", dmesg.encode())])
    p = d["primary"]
    assert p["id"] == "dataloader-worker-failure/worker-oom" and p["confidence"] < 0.9  # the prior, unconfirmed
    assert "names the same process" not in p["why"] and any("dmesg" in m["command"] for m in p["missing"])


def test_getitem_exception_wrapping_a_known_cause_names_the_cause() -> None:
    lines = [
        "Traceback (most recent call last):",
        '  File "train.py", line 20, in <module>',
        "OSError: Caught OSError in DataLoader worker process 3.",
        "Original Traceback (most recent call last):",
        '  File "/usr/lib/python3/site-packages/torch/utils/data/_utils/worker.py", line 349, in _worker_loop',
        '  File "dataset.py", line 12, in __getitem__',
        "OSError: [Errno 24] Too many open files: '/data/shard-00042.tar'",
    ]
    d = diagnose_with("\n".join(lines).encode() + b"\n")
    assert d["primary"]["id"] == "dataloader-worker-failure/fd-exhaustion"
    plain = [*lines[:-1], "ValueError: bad sample 17"]
    plain[2] = "ValueError: Caught ValueError in DataLoader worker process 3."
    d = diagnose_with("\n".join(plain).encode() + b"\n")
    assert d["primary"]["id"] == "dataloader-worker-failure/getitem-exception"
    assert any("Caught ValueError" in e["text"] for e in d["primary"]["evidence"])


def test_a_gpu_fault_on_one_rank_explains_the_nccl_timeouts_elsewhere() -> None:
    lines = [*_steps(0), *_steps(1), *_steps(2), *_steps(3),
             "[rank3]: Traceback (most recent call last):",
             '[rank3]:   File "/opt/train.py", line 120, in <module>',
             "[rank3]:     loss.backward()",
             "[rank3]: RuntimeError: CUDA error: an illegal memory access was encountered",
             *[WATCHDOG.format(r=r) for r in (0, 1, 2)],
             *[SIGTERM.format(r=r) for r in (0, 1, 2)]]
    d = diagnose_with("\n".join(lines).encode() + b"\n")
    assert (d["primary"]["id"], d["primary"]["rank"]) == ("cuda-illegal-memory-access/illegal-address", 3)
    assert {c["rank"] for c in d["collateral"] if c["id"].startswith("nccl-timeout/")} == {0, 1, 2}


def test_an_xid_in_the_kernel_log_explains_a_rank_that_died_silently() -> None:
    log = [*_steps(0), *_steps(1), *[WATCHDOG.format(r=r) for r in (0, 1)]]
    dmesg = ["[Sun Nov 29 16:29:20 2026] NVRM: Xid (PCI:0000:3b:00): 79, pid=4712, name=python, "
             "GPU has fallen off the bus."]
    d = diagnose_with([("torchrun.log", "\n".join(log).encode() + b"\n"), ("dmesg.txt", "\n".join(dmesg).encode() + b"\n")])
    assert d["primary"]["id"] == "nvidia-xid/fallen-off-bus"
    assert {c["rank"] for c in d["collateral"]} == {0, 1}


def test_the_rank_behind_in_the_collective_sequence_is_the_suspect() -> None:
    """ProcessGroupNCCL's watchdog line (torch 2.x) carries the timed-out collective's SeqNum per rank."""
    line = ("[rank{r}]:[E1129 16:39:22.217000 4 ProcessGroupNCCL.cpp:632] [Rank {r}] Watchdog caught collective "
            "operation timeout: WorkNCCL(SeqNum={s}, OpType=ALLREDUCE, NumelIn=1, NumelOut=1, Timeout(ms)=600000) "
            "ran for 600080 milliseconds before timing out.")
    log = "\n".join(line.format(r=r, s=s) for r, s in ((0, 4178), (1, 4178), (2, 4177), (3, 4178)))
    p = diagnose_with(log.encode() + b"\n")["primary"]
    assert (p["id"], p["rank"]) == ("nccl-timeout/watchdog-timeout", 2)
    assert "behind" in p["why"]
    same = "\n".join(line.format(r=r, s=4178) for r in range(4))
    assert diagnose_with(same.encode() + b"\n")["primary"]["rank"] is None


def _timeouts(world: int, reporting: range | list[int]) -> bytes:
    lines = [f"world_size={world}"] + [
        f"[rank{r}]:[E ProcessGroupNCCL.cpp:563] [Rank {r}] Watchdog caught collective operation timeout: "
        f"WorkNCCL(SeqNum=4522, OpType=ALLREDUCE, NumelIn=1, NumelOut=1, Timeout(ms)=600000) ran for 600012 "
        "milliseconds before timing out." for r in reporting]
    return ("\n".join(lines) + "\n").encode()


def test_past_the_hit_cap_every_reporting_rank_still_counts() -> None:
    """1,024 ranks time out but one: only 400 timeout lines are kept as evidence, yet the silent rank
    is the one named (before, every rank past 400 was a suspect)."""
    from trainmedic.api import Diagnoser, Named

    d = Diagnoser().diagnose(Named("job.log", _timeouts(1024, [r for r in range(1024) if r != 517])))
    assert d.primary is not None and d.primary.rank == 517


def test_a_long_list_of_ranks_is_summarised() -> None:
    from trainmedic.api import Diagnoser, Named
    from trainmedic.util.text import rank_ranges

    d = Diagnoser().diagnose(Named("job.log", _timeouts(1024, range(400))))
    assert d.primary is not None and "ranks 400-1023" in d.primary.why and len(d.primary.why) < 300
    assert rank_ranges([0, 1, 2, 3, 7, 9, 10]) == "0-3, 7, 9, 10"
    assert rank_ranges(range(0, 100, 2), limit=3).endswith("… (50 ranks)")


def test_ranks_waiting_for_the_nccl_unique_id_name_rank_0() -> None:
    """torch 2.x ProcessGroupNCCL: every rank but 0 fetches the communicator id rank 0 posts; when rank 0
    never gets there (still preprocessing, or dead), they time out naming it."""
    msg = ("[rank{r}]: torch.distributed.DistBackendError: [{r}] is setting up NCCL communicator and retrieving "
           "ncclUniqueId from [0] via c10d key-value store by key '0', but store->get('0') got error: Socket Timeout")
    d = diagnose_with("\n".join(msg.format(r=r) for r in (1, 2, 3)).encode() + b"\n")
    p = d["primary"]
    assert (p["id"], p["rank"]) == ("nccl-timeout/store-barrier-timeout", 0)


def test_an_unknown_error_on_every_rank_but_one_names_the_quiet_rank() -> None:
    """A message no signature knows (a timeout in a framework's own words) raised by ranks 1-3, none by
    rank 0: rank 0 is the one they waited for. Raised by every rank, it is a shared error, not a wait."""
    steps = [f"[rank{r}]: step 10 loss 0.5" for r in range(4)]
    err = "[rank{r}]: RuntimeError: Frobnicator lease lost after waiting 600 s for a peer"
    d = diagnose_with("\n".join([*steps, *(err.format(r=r) for r in (1, 2, 3))]).encode() + b"\n")
    assert (d["primary"]["id"], d["primary"]["rank"]) == ("unclassified-failure/uncaught-exception", 0)
    d = diagnose_with("\n".join([*steps, *(err.format(r=r) for r in (0, 1, 2, 3))]).encode() + b"\n")
    assert d["primary"]["rank"] == 0 and "every rank but" not in d["primary"]["why"]


def test_error_lines_on_every_rank_but_one_name_the_quiet_rank() -> None:
    """Error-worded lines no signature knows (no traceback), the same on ranks 1-3 and none on rank 0."""
    steps = [f"[rank{r}]: step 10 loss 0.5" for r in range(4)]
    err = "[rank{r}]: ERROR frobnicator: lease lost after 600 s without a heartbeat from the leader"
    d = diagnose_with("\n".join([*steps, *(err.format(r=r) for r in (1, 2, 3))]).encode() + b"\n")
    assert (d["primary"]["id"], d["primary"]["rank"]) == ("unclassified-failure/error-lines", 0)
    assert "printed none" in d["primary"]["why"]


def test_ranks_in_different_collectives_are_read_across_per_rank_files() -> None:
    """The same timeouts as one combined log or as one file per rank (torchrun --log-dir): rank 0 timed
    out in an ALLREDUCE while the others waited in a BROADCAST; it took the other path."""
    from trainmedic.evaluate.corpus import load_case
    from trainmedic.logs.attribution import split_prefix

    case = load_case(Path(__file__).resolve().parents[2] / "corpus" / "real"
                     / "more22a-accelerate-epoch-end-rank0-allreduce-others-broadcast.yaml")
    assert case.split == "dev"
    files: dict[str, list[str]] = {}
    for line in case.log.split("\n"):
        rank = split_prefix(line).rank
        files.setdefault(f"rank{rank}.log" if rank is not None else "launcher.log", []).append(line)
    assert len(files) > 3
    d = Diagnoser().diagnose([Named(name, ("\n".join(lines) + "\n").encode()) for name, lines in files.items()])
    assert d.primary is not None and d.primary.id == "rank-desync/mismatched-collectives" and d.primary.rank == 0
