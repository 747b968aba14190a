"""The live pieces without processes: watchdog timing, line merging, stack parsing, hang classification,
and how a watchdog hang rewrites a diagnosis."""

from __future__ import annotations

from trainmedic.catalog import load_library
from trainmedic.live.hang import WORKER_HANG, apply, inspect
from trainmedic.live.job import LineMerger, exit_status
from trainmedic.live.stacks import Frame, ProcessInfo, ProcessStacks, ThreadStack, parse_faulthandler, parse_py_spy
from trainmedic.live.streams import LiveAnalysis
from trainmedic.live.watchdog import Watchdog, watchdog_line
from trainmedic.reason.engine import HANG

SITE = "/venv/lib/python3.11/site-packages"
STDLIB = "/usr/lib/python3.11"


def test_watchdog_fires_on_silence_once_and_rearms_on_progress() -> None:
    wd = Watchdog(3.0, now=0.0)
    wd.observe(b"step 1 loss 0.5\n", 1.0)
    assert not wd.due(3.9)
    assert wd.next_check(2.0) == 2.0
    assert wd.due(4.0)
    wd.fire(4.0)
    assert not wd.due(10.0)  # once per stall
    wd.observe(b"step 1 loss 0.5\n", 11.0)  # the same line again is not progress
    assert _state(wd) == (False, True)  # still stalled
    wd.observe(b"step 2 loss 0.4\n", 12.0)
    assert _state(wd) == (True, False)  # resumed and re-armed
    assert wd.due(15.0)


def _state(wd: Watchdog) -> tuple[bool, bool]:
    """(resumed, fired): read through a call, so a type checker does not pin them after an assert."""
    return wd.resumed, wd.fired_at is not None


def test_watchdog_output_without_progress_is_a_stall() -> None:
    wd = Watchdog(3.0, now=0.0)
    wd.observe(b"  1%|         | 1/100 [00:01<01:39,  1.00it/s]", 1.0)
    for t in (2.0, 3.0, 4.0):  # tqdm redraws the same count; a warning repeats
        wd.observe(b"\r  1%|         | 1/100 [00:0" + str(int(t)).encode() + b"<01:39,  1.00it/s]", t)
        wd.observe(b"UserWarning: something\n", t)
    assert wd.due(4.0)
    assert round(wd.stalled_for(4.0), 3) == 3.0


def test_watchdog_allows_a_longer_start() -> None:
    wd = Watchdog(3.0, now=0.0)  # start-up allowance: 5 x 3 s before the first progress line
    wd.observe(b"loading weights\n", 1.0)
    assert not wd.due(10.0) and wd.due(16.0)
    explicit = Watchdog(3.0, now=0.0, startup=4.0)
    assert explicit.due(4.0)


def test_watchdog_off() -> None:
    wd = Watchdog(None, now=0.0)
    assert not wd.due(1e9) and wd.next_check(0.0) is None


def test_watchdog_line_matches_the_library() -> None:
    import re

    line = watchdog_line(12.34, "stuck: rank 3 (pid 9) sleeps in f (x.py:3)", rank=3)
    assert line.startswith("[rank3]: [trainmedic] watchdog: no progress for 12.3 s; stuck")
    cause = load_library().cause(HANG)
    assert any(re.search(fp.regex, line) for fp in cause.fingerprints)


def test_line_merger_never_splits_lines() -> None:
    m = LineMerger()
    assert m.add("out", b"step 1") == b""
    assert m.add("err", b"Traceback (most recent call last):\n  File") == b"Traceback (most recent call last):\n"
    assert m.add("out", b" done\nstep 2") == b"step 1 done\n"
    assert m.rest() in (b"  File\nstep 2\n", b"step 2\n  File\n")


def test_exit_status() -> None:
    assert exit_status(0) == 0 and exit_status(3) == 3 and exit_status(-9) == 137 and exit_status(-15) == 143


