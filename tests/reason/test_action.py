"""What to do with the job: reason/action.py applies the cause's library answer (owner, restart,
safe checkpoint) to the checkpoints the logs show. Each rule on a diagnosis built for it; the lab's
captures check the same end to end (tests/reason/test_lab_corpus.py)."""

from __future__ import annotations

from trainmedic.catalog import load_library
from trainmedic.model import Checkpoint, Diagnosis, Evidence, Finding, Line, MissingFact, RankProgress, ScanResult
from trainmedic.reason.action import decide

LOG = "train.log"


def _finding(cause: str, line: int, host: str | None = None, text: str = "error") -> Finding:
    return Finding(cause, "title", "category", 0.9, 0, host, None, (Evidence(LOG, line, 0, text),), (), (), ())


def _save(line: int, step: int, kind: str = "save") -> Checkpoint:
    return Checkpoint(kind, f"ckpt/step_{step}", step, Line(LOG, line, f"Saved checkpoint to ckpt/step_{step}", 0))


def _scan(*checkpoints: Checkpoint, progress_line: int = 0, progress_step: int | None = None) -> ScanResult:
    progress = {0: RankProgress(0, progress_step, LOG, progress_line, "step")} if progress_line else {}
    return ScanResult(LOG, checkpoints=checkpoints, progress=progress)


def _decide(cause: str, line: int, scan: ScanResult, **kw: str) -> tuple[str, int | None, str, str | None]:
    d = Diagnosis("failure", _finding(cause, line, **kw))
    a = decide(d, [scan], load_library())
    assert a is not None
    return a.kind, a.checkpoint.step if a.checkpoint else None, a.reason, a.exclude


def test_a_fault_that_repeats_is_fixed_then_resumed_from_the_last_save_that_finished() -> None:
    # two saves, training went on after both (progress at line 90, step 30): the last one finished
    kind, step, reason, _ = _decide("cuda-out-of-memory/allocator-oom", 100,
                                    _scan(_save(10, 10), _save(50, 20), progress_line=90, progress_step=30))
    assert (kind, step) == ("fix-then-resume", 20)
    assert "the training code" in reason and "a plain restart would fail the same way" in reason


def test_a_save_nothing_vouches_for_is_passed_over_for_one_that_finished() -> None:
    # the last save at line 50 has nothing after it but the failure: not known to have finished
    kind, step, reason, _ = _decide("cuda-out-of-memory/allocator-oom", 60, _scan(_save(10, 10), _save(50, 20)))
    assert (kind, step) == ("fix-then-resume", 10)
    assert "ckpt/step_20 is newer, but nothing in the logs says it finished" in reason


def test_a_framework_that_says_the_save_finished_is_believed() -> None:
    done = Checkpoint("done", "global_step20", 20, Line(LOG, 52, "[Torch] Checkpoint global_step20 is ready now!", 0),
                      True)
    _, step, _, _ = _decide("cuda-out-of-memory/allocator-oom", 60, _scan(_save(10, 10), _save(50, 20), done))
    assert step == 20


def test_non_finite_values_resume_from_before_their_first_sign() -> None:
    saves = _scan(_save(10, 10), _save(50, 20), _save(90, 30), progress_line=120, progress_step=40)
    kind, step, reason, _ = _decide("nan-loss/nonfinite-loss", 70, saves)
    assert (kind, step) == ("fix-then-resume", 20) and "ckpt/step_10" in reason  # the one further back, named


def test_a_corrupted_checkpoint_resumes_from_the_one_before_it() -> None:
    _, step, _, _ = _decide("corrupted-checkpoint/" + load_library().entry("corrupted-checkpoint").causes[0].id, 200,
                            _scan(_save(10, 10), _save(50, 20), progress_line=90, progress_step=30))
    assert step == 10


def test_a_faulty_gpu_restarts_without_its_host() -> None:
    cause = "nvidia-xid/" + load_library().entry("nvidia-xid").causes[0].id
    kind, _, reason, exclude = _decide(cause, 5, _scan(), host="node-17", text="NVRM: Xid (PCI:0000:3b:00): 79, GPU 3")
    assert kind == "restart-without" and exclude == "node-17 (GPU 3)" and reason.startswith("Restart without node-17")


def test_data_that_made_every_checkpoint_wrong_stops_the_job() -> None:
    kind, step, reason, _ = _decide("iterable-dataset-duplication/not-sharded-per-worker", 60,
                                    _scan(_save(10, 10), progress_line=50, progress_step=20))
    assert (kind, step) == ("stop", None) and "no checkpoint of this run is safe" in reason


def test_a_healthy_run_has_no_action() -> None:
    assert decide(Diagnosis("healthy", None), [_scan()], load_library()) is None


def test_logs_with_only_collateral_stop_until_the_initiating_log_is_read() -> None:
    f = Finding("peer-connection-lost/gloo-connection-closed", "t", "c", 0.5, 2, None, None,
                (Evidence(LOG, 40, 0, "Connection closed by peer"),), (), (),
                (MissingFact("the log of rank 2", "ls logdir/*/attempt_0/2/"),))
    a = decide(Diagnosis("failure", f), [_scan()], load_library())
    assert a is not None and a.kind == "stop" and "get the log of rank 2 first" in a.reason
