"""Alarming-looking healthy logs stay healthy; a log that stops mid-training is a hang with each rank's last step."""

from __future__ import annotations

from tests.helpers import diagnose_with

NOISE = [
    "/usr/lib/python3/site-packages/torch/utils/data/dataloader.py:665: UserWarning: This DataLoader will create 16 "
    "worker processes in total. Our suggested max number of worker in current system is 8, which is smaller than "
    "what this DataLoader is going to create. Please be aware that excessive worker creation might get DataLoader "
    "running slow or even freeze, lower the worker number to avoid potential slowness/freeze if necessary.",
    "node-1:4711:4790 [3] NCCL INFO Channel 00/02 : 0[3] -> 1[3] via P2P/IPC",
    "node-1:4711:4790 [3] NCCL INFO comm 0x55d5 rank 3 nranks 8 cudaDev 3 busId 61000 - Init COMPLETE",
    "node-1:4711:4711 [0] NCCL WARN Could not find real path of /sys/class/net/ib0/device",
    "FutureWarning: `torch.cuda.amp.GradScaler(args...)` is deprecated. Please use `torch.amp.GradScaler('cuda', "
    "args...)` instead.",
    "UserWarning: find_unused_parameters=True was specified in DDP constructor, but did not find any unused "
    "parameters in the forward pass. This flag results in an extra traversal of the autograd graph every iteration,",
    "[W1129 16:29:22.217000 4711 torch/distributed/elastic/multiprocessing/redirects.py:29] NOTE: Redirects are "
    "currently not supported in Windows or MacOs.",
    "Warning: the out-of-memory killer is disabled for this cgroup",
    "tip: DataLoader worker (pid 1) is killed by signal errors usually mean /dev/shm is small",
]


def _train(rank: int, steps: int, start: int = 0) -> list[str]:
    return [f"[rank{rank}]: step {s} loss {1.0 / (s + 1):.4f} lr 3e-4" for s in range(start, steps)]


def test_noisy_healthy_log_is_healthy() -> None:
    lines = list(NOISE)
    for r in range(4):
        lines += _train(r, 50)
    lines += ["Training completed. Saving final checkpoint to /ckpt/final.pt"]
    d = diagnose_with("\n".join(lines).encode() + b"\n")
    assert d["verdict"] == "healthy"
    assert d["primary"] is None


def test_an_error_that_was_caught_and_logged_does_not_fail_the_run() -> None:
    lines = [*_train(0, 10),
             "Traceback (most recent call last):",
             '  File "train.py", line 40, in save',
             "RuntimeError: Error(s) in loading state_dict for ResNet:",
             "skipping optional warm-start checkpoint, continuing",
             *_train(0, 40, 10), "Training completed."]
    d = diagnose_with("\n".join(lines).encode() + b"\n")
    assert d["verdict"] == "healthy"
    assert any("handled error" in n for n in d["notes"])


def test_log_that_stops_mid_training_is_a_hang_naming_the_rank_behind() -> None:
    lines = list(NOISE)
    for step in range(120):
        for r in range(4):
            if r == 1 and step > 97:
                continue  # rank 1 stops at step 97; the others block in their next collective
            lines.append(f"[rank{r}]: step {step} loss 0.5")
    d = diagnose_with("\n".join(lines).encode() + b"\n")
    assert d["verdict"] == "hang"
    p = d["primary"]
    assert (p["id"], p["rank"]) == ("training-hang/stalled-progress", 1)
    steps = {pr["rank"]: pr["step"] for pr in d["progress"]}
    assert steps == {0: 119, 1: 97, 2: 119, 3: 119}
    assert any("py-spy" in m["command"] for m in p["missing"])


def test_a_log_that_merely_ends_mid_training_is_not_a_hang() -> None:
    """No positive evidence (no timeout, watchdog, stack dump or rank behind): healthy, with a note that
    says where the log ends and how to find out whether it hung."""
    bar = "\r".join(f"Epoch 3:  {i}%|##| {i * 10}/1000 [00:{i:02d}<01:40, 9.9it/s]" for i in range(1, 40))
    d = diagnose_with((bar + "\n").encode())
    assert d["verdict"] == "healthy" and d["primary"] is None
    assert any("the log ends at <text>:1" in n and "py-spy dump" in n for n in d["notes"])


def test_finished_progress_bar_is_healthy() -> None:
    bar = "\r".join("Epoch 3: 100%|##| 1000/1000 [01:40<00:00, 9.9it/s]" for _ in range(3))
    d = diagnose_with((bar + "\nTraining completed.\n").encode())
    assert d["verdict"] == "healthy"


TOKENIZERS = ("huggingface/tokenizers: The current process just got forked, after parallelism has already been used. "
              "Disabling parallelism to avoid deadlocks...")


def test_a_weak_warning_never_outranks_a_later_error() -> None:
    lines = [TOKENIZERS, *_train(0, 5), "[rank0]: RuntimeError: received 0 items of ancdata"]
    d = diagnose_with("\n".join(lines).encode() + b"\n")
    assert d["primary"]["id"] == "dataloader-worker-failure/fd-exhaustion"


def test_a_weak_warning_followed_by_progress_does_not_hide_a_hang() -> None:
    lines = [TOKENIZERS]
    for step in range(60):
        lines += [f"[rank{r}]: step {step} loss 0.5" for r in range(2) if not (r == 1 and step > 40)]
    d = diagnose_with("\n".join(lines).encode() + b"\n")
    assert (d["verdict"], d["primary"]["rank"]) == ("hang", 1)
    assert any("tokenizers" in n for n in d["notes"])