def test_parse_py_spy_and_faulthandler() -> None:
    data = [
        {"pid": 7, "thread_name": "Thread-1", "os_thread_id": 8, "active": False,
         "frames": [{"name": "wait", "filename": f"{STDLIB}/threading.py", "line": 320}]},
        {"pid": 7, "thread_name": "MainThread", "os_thread_id": 7, "active": True,
         "frames": [{"name": "train", "filename": "/job/train.py", "line": 12}]},
    ]
    threads = parse_py_spy(data, 7)
    assert [t.main for t in threads] == [False, True] and threads[1].active
    text = ("main-thread 0x00000000000000aa\n"
            "Thread 0x00000000000000bb (most recent call first):\n"
            '  File "/usr/lib/python3.11/threading.py", line 320 in wait\n\n'
            "Current thread 0x00000000000000aa (most recent call first):\n"
            '  File "/job/train.py", line 12 in train\n'
            '  File "/job/train.py", line 20 in <module>\n')
    fh = parse_faulthandler(text)
    assert [t.main for t in fh] == [False, True]
    assert [f.function for f in fh[1].frames] == ["train", "<module>"]


def _proc(pid: int, frames: list[Frame], *, ppid: int = 1, name: str = "python", rank: int | None = None,
          active: bool = False) -> ProcessStacks:
    info = ProcessInfo(pid, ppid, name, "python train.py", rank, rank)
    return ProcessStacks(info, (ThreadStack("MainThread", True, active, tuple(frames)),), "py-spy")


def _dl_wait() -> list[Frame]:
    return [Frame("Queue.get", f"{STDLIB}/multiprocessing/queues.py", 113),
            Frame("_MultiProcessingDataLoaderIter._try_get_data", f"{SITE}/torch/utils/data/dataloader.py", 1291),
            Frame("main", "/job/train.py", 40)]


def test_stuck_worker_behind_a_dataloader_wait() -> None:
    worker = [Frame("Dataset.get", "/job/ds.py", 4),
              Frame("_MapDatasetFetcher.fetch", f"{SITE}/torch/utils/data/_utils/fetch.py", 54),
              Frame("_worker_loop", f"{SITE}/torch/utils/data/_utils/worker.py", 374)]
    idle = [Frame("Queue.get", f"{STDLIB}/multiprocessing/queues.py", 113),
            Frame("_worker_loop", f"{SITE}/torch/utils/data/_utils/worker.py", 340)]
    idle_frames = [Frame(f.function, f.path, f.line, "") for f in idle]
    worker_frames = [Frame(f.function, f.path, f.line, "data = self.handle.read(1 << 20)" if i == 0 else "")
                     for i, f in enumerate(worker)]
    report = inspect([_proc(10, _dl_wait()),
                      _proc(11, idle_frames, ppid=10, name="pt_data_worker"),
                      _proc(12, worker_frames, ppid=10, name="pt_data_worker")], stalled=5.0)
    assert report.cause == WORKER_HANG
    assert report.stuck is not None and report.stuck.stacks.process.pid == 12
    assert report.stuck.wait.kind == "io"
    assert "DataLoader worker pid 12 of main process pid 10 is blocked in I/O in Dataset.get (ds.py:4)" in report.summary
    assert "likely dataloader-worker-failure/worker-hang" in report.line()


def test_the_rank_outside_the_collective_is_the_stuck_one() -> None:
    in_allreduce = [Frame("all_reduce", f"{SITE}/torch/distributed/distributed_c10d.py", 2800),
                    Frame("train", "/job/train.py", 60)]
    saving = [Frame("_save", f"{SITE}/torch/serialization.py", 900), Frame("save", f"{SITE}/torch/serialization.py", 850),
              Frame("train", "/job/train.py", 70)]
    report = inspect([_proc(20, in_allreduce, rank=0), _proc(21, saving, rank=1), _proc(22, in_allreduce, rank=2)],
                     stalled=9.0)
    assert report.cause == HANG
    assert report.rank == 1
    assert report.stuck is not None and report.stuck.wait.kind == "checkpoint-io"
    assert report.others == "ranks 0, 2 wait for it in a collective"
    assert report.line().startswith("[rank1]: [trainmedic] watchdog: no progress for 9.0 s; stuck: rank 1 (pid 21)")


