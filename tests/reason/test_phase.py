"""Where the job was when it stopped: the last phase marker or progress line before the failure."""

from __future__ import annotations

from trainmedic.api import Diagnoser, Named
from trainmedic.report.jsonout import diagnosis_from_json

# HF Trainer's own lines (trainer.py: "Saving model checkpoint to %s", "***** Running Evaluation *****").
STEPS = b"".join(b"[2026-11-30 10:%02d:00,000] INFO step %d loss 1.%d\n" % (i, 1000 + i, i) for i in range(5))
SAVE = b"[2026-11-30 10:05:00,000] INFO Saving model checkpoint to out/checkpoint-1004\n"
EVAL = b"***** Running Evaluation *****\n"
TIMEOUT = (b"[rank0]:[E1130 10:35:00.000000000 ProcessGroupNCCL.cpp:632] [Rank 0] Watchdog caught collective "
           b"operation timeout: WorkNCCL(SeqNum=9, OpType=ALLREDUCE, NumelIn=1, NumelOut=1, Timeout(ms)=1800000) "
           b"ran for 1800001 milliseconds before timing out.\n")


def _diagnose(log: bytes):  # type: ignore[no-untyped-def]
    return Diagnoser().diagnose(Named("train.log", log))


def test_a_failure_during_a_checkpoint_save_says_so_with_the_step_and_the_time_since_progress() -> None:
    d = _diagnose(STEPS + SAVE + TIMEOUT)
    assert d.phase is not None
    assert (d.phase.name, d.phase.step, d.phase.line) == ("checkpoint-save", 1004, 6)
    assert d.phase.since_progress_s == 31 * 60.0
    assert d.phase.summary == "stopped during checkpoint save at step 1,004, 31 minutes after the last progress line"


def test_progress_after_a_marker_means_training_and_a_marker_after_progress_names_the_phase() -> None:
    d = _diagnose(SAVE + STEPS + TIMEOUT)
    assert d.phase is not None and (d.phase.name, d.phase.step) == ("training", 1004)
    d = _diagnose(STEPS + EVAL + TIMEOUT)
    assert d.phase is not None and d.phase.name == "evaluation"


def test_a_model_load_is_setup_not_a_checkpoint_load() -> None:
    d = _diagnose(b"Loading checkpoint shards: 100%|##########| 2/2 [00:03<00:00,  1.50s/it]\n" + TIMEOUT)
    assert d.phase is not None and d.phase.name == "setup" and d.phase.step is None


def test_a_healthy_run_or_a_log_with_no_landmark_has_no_phase() -> None:
    assert _diagnose(STEPS).phase is None
    assert _diagnose(TIMEOUT).phase is None


def test_the_phase_is_additive_json_and_reads_back() -> None:
    d = _diagnose(STEPS + SAVE + TIMEOUT)
    data = d.to_json()
    assert data["schema"] == "trainmedic.diagnosis/v1" and data["phase"]["name"] == "checkpoint-save"
    assert diagnosis_from_json(data).phase == d.phase


def test_a_windows_log_keeps_its_phase_markers() -> None:
    """CRLF: each line ends in a carriage return, which must not read as a tqdm redraw."""
    crlf = (STEPS + SAVE + TIMEOUT).replace(b"\n", b"\r\n")
    d = _diagnose(crlf)
    assert d.phase is not None and d.phase.name == "checkpoint-save"
    [scan] = Diagnoser().scan(Named("train.log", crlf))
    assert [m.line.number for m in scan.markers] == [6]


def test_a_save_names_its_own_step_and_its_one_item_bar_is_no_progress() -> None:
    # HF Trainer with log_level info: the save prints its path (the step) and a one-shard bar, then fails
    log = (b"{'loss': '3.901', 'grad_norm': '1.186', 'learning_rate': '3.125e-05', 'epoch': '0.0625'}\n"
           b"[transformers] Saving model checkpoint to out/checkpoint-4\n"
           b"Writing model shards:   0%|          | 0/1 [00:00<?, ?it/s]\n"
           b"OSError: [Errno 28] No space left on device\n")
    d = _diagnose(log)
    assert d.phase is not None and (d.phase.name, d.phase.step) == ("checkpoint-save", 4)
    assert d.phase.summary == "stopped during checkpoint save at step 4"