def test_overflow_warnings_are_a_failure_only_once_the_loss_scale_collapses() -> None:
    ds = "[deepspeed] OVERFLOW! Rank 0 Skipping step. Attempted loss scale: {}, reducing to {}"
    early = [ds.format(65536, 32768), ds.format(32768, 16384), *_train(0, 3),
             "[deepspeed] OVERFLOW! Rank 0 Skipping step. Attempted loss scale: 65536, but hysteresis is 2. "
             "Reducing hysteresis to 1"]
    d = diagnose_with("\n".join(early).encode() + b"\n")
    assert d["verdict"] == "healthy" and any("a warning alone is not a failure" in n for n in d["notes"])
    apex = "Gradient overflow.  Skipping step, loss scaler 0 reducing loss scale to {}"
    collapsed = [apex.format(f"{2.0 ** -k}") for k in range(0, 40, 8)]
    d = diagnose_with("\n".join(collapsed).encode() + b"\n")
    assert d["verdict"] == "failure" and d["primary"]["id"] == "grad-scaler-overflow/repeated-overflow"
    # DeepSpeed's fp16 optimizer gives up once the scale cannot fall further: that names the incident.
    ended = [ds.format(2.0 ** (6 - k), 2.0 ** (5 - k)) for k in range(6)]
    ended.append("Exception: Current loss scale already at minimum - cannot decrease scale anymore. Exiting run.")
    d = diagnose_with("\n".join(ended).encode() + b"\n")
    assert d["verdict"] == "failure" and d["primary"]["id"] == "grad-scaler-overflow/min-loss-scale"
    assert d["primary"]["evidence"][0]["line"] == len(ended)


def test_mpirun_names_the_rank_and_the_signal() -> None:
    """Open MPI's launcher is the only witness of a rank's death under mpirun/horovodrun."""
    line = b"mpirun noticed that process rank 3 with PID 0 on node node1 exited on signal 11 (Segmentation fault).\n"
    d = diagnose_with(line)
    assert d["primary"]["id"] == "native-crash/segfault" and d["primary"]["rank"] == 3
    d = diagnose_with(line.replace(b"11 (Segmentation fault)", b"9 (Killed)"))
    # the signal that names no sender reads as its likeliest one, the kill itself the first alternative
    assert d["primary"]["id"] == "host-oom/oom-killer" and d["primary"]["rank"] == 3
    assert d["alternatives"][0]["id"] == "host-oom/sigkill"


def test_a_slurm_cancel_with_no_reason_is_a_failure_only_when_nothing_stronger_explains_it() -> None:
    cancel = b"slurmstepd: error: *** STEP 1234.0 ON node1 CANCELLED AT 2024-04-23T12:18:08 ***\n"
    d = diagnose_with(b"step 10 loss 2.1\n" + cancel + b"srun: error: node1: task 0: Terminated\n")
    assert d["verdict"] == "failure" and d["primary"]["id"] == "scheduler-termination/cancelled"
    assert any("sacct" in m["command"] for m in d["primary"]["missing"])
    # srun cancels the step after a task was OOM-killed: the kill record leads, the cancel is its echo
    oom = (b"slurmstepd: error: Detected 1 oom_kill event in StepId=1234.0. "
           b"Some of the step tasks have been OOM Killed.\n")
    d = diagnose_with(cancel + oom)
    assert d["primary"]["id"] == "host-oom/oom-killer"
    assert any("a stronger signal explains the failure" in n for n in d["notes"])


# The last words of a run that finished, as the frameworks print them: fairseq's train.py, detectron2's
# IterationTimer (engine/hooks.py, a str(timedelta)), ESPnet's trainer, PyTorch's tutorial.
FINISHED = [
    "2020-05-03 10:22:41 | INFO | fairseq_cli.train | done training in 3417.2 seconds",
    "[05/03 10:22:41 d2.engine.hooks]: Overall training speed: 89997 iterations in 9:45:04 (0.3898 s / it)",
    "[05/03 10:22:41 d2.engine.hooks]: Total training time: 9:47:01 (0:01:57 on hooks)",
    "[05/03 10:22:41 d2.engine.hooks]: Total training time: 1 day, 2:03:04 (0:01:57 on hooks)",
    # ESPnet's trainer (espnet2/train/trainer.py), run to its last epoch and stopped early
    "[node1] 2020-09-17 18:14:28,068 (trainer:322) INFO: The training was finished at 35 epochs ",
    "[node1] 2020-09-17 18:14:28,068 (trainer:310) INFO: The training was stopped at 21epoch",
    # the PyTorch CIFAR-10 tutorial's last print
    "Finished Training",
    # transformers' examples once trainer.train() returned (Trainer.log_metrics)
    "***** train metrics *****",
]


def test_a_frameworks_last_word_after_a_logged_error_says_the_run_finished() -> None:
    logged = "2020-05-03 10:22:40 | ERROR | root | Failed to upload metrics to the tracker"
    for finished in FINISHED:
        d = diagnose_with("\n".join([*_train(0, 30), logged, finished]).encode() + b"\n")
        assert d["verdict"] == "healthy", finished
    # Near misses: the error as the log's last word, and a "training time" that is no clock reading.
    assert diagnose_with("\n".join([*_train(0, 30), logged]).encode() + b"\n")["verdict"] == "failure"
    near = "Total training time: 42 steps"
    assert diagnose_with("\n".join([*_train(0, 30), logged, near]).encode() + b"\n")["verdict"] == "failure"
    # (detectron2 prints them from a `finally` too: an exception after them is still the run's end)
    tb = ["Traceback (most recent call last):", '  File "train_net.py", line 9, in <module>', "RuntimeError: boom"]
    d = diagnose_with("\n".join([*_train(0, 30), FINISHED[1], *tb]).encode() + b"\n")
    assert d["verdict"] == "failure"