def test_a_rank_still_importing_is_starting_not_hung() -> None:
    importing = [Frame("<module>", f"{SITE}/torch/distributed/_functional_collectives.py", 961),
                 Frame("_call_with_frames_removed", "<frozen importlib._bootstrap>", 241),
                 Frame("<module>", "/job/train.py", 1)]
    in_init = [Frame("DistributedDataParallel.__init__", f"{SITE}/torch/nn/parallel/distributed.py", 842),
               Frame("train", "/job/train.py", 50)]
    report = inspect([_proc(40, importing, rank=0), _proc(41, in_init, rank=1)], stalled=30.0)
    assert report.rank == 0
    assert report.stuck is not None and report.stuck.wait.kind == "starting"
    assert "is still starting: importing <module> (torch/distributed/_functional_collectives.py:961)" in report.summary
    assert report.others == "rank 1 waits for it in a collective"


def test_everyone_in_a_collective_means_the_culprit_is_elsewhere() -> None:
    frames = [Frame("barrier", f"{SITE}/torch/distributed/distributed_c10d.py", 4000), Frame("main", "/job/t.py", 3)]
    report = inspect([_proc(30, frames, rank=0), _proc(31, frames, rank=1)], stalled=4.0)
    assert report.stuck is None and report.cause == HANG
    assert "not on this machine" in report.summary


def test_apply_rewrites_only_a_watchdog_hang() -> None:
    lib = load_library()
    wd_line = b"[trainmedic] watchdog: no progress for 5.0 s; stuck: ..."
    analysis = LiveAnalysis(lib)
    analysis.feed("<output>", b"step 1 loss 0.5\n" + wd_line + b"\n")
    analysis.flush()
    d = analysis.diagnose(alive=True)
    assert d.verdict == "hang" and d.primary is not None and d.primary.id == HANG
    report = inspect([_proc(10, _dl_wait())], stalled=5.0)
    rewritten = apply(d, report, lib)
    assert rewritten.primary is not None and rewritten.primary.id == WORKER_HANG
    assert rewritten.verdict == "hang"
    assert rewritten.alternatives[0].id == HANG
    assert any("stacks of main process pid 10" in n for n in rewritten.notes)

    failing = LiveAnalysis(lib)
    failing.feed("<output>", b"RuntimeError: DataLoader worker (pid 5) is killed by signal: Killed.\n" + wd_line + b"\n")
    failing.flush()
    first = failing.diagnose(alive=True)
    kept = apply(first, report, lib)
    assert kept.primary == first.primary  # the failure that came first stays the primary
    assert len(kept.notes) > len(first.notes)


def test_a_quiet_log_is_no_hang_while_the_job_lives() -> None:
    analysis = LiveAnalysis(load_library())
    analysis.feed("<output>", b"".join(b"step %d loss 0.5\n" % i for i in range(20)))
    analysis.flush()
    assert analysis.diagnose(alive=True).verdict == "healthy"
    # Post mortem too: a log that merely ends is no hang (no positive evidence); the note says where it ends.
    final = analysis.finish()
    assert final.verdict == "healthy" and any("the log ends at" in n for n in final.notes)


def test_binary_output_is_skipped_not_fatal() -> None:
    analysis = LiveAnalysis(load_library())
    analysis.feed("<output>", bytes(range(256)) * 300)  # past the 64 KiB sniff: not a text log
    analysis.feed("<output>", b"more\n")
    analysis.feed("other", b"\x01\x02\x03" * 10)  # short: found out only at the end
    d = analysis.finish()
    assert set(analysis.skipped) == {"<output>", "other"}
    assert any(n.startswith("not analysed:") for n in d.notes)
