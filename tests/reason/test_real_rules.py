"""Each reasoner rule of the real-log work, shown on a real log from the corpus's dev split (the
split rules are written against; the test split only measures). See docs/accuracy.md."""

from __future__ import annotations

import dataclasses

import pytest

from tests.helpers import dev_case
from trainmedic.api import Diagnoser, Named, load_library
from trainmedic.evaluate import unknown
from trainmedic.evaluate.corpus import Case
from trainmedic.model import Diagnosis

LIBRARY = load_library()


def _case(case_id: str) -> Case:
    return dev_case(case_id)


def _diagnose(case_id: str) -> Diagnosis:
    return Diagnoser().diagnose(Named("output.log", _case(case_id).log.encode()))


def _named_not_near(case_id: str, cause: str, *near_miss: tuple[str, str]) -> None:
    """The dev case is diagnosed as `cause`; changed only where the rule looks (`near_miss`, each an old and
    a new text), it is not."""
    d = _diagnose(case_id)
    assert d.primary is not None and d.primary.id == cause
    assert _primary_if_changed(case_id, *near_miss) != cause


def _primary_if_changed(case_id: str, *changes: tuple[str, str]) -> str | None:
    """A near miss: the dev case's log changed only where a rule looks; the id it is then diagnosed as."""
    log = _case(case_id).log
    for old, new in changes:
        log = log.replace(old, new)
    d = Diagnoser().diagnose(Named("output.log", log.encode()))
    return d.primary.id if d.primary is not None else None


def _ranked(case_id: str, cause: str, rank: int, near_miss: tuple[str, str], near_rank: int) -> None:
    """The dev case is `cause` on `rank`; changed only where the rank rule looks (`near_miss`), `near_rank`."""
    d = _diagnose(case_id)
    assert d.primary is not None and d.primary.id == cause and d.primary.rank == rank
    near = Diagnoser().diagnose(Named("output.log", _case(case_id).log.replace(*near_miss).encode()))
    assert near.primary is not None and near.primary.rank == near_rank


def _assert_healthy(log: str) -> None:
    """A near miss: the log, changed where the rule looks, is a healthy run."""
    d = Diagnoser().diagnose(Named("output.log", log.encode()))
    assert d.verdict == "healthy", d.primary


@pytest.mark.parametrize("case_id", [
    "ok-tokenizers-fork-warning-silnlp",  # tokenizers fork notice, training goes on
    "ok-ds-overflow-recovers-cogvideo",  # fp16 overflow at the start, the loss scale recovers
])
def test_a_warning_alone_is_not_a_failure(case_id: str) -> None:
    d = _diagnose(case_id)
    assert d.verdict == "healthy", d.primary
    assert any("a warning alone is not a failure" in n for n in d.notes)


def test_a_collapsing_loss_scale_is_the_failure_its_warnings_led_to() -> None:
    d = _diagnose("mem-apex-overflow-scale-e-205")
    assert d.primary is not None and d.primary.id == "grad-scaler-overflow/repeated-overflow"


def test_an_uncaught_exception_no_signature_knows_is_an_unclassified_failure() -> None:
    d = _diagnose("mr-fairmot-keyerror-dense-wh-mask")
    assert d.verdict == "failure"
    assert d.primary is not None and d.primary.id == "unclassified-failure/uncaught-exception"
    assert any("KeyError" in e.text for e in d.primary.evidence)


def test_a_handled_exception_followed_by_progress_is_not_the_failure() -> None:
    log = "step 10 loss 0.5\nKeyError: 'labels'\nstep 11 loss 0.4\nstep 12 loss 0.4\nTraining completed.\n"
    assert Diagnoser().diagnose(log.encode()).verdict == "healthy"


@pytest.mark.parametrize("case_id", [
    "dlw-hang-interrupt-19258",  # ^C traceback waiting on the DataLoader's queue (torch 0.4)
    "ok-hang-dataloader-shutdown-workers-join",  # KeyboardInterrupt in _shutdown_workers
])
def test_an_interrupted_wait_in_the_dataloader_is_a_worker_hang(case_id: str) -> None:
    d = _diagnose(case_id)
    assert d.primary is not None and d.primary.id == "dataloader-worker-failure/worker-hang"


def test_a_py_spy_dump_in_the_log_is_positive_evidence_of_a_hang() -> None:
    d = _diagnose("ok-hang-accelerate-zero3-allgather-pyspy")
    assert d.verdict == "hang" and d.primary is not None and d.primary.id == "training-hang/stalled-progress"


def test_the_launchers_own_traceback_is_an_echo() -> None:
    d = _diagnose("gap-teardown-sighup-msswift-epoch40")
    assert d.primary is not None and d.primary.id == "launcher-teardown/sigterm-survivor"


def test_the_context_of_a_fork_error_decides_whose_fork_it_was() -> None:
    # The message alone: the DataLoader's workers, the fork nearly every training script makes,
    # with the process-level reading competing.
    d = _diagnose("gpu-fork-reinit-a3c-workers")
    assert d.primary is not None and d.primary.id == "dataloader-worker-failure/cuda-in-forked-worker"
    assert "cuda-reinit-forked/fork-after-cuda-init" in {a.id for a in d.alternatives}
    bare = _case("gpu-fork-reinit-a3c-workers").log.encode()
    # A multiprocessing.Process of the user's: the process-level cause.
    pool = (b"Process Process-1:\nTraceback (most recent call last):\n"
            b'  File "/usr/lib/python3.10/multiprocessing/process.py", line 314, in _bootstrap\n')
    d = Diagnoser().diagnose(pool + bare)
    assert d.primary is not None and d.primary.id == "cuda-reinit-forked/fork-after-cuda-init"
    # The DataLoader's worker loop in sight: the DataLoader cause, no longer ambiguous.
    with_workers = b"  File \"/usr/lib/python3/site-packages/torch/utils/data/_utils/worker.py\", line 308, in _worker_loop\n"
    d = Diagnoser().diagnose(with_workers + bare)
    assert d.primary is not None and d.primary.id == "dataloader-worker-failure/cuda-in-forked-worker"
    assert not d.primary.missing


def test_nan_that_persists_in_the_metrics_is_a_failure() -> None:
    d = _diagnose("mem-megatron-ds-gradnorm-nan-no-lmloss")
    assert d.primary is not None and d.primary.id == "nan-loss/nonfinite-loss"


def test_a_loss_that_was_never_finite_is_a_failure_from_its_first_line() -> None:
    # The only loss line the run printed reads NaN: nothing says it ever trained. One NaN between finite
    # losses is one bad batch (a skipped step), so that alone stays a note.
    d = _diagnose("more32t-chatglm3-ptuning-deepspeed-loss-nan-from-step1")
    assert d.verdict == "failure" and d.primary is not None and d.primary.id == "nan-loss/nonfinite-loss"
    log = "".join(f"Epoch: 0, step: {i}, global_step:{i}, loss: {x}\nstep: {i}-1-1\n"
                  for i, x in enumerate(["2.31", "2.07", "nan", "2.02", "1.98", "1.95"]))
    d = Diagnoser().diagnose(Named("output.log", log.encode()))
    assert d.primary is None or d.primary.id != "nan-loss/nonfinite-loss"


def test_a_scheduler_time_limit_is_not_a_hang() -> None:
    d = _diagnose("mr-lightning-slurm-time-limit")
    assert d.primary is not None and d.primary.id == "scheduler-termination/time-limit"


@pytest.mark.parametrize(("case_id", "rank"), [
    ("mr-mmpose-rank2-unused-params", 2),  # "did not receive grad for rank 2"
    ("dist-codes15b-rank1-sigkill", 1),  # torchrun's agent: "failed (exitcode: -9) local_rank: 1 (pid: ...)"
    ("mr-hybrik-spawn-process3-sigkill", 3),  # mp.spawn: "process 3 terminated with signal SIGKILL"
    ("mr-codetr-rank5-cuda-oom", 5),  # only the launcher names the rank; its own error is not in the log
    ("dist-ufld-eval-rank0-others-timeout", 0),  # ranks 1-3 time out; rank 0 (evaluating) printed nothing
    ("mr-edgeyolo-spawn-process1-invalid-ordinal", 1),  # mp.spawn: "-- Process 1 terminated with the following error:"
    ("mr-megatron-mcore-tp1-rank0-index-assert", 0),  # unprefixed kernel asserts, then rank 0's cut traceback
    ("more4-simple-grpo-dump-signal-from-rank2", 2),  # flight recorder: "collective timeout from  rank 2"
    ("more5c-nccl-timeout-yolov7-rank0-autoanchor-inconsistent-0", 0),  # rank 6 times out; rank 0 evolves anchors
    ("more7c-particleflow-rank0-end-of-epoch-tests-timeout", 0),  # no rank says anything: the likeliest, rank 0
    # Open MPI's signal report has no rank; mpirun's notice in the tail names it
    ("more37c-horovod-torch-redefined-distributedoptimizer-segfault", 1),
])
def test_the_initiating_rank_comes_from_what_launchers_and_messages_say(case_id: str, rank: int) -> None:
    d = _diagnose(case_id)
    assert d.primary is not None and d.primary.rank == rank


def test_a_rank_the_launcher_saw_exit_with_nothing_of_its_own_is_an_unclassified_exit() -> None:
    d = _diagnose("mr-codetr-rank5-cuda-oom")
    assert d.primary is not None and d.primary.id == "unclassified-failure/process-exited"
    assert any("stderr" in m.fact for m in d.primary.missing)


def test_a_traceback_the_log_ends_in_is_still_a_failure() -> None:
    log = ("step 5 loss 0.3\nTraceback (most recent call last):\n"
           '  File "train.py", line 40, in <module>\n    main()\n  File "train.py", line 31, in main\n'
           "    model.cuda()\n")
    d = Diagnoser().diagnose(log.encode())
    assert d.verdict == "failure" and d.primary is not None
    assert d.primary.id == "unclassified-failure/uncaught-exception"


def test_specific_beats_generic_within_one_message() -> None:
    d = _diagnose("dist-mambair-duplicate-gpu-ddp-verify")  # "invalid usage ... Last error: Duplicate GPU"
    assert d.primary is not None and d.primary.id == "nccl-error/duplicate-gpu"


@pytest.mark.parametrize("log", [
    # c10's own format: the C++ exception escapes a destructor or a thread, std::terminate prints it.
    b"terminate called after throwing an instance of 'c10::CUDAError'\n"
    b"  what():  CUDA error: unspecified launch failure\n",
    b"Traceback (most recent call last):\n  File \"train.py\", line 10, in <module>\n    loss.backward()\n"
    b"RuntimeError: CUDA error: unspecified launch failure\n"
    b"terminate called after throwing an instance of 'c10::CUDAError'\n"
    b"  what():  CUDA error: unspecified launch failure\n",
])
def test_terminate_is_judged_by_the_error_it_carries(log: bytes) -> None:
    d = Diagnoser().diagnose(log)
    assert d.primary is not None and d.primary.id == "cuda-illegal-memory-access/launch-failure"


def test_an_exception_python_ignored_ends_nothing() -> None:
    """CPython prints "Exception ignored in: <obj>" for an exception in a destructor or atexit hook and goes on."""
    tail = (b"Traceback (most recent call last):\n"
            b'  File "/usr/lib/python3/site-packages/torch/utils/data/dataloader.py", line 1477, in __del__\n'
            b"    self._shutdown_workers()\n"
            b"AttributeError: '_MultiProcessingDataLoaderIter' object has no attribute '_workers_status'\n")
    ignored = b"step 99 loss 0.1\nException ignored in: <function _MultiProcessingDataLoaderIter.__del__ at 0x7f>\n"
    assert Diagnoser().diagnose(ignored + tail).verdict == "healthy"
    assert Diagnoser().diagnose(b"step 99 loss 0.1\n" + tail).verdict == "failure"


def test_the_waiting_ranks_name_the_faulty_one() -> None:
    d = _diagnose("dist-lightning-ddp-monitored-barrier-rank0-faulty")  # "Please check rank 0 logs for faulty rank"
    assert d.primary is not None and d.primary.id == "peer-connection-lost/gloo-connection-closed"
    assert d.primary.rank == 0


def test_a_cut_traceback_does_not_outrank_what_the_other_ranks_report() -> None:
    d = _diagnose("dist-ofi-remote-error-ddp-verify")  # rank 2's traceback is cut; rank 3 says NET/OFI failed
    assert d.primary is not None and d.primary.id == "peer-connection-lost/nccl-remote-error"


def test_torch_0x_waited_for_its_workers_in_next() -> None:
    d = _diagnose("dlw-hang-opencv-macos-2017")
    assert d.primary is not None and d.primary.id == "dataloader-worker-failure/worker-hang"


def test_a_traceback_pasted_without_its_header_is_still_read() -> None:
    """Issue threads often quote a traceback from its first frame: the frames still say where it waited."""
    d = _diagnose("ok-hang-val-loader-second-epoch")
    assert d.primary is not None and d.primary.id == "dataloader-worker-failure/worker-hang"


def test_a_headless_traceback_with_launcher_prefixes_is_read_as_that_ranks() -> None:
    """torch >= 2.2 prefixes each line with "[rankN]:": a fragment quoted from its first frame, ending in
    a bare StopIteration, is still an exception that ended rank 24 (not a healthy run)."""
    d = _diagnose("more4-ms-swift-megatron-dpo-stopiteration")
    assert d.verdict == "failure" and d.primary is not None and d.primary.rank == 24
    assert any("StopIteration" in e.text for e in d.primary.evidence)
    # near-miss: a frame-like line in a message is no traceback
    d = Diagnoser().diagnose(b'[rank3]: step 10 loss 0.4 (see File "train.py", line 3, in main)\n')
    assert d.verdict == "healthy"


def test_frames_inside_a_traceback_do_not_start_another() -> None:
    log = (b"Traceback (most recent call last):\n"
           b'  File "train.py", line 3, in <module>\n    main()\n'
           b"    ^^^^^^\n"
           b'  File "train.py", line 9, in main\n    loader.next()\n'
           b"RuntimeError: boom\n")
    [scan] = Diagnoser().scan(Named("a.log", log))
    assert len(scan.tracebacks) == 1 and scan.tracebacks[0].first_line == 1


def test_a_loss_scale_ten_halvings_down_is_a_run_that_no_longer_learns() -> None:
    d = _diagnose("mem-ds-llama-alpaca-overflow-cascade")  # 64 -> 32 -> ... -> 2 on consecutive steps
    assert d.verdict == "failure" and d.primary is not None and d.primary.id == "grad-scaler-overflow/repeated-overflow"
    assert "grad-scaler-overflow/min-loss-scale" in [a.id for a in d.alternatives[:2]]  # where it was heading
    early = b"[deepspeed] OVERFLOW! Rank 0 Skipping step. Attempted loss scale: 65536, reducing to 32768\nstep 10 loss 2.1\n"
    assert Diagnoser().diagnose(early).verdict == "healthy"


def test_a_step_that_mostly_waits_for_data_is_input_starvation() -> None:
    d = _diagnose("more2-starvation-mmdet-cascade-data-time-dominates")  # data_time 1.4-1.7 s of 1.8-2.0 s
    assert d.verdict == "failure" and d.primary is not None
    assert d.primary.id == "input-pipeline-starvation/slow-input"
    fed = "".join(f"Epoch [1][{i}/900]\tlr: 0.02, time: 1.201, data_time: 0.004, loss: 0.8\n" for i in range(50, 300, 50))
    assert Diagnoser().diagnose(fed.encode()).verdict == "healthy"


def test_a_loss_that_jumps_and_stays_up_is_a_loss_spike() -> None:
    d = _diagnose("more2-loss-spike-zsd-mmdet-explodes-iter150")  # 0.85 -> 63118 -> 1e13
    assert d.verdict == "failure" and d.primary is not None and d.primary.id == "loss-spike/spike-detected"
    back = "".join(f"Epoch [1][{i}/900]\ttime: 1.2, data_time: 0.01, loss: {v}\n"
                   for i, v in zip(range(50, 450, 50), [0.9, 0.8, 0.7, 0.7, 4000.0, 3.0, 0.9, 0.7], strict=True))
    d = Diagnoser().diagnose(back.encode())
    assert d.verdict == "healthy" and any("came back" in n for n in d.notes)


def test_a_bare_device_side_assert_leads_with_what_threads_found_and_offers_the_checks() -> None:
    """Only "device-side assert triggered", no assertion text: a class label out of range is what resolved
    threads most often found (calibration.yaml `resolved`); the bare assert and an index out of range stay
    the alternatives, and the rerun that prints the kernel's assertion is the missing fact."""
    d = _diagnose("gpu-assert-labels-not-zero-based-widedeep")
    assert d.primary is not None and d.primary.id == "cuda-device-side-assert/target-out-of-range"
    assert d.primary.confidence < 0.9 and "threads that found the cause" in d.primary.why
    assert [a.id for a in d.alternatives[:2]] == ["cuda-device-side-assert/device-assert",
                                                  "cuda-device-side-assert/index-out-of-range"]
    assert any("Assertion" in m.command for m in d.primary.missing)


@pytest.mark.parametrize(("case_id", "cause"), [
    # torch 1.0-1.2's BCE: "reduce failed to synchronize: device-side assert triggered" raised in F.binary_cross_entropy
    ("more42d-pocket-interaction-head-bce-reduce-failed", "cuda-device-side-assert/bce-input-out-of-range"),
    ("more42d-da-faster-rcnn-widerface-instance-bce-reduce-failed", "cuda-device-side-assert/bce-input-out-of-range"),
])
def test_a_bare_device_side_assert_is_named_by_the_function_it_was_raised_in(case_id: str, cause: str) -> None:
    d = _diagnose(case_id)
    assert d.primary is not None and d.primary.id == cause, d.primary
    assert "threads that found the cause" not in d.primary.why  # named by its frame, not by the prior


def test_a_users_own_function_named_like_a_loss_is_not_the_loss() -> None:
    """Near miss: the frame must be the function itself ("in binary_cross_entropy"), not one whose name
    contains it; the bare assert is then read by the prior, as any other."""
    log = ('Traceback (most recent call last):\n  File "train.py", line 9, in <module>\n'
           '  File "train.py", line 5, in my_binary_cross_entropy_metric\n'
           "RuntimeError: CUDA error: device-side assert triggered\n")
    d = Diagnoser().diagnose(Named("output.log", log.encode()))
    assert d.primary is not None and d.primary.id != "cuda-device-side-assert/bce-input-out-of-range"


def test_collateral_only_runs_are_named_by_the_earliest_line_not_the_first_printed() -> None:
    """c10's log times ("E626 05:06:30"): the all-gather timeout came eight minutes before the
    heartbeat monitor's report, although the report was pasted first."""
    d = _diagnose("dist-arctic-allgather-timeout-then-heartbeat")
    assert d.primary is not None and d.primary.id == "nccl-timeout/watchdog-timeout"


def test_an_error_in_the_pin_memory_thread_is_a_pinning_failure_not_a_dataset_one() -> None:
    """The pin thread runs no __getitem__: alone, its re-raised error points at page-locking."""
    d = _diagnose("gap-pinned-thread-error-heareval-small-gpu")
    assert d.primary is not None and d.primary.id == "pinned-memory-failure/pinned-alloc-failed"
    assert d.alternatives and d.alternatives[0].id == "pinned-memory-failure/pin-non-cpu-tensor"


def test_nccl_connecting_over_an_interface_with_no_route_is_the_interface() -> None:
    d = _diagnose("more3-nccl-socket-ifname-no-route-transformer")
    assert d.primary is not None and d.primary.id == "nccl-error/socket-interface"


def test_a_kernel_assertion_printed_after_the_generic_error_names_it() -> None:
    """The kernel's assertion reaches stdout after the exception (formats as in more3-dsa-nll-target-*)."""
    log = (b"RuntimeError: CUDA error: device-side assert triggered\n"
           b"CUDA kernel errors might be asynchronously reported at some other API call, so the stacktrace below "
           b"might be incorrect.\nFor debugging consider passing CUDA_LAUNCH_BLOCKING=1\n"
           b"Compile with `TORCH_USE_CUDA_DSA` to enable device-side assertions.\n\n"
           b"../aten/src/ATen/native/cuda/Loss.cu:250: nll_loss_forward_reduce_cuda_kernel_2d: block: [0,0,0], "
           b"thread: [0,0,0] Assertion `t >= 0 && t < n_classes` failed.\n")
    d = Diagnoser().diagnose(log)
    assert d.primary is not None and d.primary.id == "cuda-device-side-assert/target-out-of-range"
    assert 6 in [e.line for e in d.primary.evidence[:2]]


def test_an_unprefixed_kernel_assertion_names_the_ranks_generic_error_and_keeps_its_rank() -> None:
    d = _diagnose("more3-dsa-nll-target-ms-swift-rank0")
    assert d.primary is not None and d.primary.id == "cuda-device-side-assert/target-out-of-range"
    assert d.primary.rank == 0


def test_a_workers_original_traceback_pasted_on_its_own_is_read_and_its_exception_named() -> None:
    """The excerpt starts at "Caught X in DataLoader worker process 0." and its "Original Traceback": the
    worker's own exception (Pillow's) is the finding, not the wrapper."""
    d = _diagnose("dlw-corrupt-pil-bytesio-tim2map")
    assert d.primary is not None and d.primary.id == "corrupt-sample/undecodable-file"
    [scan] = Diagnoser().scan(Named("output.log", _case("dlw-corrupt-pil-bytesio-tim2map").log.encode()))
    assert [(t.first_line, t.exceptions[-1][:24]) for t in scan.tracebacks] == [(2, "PIL.UnidentifiedImageErr")]


def test_the_pinning_frame_says_where_and_the_exception_says_what() -> None:
    d = _diagnose("mem-pin-cuda-longtensor-gcnn")  # "cannot pin 'torch.cuda.LongTensor'" below the frame
    assert d.primary is not None and d.primary.id == "pinned-memory-failure/pin-non-cpu-tensor"


def test_zero3s_pinned_flat_buffer_failing_is_page_locking_not_the_gpu() -> None:
    d = _diagnose("more2-pinned-deepspeed-zero3-flat-cpu-buffer-dreambooth")
    assert d.primary is not None and d.primary.id == "pinned-memory-failure/pinned-alloc-failed"


def test_a_client_connect_error_retrying_cannot_fix_is_the_store_unreachable() -> None:
    """c10d retries a refused connection quietly (a start-up race); an address not usable here is not one."""
    d = _diagnose("dist-llama-windows-client-connect-10049")
    assert d.primary is not None and d.primary.id == "rendezvous-failure/store-unreachable"


def test_frames_of_an_exception_python_ignored_are_no_failure_but_a_known_message_in_it_is() -> None:
    d = _diagnose("more4-pytorch-dataloaderiter-del-every-epoch")  # the iterator's destructor, each epoch
    assert d.verdict == "healthy"
    d = _diagnose("fw-ds-cpu-adam-create-adam-stale")  # DeepSpeed's op never loaded: seen in a destructor
    assert d.primary is not None and d.primary.id == "deepspeed-failure/op-build-failure"


def test_a_workers_own_traceback_through_its_loop_is_the_datasets_exception() -> None:
    d = _diagnose("more4-pytorch-h5py-multiworker-keyerror")  # torch 0.4: dataloader.py's _worker_loop
    assert d.primary is not None and d.primary.id == "dataloader-worker-failure/getitem-exception"


@pytest.mark.parametrize(("case_id", "cause"), [
    # torch.save's "PytorchStreamWriter failed writing file data/0: file write failed" names no reason: the
    # disk that filled up is what resolved threads found (calibration.yaml `resolved`)
    ("more5b-disk-h2o-llmstudio-output-volume-full", "disk-full/no-space-left"),
    # DeepSpeed at its min_loss_scale: "Attempted loss scale: 1, reducing to 1" on every step.
    ("more5a-t5-11b-deepspeed-scale-stuck-at-1", "grad-scaler-overflow/min-loss-scale"),
    # fairseq's "setting loss scale to: 0.000244...": a halving or two from its 1e-4 floor.
    ("more5a-fairseq-backtranslation-min-loss-scale", "grad-scaler-overflow/min-loss-scale"),
    # NaN in plain metric lines: nanoGPT's "loss nan," and a logger's "Loss nan (nan)".
    ("more5a-nanogpt-fp16-v100-nan-after-iter3000", "nan-loss/nonfinite-loss"),
    ("more5a-gaze-lr-too-high-loss-nan", "nan-loss/nonfinite-loss"),
    # "1337 Loss : 35551447.3009": a line that reports the loss is a progress line, so the jump is read.
    ("more5a-audio-diffusion-loss-explodes-epoch1336", "loss-spike/spike-detected"),
    # the deepspeed launcher's ssh pre-check of the hostfile, old and new wording
    ("more5b-ds-eva-hostfile-placeholder-node-0", "deepspeed-failure/multinode-launch-failure"),
    # timm pads its meters: "Loss:       nan (   nan)" on every line to the end
    ("more30b-timm-mobilenetv3-nan-lr-not-scaled-to-batch", "nan-loss/nonfinite-loss"),
    # the shell's bare report of a crash, with no "(core dumped)" (cores off)
    ("more30b-mmdet-v0-train-segfault-ops-built-gcc48", "native-crash/segfault"),
    # PaddlePaddle's allocator in a port's log, on glog warning lines and alone
    ("more30b-paddledet-cascade-rcnn-roi-align-badalloc-glog", "cuda-out-of-memory/allocator-oom"),
    ("more30b-paddledet-yolov3-roadsign-windows-gpu-oom-batch8", "cuda-out-of-memory/allocator-oom"),
    # an extension's own check macro: vLLM's cumem allocator waking its engine ("CUDA Error: out of memory at")
    ("more30f-lmm-r1-vllm-wake-up-cumem-oom", "cuda-out-of-memory/cuda-runtime-oom"),
    # NCCL's socket transport: a recv from a peer pod that TCP gave up on ("failed : Connection timed out")
    ("more30h-horovod-k8s-32-pods-nccl-socket-recv-timed-out-hang", "peer-connection-lost/connection-reset"),
    # the OOM exception's bare class name closing the paste ("torch.cuda.OutOfMemoryError")
    ("more30j-avalanche-rl-oom-after-1000-experiences", "cuda-out-of-memory/allocator-oom"),
    # SIGKILL as a wrapper's return code ("Training failed with exit code -9", DIGITS' "error code -9"), as
    # macOS's shell says it ("Killed: 9"), and glued to a progress line with no newline ("2.1371Killed")
    ("more31a-gemma-tuner-macos-exit-minus9-leaked-semaphore", "host-oom/sigkill"),
    ("more31a-digits-detectnet-cpu-caffe-error-code-minus9", "host-oom/sigkill"),
    ("more31a-rlswarm-macmini-killed9-after-18h-87g", "host-oom/sigkill"),
    ("more31a-keras-fit-generator-epoch-progbar-killed", "host-oom/sigkill"),
    # torch 0.4's distributed module asserting its mode: "collective only supported in process-group mode"
    ("more31f-pytorch04-ddp-without-init-process-group", "rendezvous-failure/process-group-not-initialized"),
    # a library class's instance without the attribute the code reads (PyG's GATConv lost `weight`, an
    # older Lightning's Fabric had no `init_module`), and a TypeError a program words itself
    ("more30j-deeprobust-gat-fit-gatconv-no-attribute-weight", "dependency-version-mismatch/api-changed"),
    ("more31h-lit-llama-lora-fabric-init-module-old-lightning", "dependency-version-mismatch/api-changed"),
    ("more31g-sd-dreambooth-ext-accelerator-project-dir-kwarg", "dependency-version-mismatch/api-changed"),
    # fairseq's all_gather_list finding another worker's bytes (one worker finished its epoch first), and
    # torch_xla's mesh service closing its socket under a rendezvous
    ("more31e-fairseq-lm-2gpu-epoch-end-all-gather-list-unpickle-out-of-sync", "rank-desync/uneven-inputs"),
    ("more31e-xla-kaggle-tpu-loss-reduce-rendezvous-socket-closed", "peer-connection-lost/store-lost"),
    # ATen's check of a device index the visible GPUs lack, in a vLLM engine actor
    ("more31h-openrlhf-vllm-engine-device-ge-num-gpus-assert", "cuda-visible-devices-error/invalid-device-ordinal"),
    # a module without the name the code reads, with and without AttributeError's prefix; a stale DeepSpeed
    # op module the same way (its own cause); `python -m` naming a module that is not installed
    ("more31l-deepchem-tutorial-no-attribute-torchmodel-versions", "dependency-version-mismatch/api-changed"),
    ("more31l-robomimic-diffusers-torch-no-float8-attribute", "dependency-version-mismatch/api-changed"),
    ("fw-ds-cpu-adam-create-adam-stale", "deepspeed-failure/op-build-failure"),
    ("more31l-nerfstudio-viewer-bridge-subprocess-no-module-server", "dependency-version-mismatch/module-missing"),
    # CUDA's multinomial kernel on NaN probabilities: "Assertion `val >= zero` failed"
    ("more31l-habitat-pointnav-ppo-reward-nan-multinomial-assert", "nan-loss/nonfinite-loss"),
    # Abseil's failure signal handler in a Ray worker ("*** SIGABRT received at time=..."), CPython's own fatal
    # error ("Fatal Python error: PyCOND_WAIT(gil_cond) failed"), bitsandbytes missing its CUDA runtime,
    # SageMaker's report that the user's script exited non-zero
    ("more31k-ray-train-macos-gloo-uv-accept-sigabrt", "native-crash/abort"),
    ("more31j-datasets-map-num-proc-fatal-gil-cond", "native-crash/abort"),
    ("more31j-lora-scripts-ubuntu-bitsandbytes-cuda-setup-failed", "missing-cuda-libraries/library-not-found"),
    ("more31k-sagemaker-maskrcnn-launch-ddp-calledprocesserror", "unclassified-failure/process-exited"),
    # Ray's raylet on a worker that died under a task; TRL's check of the device it was told to put vLLM on
    ("more31m-verl-grpo-raylet-worker-died-system-error", "unclassified-failure/process-exited"),
    ("more31m-trl-grpo-vllm-device-cuda1-single-gpu", "cuda-visible-devices-error/invalid-device-ordinal"),
    # DeepSpeed's comm module before any process group; torch's index_put_ across dtypes
    ("more31o-chinese-transformer-xl-deepspeed-backend-not-set", "rendezvous-failure/process-group-not-initialized"),
    ("more31o-llamafactory-deepseek-v2-lite-lora-bf16-index-put-dtype", "dtype-mismatch/incompatible-dtypes"),
    # a training script's own check, in its own words: "loss became NaN", "Loss is not finite and patience ..."
    ("more32d-dataset-distillation-mnist-loss-became-nan", "nan-loss/nonfinite-loss"),
    ("more32e-speechbrain-librispeech-lm-loss-not-finite-patience", "nan-loss/nonfinite-loss"),
    # Windows says error 1455 in the system's language; the code is the same
    ("more32f-dlw-win1455-weclip-spawned-import", "dataloader-worker-failure/shm-exhausted"),
    # PaddlePaddle's DataLoader words torch's bus-error message its own way
    ("more32f-dlw-shm-bus-paddlespeech-docker", "dataloader-worker-failure/shm-exhausted"),
    # Python 3.12+: "Can't get local object '...<locals>.hook'" where older ones said "Can't pickle local object"
    ("more32a-llamafactory-windows-reward-valuehead-hook-cant-get-local-object",
     "dataloader-worker-failure/spawn-unpicklable-object"),
    # ZeRO-3's empty placeholder pushed into a vLLM engine: "Attempted to load weight (torch.Size([0]))"
    ("more32a-r1v-grpo-zero3-vllm-load-weights-empty-shard", "deepspeed-failure/zero3-params-not-gathered"),
    # the device backends' own words for an operand on the CPU: MPS's placeholder storage, XLA's CPU tensor
    ("more32h-pytorch-mps-hf-classifier-embedding-placeholder-storage", "device-mismatch/tensors-on-different-devices"),
    ("more32h-xla-colab-tpu-linear-input-not-xla-tensor", "device-mismatch/tensors-on-different-devices"),
    # torchtune's weight converter meeting a key its model has no place for
    ("more32h-torchtune-061-qwen3-lora-k-norm-unexpected-key", "checkpoint-load-mismatch/state-dict-mismatch"),
    # a library saying what the code uses "was removed in v1.8"
    ("more32i-openspeech-callback-on-batch-end-removed-pl18", "dependency-version-mismatch/api-changed"),
    # a loss shown non-finite in Lightning's bar (train_loss_step=nan.0) and as inf (act_loss: inf)
    ("more32i-replay-sasrec-bf16-mixed-train-loss-nan", "nan-loss/nonfinite-loss"),
    ("more32k-deepspeed-chat-step3-ppo-actor-critic-loss-inf", "nan-loss/nonfinite-loss"),
    # Ray 2.x's ActorDiedError; NCCL's own "WARN Cuda failure 1 'invalid argument'"
    ("more32k-logic-rl-a800-actor-died-worker-system-error", "unclassified-failure/process-exited"),
    ("more32k-openrlhf-vllm-update-weight-second-nccl-group-p2p-invalid-argument", "nccl-error/unhandled-cuda-error"),
    # Kaldi's run.pl (ESPnet's recipes): "run.pl: 32 / 32 failed, log is in ..."
    ("more32e-espnet2-an4-lm-collect-stats-all-jobs-failed", "unclassified-failure/process-exited"),
    # Windows' access violation as PyCharm prints it: "Process finished with exit code -1073741819 (0xC0000005)"
    ("more32n-ultralytics-yolo11-rtx5090-epoch2-access-violation", "native-crash/segfault"),
    # ... and as subprocess reports it unsigned: "returned non-zero exit\nstatus 3221225477."
    ("more32q-sd-scripts-windows-lora-calledprocesserror-3221225477", "native-crash/segfault"),
    # flash-attn refusing a pre-Ampere card; std::terminate with no exception (a joinable thread destroyed)
    ("more32o-tinyzero-titan-rtx-flashattention-ampere-despite-xformers-backend", "cuda-driver-mismatch/unsupported-gpu-arch"),
    ("more32m-joligen-clear2snowy-terminate-called-without-active-exception-loader-del", "native-crash/cpp-terminate"),
    # a reduction over an integer tensor; torch 1.13's DataLoader iterators without .next() (a private class)
    ("more32p-udop-colab-finetune-epoch0-generate-long-bbox-mean-dtype", "dtype-mismatch/incompatible-dtypes"),
    ("more32p-pytorchstepbystep-ch5-dataloader-iter-next-removed-torch113", "dependency-version-mismatch/api-changed"),
    # spawn's child reading nothing from its parent (EOFError after pickle.load(from_parent)) is the echo of the
    # parent's pickling error, not a truncated checkpoint; h5py's "objects cannot be pickled"
    ("more33b-passt-windows-unpicklable-roll-func", "dataloader-worker-failure/spawn-unpicklable-object"),
    ("more33c-ames-h5py-handle-unpicklable-windows", "dataloader-worker-failure/spawn-unpicklable-object"),
    # Lightning's MisconfigurationException from 0.7's utilities.debugging and bare in IPython; EarlyStopping's
    # strict RuntimeError on a metric never logged
    ("more33b-pl07-plateau-val-loss-missing", "lightning-failure/misconfiguration"),
    ("more33b-pl-accumulate-optimizer-step-override", "lightning-failure/misconfiguration"),
    ("more33b-lagllama-earlystop-no-val-metric", "lightning-failure/misconfiguration"),
    # NaN as JSON writes it (the Trainer's log_history: "grad_norm": NaN), as ESPnet's trainer stops on it
    # ("The gradients at all steps are invalid in this epoch"), and as an assertion's tensor of NaN boxes
    ("more33a-trl-dpo-gemma-fp16-v100-nan-metrics", "nan-loss/nonfinite-loss"),
    ("more33i-espnet2-nan-grad-stopped-epoch2", "nan-loss/nonfinite-loss"),
    ("more33h-sparse-rcnn-giou-assert-nan-boxes-lr", "nan-loss/nonfinite-loss"),
    # Windows' display watchdog ending a long kernel, a tqdm bar redrawn below it as the process exits
    ("more33k-kohya-lora-windows-4060ti-launch-timed-out-step3", "cuda-illegal-memory-access/launch-timeout"),
    # the DeepSpeed launcher's "exits with return code = -7" (SIGBUS); torch <= 1.x's legacy "unexpected EOF."
    ("more33o-neox-deepspeed-exit-minus7", "native-crash/bus-error"),
    ("more33r-dsfd-pretrained-unexpected-eof-replaced", "corrupted-checkpoint/incomplete-write"),
    # accelerate refusing a bitsandbytes model on another GPU; raw text left in the collator's batch
    ("more33a-llamafactory-qlora-8bit-different-device", "hf-trainer-failure/device-map-distributed"),
    ("more31j-argilla-trainer-mistral-sft-unable-to-create-tensor-text", "hf-trainer-failure/dataset-model-mismatch"),
    # nnU-Net's background workers (its export pool); Transformer Engine's FP8 on a card below 8.9; checkSameType
    # with both types on the GPU (a dtype clash: "CUDABFloat16Type does not equal torch.cuda.HalfTensor")
    ("more33h-nnunet-validation-export-workers-not-alive", "dataloader-worker-failure/worker-exited"),
    ("more33j-te-fp8-autocast-rtx3090-capability", "hf-trainer-failure/mixed-precision-unsupported"),
    ("more33j-simpletuner-sdxl-bf16-grad-output-half-weight", "dtype-mismatch/incompatible-dtypes"),
    # a library's constructor or private function called against another release's signature
    ("more32l-sotr-trainer-init-takes-1-positional-newer-detectron2", "dependency-version-mismatch/api-changed"),
    ("more32s-nemo-tacotron2-colab-hydra-runner-run-hydra-missing-args", "dependency-version-mismatch/api-changed"),
    # THC's "arguments are located on different GPUs" (torch 0.x); an extension's undefined caffe2:: symbol;
    # the Trainer asking for max_steps with a dataset of no length; DETR's box check on NaN predictions
    ("more34f-opennmt-py27-dataparallel-different-gpus", "device-mismatch/tensors-on-different-devices"),
    ("more34a-detectron2-train-net-c-undefined-typemeta", "missing-cuda-libraries/extension-abi-mismatch"),
    ("more34d-datasets-whisper-seq2seq-no-len-max-steps", "hf-trainer-failure/invalid-training-arguments"),
    ("more34a-istr-giou-degenerate-pred-boxes", "nan-loss/nonfinite-loss"),
    # transformers naming the optional package it needs ("requires Accelerate: `pip install accelerate`")
    ("more34k-lsf-dtu-paligemma-device-map-requires-accelerate", "dependency-version-mismatch/module-missing"),
    # an index tensor on another GPU (torch 1.13+); VS Code's notebook saying its kernel crashed
    ("more34n-gpytorch-multigpu-exact-gp-indices-device-cuda1", "device-mismatch/tensors-on-different-devices"),
    ("more34n-fingpt-int4-chatglm-trainer-vscode-kernel-crashed", "unclassified-failure/process-exited"),
    # GPT-NeoX's overflow monitor giving up after 50 skipped steps in a row
    ("more34u-neox-overflow-50-skipped", "grad-scaler-overflow/repeated-overflow"),
    # torch.distributed.checkpoint's reader: "req MetadataIndex(...) mismatch sizes torch.Size([..]) vs ..."
    ("more33g-lightning-fsdp-sharded-ckpt-size-mismatch", "checkpoint-load-mismatch/state-dict-mismatch"),
    # os.fork refused memory when workers start ("OSError: [Errno 12] Cannot allocate memory"), Python 2 and 3
    ("more35g-reid-test-loop-fork-enomem", "host-oom/cpu-allocation-failure"),
    ("more35g-resnext-epoch-start-fork-enomem", "host-oom/cpu-allocation-failure"),
    # joblib's loky pool naming its dead worker's signal; torch<=1.7's distribution check without the tensor
    ("more35b-sovits-fork-joblib-worker-sigkill-colab", "host-oom/sigkill"),
    ("more35d-bidexhands-ppo-multivariate-normal-loc-invalid", "nan-loss/nonfinite-loss"),
    # Accelerate's load_state given a weights file; Lightning 2.0's Trainer without add_argparse_args
    ("more35a-lora-scripts-resume-points-at-safetensors-not-state-dir", "hf-trainer-failure/checkpoint-not-found"),
    ("more35b-piper-lightning-add-argparse-args", "dependency-version-mismatch/api-changed"),
    # a loss term's own name reading nan ("train_mel_loss_before = nan."); Hydra's report that the app raised
    ("more35b-tensorflowtts-fastspeech2-mel-loss-nan", "nan-loss/nonfinite-loss"),
    ("more35b-fish-speech-hydra-model-config-missing", "unclassified-failure/uncaught-exception"),
    # Accelerate's debug-mode shape check; the RNN kernels' device check; torch's own library failing to bind a
    # runtime symbol at import; transformers' "state dictionary ... corrupted" (a base-model prefix mismatch)
    ("more36a-accelerate-debug-mode-broadcast-shape-mismatch", "rank-desync/mismatched-collectives"),
    ("more36c-lmsys-gemma-lstm-input-cuda-lstm-params-cpu", "device-mismatch/tensors-on-different-devices"),
    ("more36a-ezpz-aurora-import-torch-xpu-undefined-sycl-symbol", "missing-cuda-libraries/symbol-mismatch"),
    ("more36b-pbs-gadi-data2vec-from-hubert-checkpoint-state-dict-corrupted",
     "checkpoint-load-mismatch/state-dict-mismatch"),
    # transformers' DebugUnderflowOverflow report ("Detected inf/nan during batch_number=0")
    ("more36d-hf-debug-overflow-mt5-small-fp16-inf-dropout", "nan-loss/nonfinite-loss"),
    # SageMaker HyperPod's auto-resume replacing a faulty node
    ("more36d-hyperpod-neuron-llama3-auto-resume-unhealthy-node-replaced", "scheduler-termination/node-failure"),
    # torch<=1.2's "Expected object of type torch.cuda.FloatTensor but found type torch.FloatTensor"; THCUNN's
    # "tensors are located on different GPUs"; bitsandbytes finding no CUDA; Lightning 0.8's own "do not have
    # apex installed"; a script's "RuntimeError: Non-finite loss"
    ("more37a-seq2seq-cv-validation-cuda-floattensor-vs-cpu-old-torch", "device-mismatch/tensors-on-different-devices"),
    ("more37e-lightning-dp-native-amp-nll-loss-different-gpus", "device-mismatch/tensors-on-different-devices"),
    ("more37a-bitsandbytes-cuda-required-cpu-only-torch-4bit-load", "missing-cuda-libraries/cpu-only-build"),
    ("more37e-lightning-tpu-precision16-apex-missing", "dependency-version-mismatch/module-missing"),
    ("more37b-causaldiffae-morphomnist-noisy-kld-nonfinite-loss-stop", "nan-loss/nonfinite-loss"),
    # torch.cat of tensors of different rank; a CUDA tensor handed to NumPy
    ("more38f-gpytorch-batched-fixed-noise-preconditioner-cat-dims", "tensor-shape-mismatch/incompatible-shapes"),
    ("more38g-tianshou-td3-custom-per-weight-numpy-cuda-tensor", "device-mismatch/tensors-on-different-devices"),
    # MPICH/Intel MPI's Hydra banner naming the signal ("EXIT STRING: Bus error (signal 7)")
    ("more39b-mlsh-mpirun-bus-error-signal-7-docker", "native-crash/bus-error"),
    # a Lightning callback hook written for another release; Accelerate refusing a newer release's config keys
    ("more37c-bolts-ssl-online-evaluator-hook-signature", "dependency-version-mismatch/api-changed"),
    ("more37b-grpo-accelerate-config-unknown-key-main-training-tp-size", "dependency-version-mismatch/api-changed"),
    # torch 1.0-1.2's backend check; tcmalloc's invalid free; ROCm's page fault and HSA kernel exception
    ("more41c-gentrl-vaelp-cat-backend-cpu-cuda-sequence", "device-mismatch/tensors-on-different-devices"),
    ("more41c-fast-sd-unet-tcmalloc-free-invalid-pointer", "native-crash/heap-corruption"),
    ("more41e-rocm-7900xtx-resnet50-epoch11-memory-access-fault", "cuda-illegal-memory-access/illegal-address"),
    ("more41e-rocm-mi300x-gather-kernel-hsa-exception-corrupt-shard", "cuda-illegal-memory-access/illegal-address"),
    # Triton's PTX for bf16 on a pre-Ampere GPU; Arrow's allocator refused; a shared storage's mmap refused for
    # want of map slots
    ("more41d-nemo-pretrain-triton-bf16-ptxas-pre-ampere", "torch-compile-failure/triton-unavailable"),
    ("more41f-img2dataset-arrow-realloc-2gb-failed", "host-oom/cpu-allocation-failure"),
    ("more32f-dlw-mmap-enomem-kohya-large-dataset", "dataloader-worker-failure/mmap-count-limit"),
    # torch 2.0's DataLoader refusing the old prefetch_factor default without workers
    ("more41f-clip-retrieval-prefetch-factor-zero-workers-torch21", "dependency-version-mismatch/api-changed"),
    # the shell's "Killed" written over a carriage-returned progress line; Kubernetes restarting a crashing container
    ("more31a-dlrm-kaggle-4gpu-killed-mid-epoch", "host-oom/sigkill"),
    ("more32n-katib-pytorchjob-example-master-crashloopbackoff", "unclassified-failure/process-exited"),
    # torch 2.2+'s store client giving up, address in parentheses; ATen's argument dtype check; THC's cuBLAS
    # INTERNAL_ERROR at a GEMM; NCCL built without kernels for the GPU
    ("more41i-cosmos-rl-container-hostname-store-connect-timeout", "rendezvous-failure/store-unreachable"),
    ("more33g-c10d-store-client-timeout-localhost", "rendezvous-failure/store-unreachable"),
    ("more41k-topicsne-windows-embedding-int-indices-fit", "dtype-mismatch/incompatible-dtypes"),
    ("more41k-crnn-torch03-ctc-backward-cublas-internal-failed", "cuda-illegal-memory-access/cublas-execution-failed"),
    ("more41h-slime-quickstart-sm120-nccl-enqueue-named-symbol-not-found", "cuda-driver-mismatch/unsupported-gpu-arch"),
    # NCCL's bootstrap connect aborted (not a routing failure)
    ("more41i-kubeflow-h100-bootstrap-socket-connect-abort", "nccl-error/system-error"),
    # torch 0.1's THC without the colon ("cuda runtime error (3) initialization error at"); torch.cuda.nccl's
    # "NCCL Error 4: invalid argument" under terminate, with argcheck's WARN naming the argument
    ("more53a-resnet-transform-cuda-init-error-worker", "dataloader-worker-failure/cuda-in-forked-worker"),
    ("more53d-nccl25-dataparallel-invalid-root-abort", "nccl-error/invalid-usage"),
])
def test_metric_and_launcher_wordings_across_versions(case_id: str, cause: str) -> None:
    d = _diagnose(case_id)
    assert _names(d, cause), d.primary


def _names(d: Diagnosis, cause: str) -> bool:
    """The primary is `cause`, or `cause` is a kill that names no sender, read as its likeliest sender
    (catalog.likeliest_reading) with the kill itself first among the alternatives."""
    if d.primary is None:
        return False
    sender = LIBRARY.likeliest_reading(cause)
    return d.primary.id == cause or (sender is not None and d.primary.id == sender[0]
                                     and bool(d.alternatives) and d.alternatives[0].id == cause)


def test_torch_logs_debug_output_is_not_a_failure() -> None:
    # TORCH_LOGS=recompiles: "[__recompiles] ... triggered by the following guard failure(s)" is what was asked for
    d = _diagnose("more34e-dynamo-recompile-empty-guard-reason")
    assert d.verdict == "healthy", d.primary


@pytest.mark.parametrize("case_id", [
    "more31f-unsloth-gemma3-grpo-no-vllm-engine",  # "'Gemma3...' object has no attribute 'vllm_engine'"
    "more32l-cyclegan-test-py-instead-of-train-latest-net-missing",  # "No such file or directory: '...pth'"
])
def test_an_exception_message_pasted_without_its_class_is_still_a_failure(case_id: str) -> None:
    d = _diagnose(case_id)
    assert d.verdict == "failure" and d.primary is not None
    assert d.primary.id == "unclassified-failure/error-lines", d.primary


@pytest.mark.parametrize(("case_id", "cause"), [
    ("more34k-lsf-dtu-rl-agent-term-memlimit-1g-killed", "host-oom/oom-killer"),  # TERM_MEMLIMIT + bash's Killed
    ("more34k-lsf-dtu-starpilot-term-admin-keyboardinterrupt", "scheduler-termination/cancelled"),  # TERM_ADMIN
    ("more34k-lsf-dtu-painn-wandb-term-owner-exit-143", "scheduler-termination/cancelled"),  # TERM_OWNER
])
def test_lsfs_job_report_names_why_the_job_ended(case_id: str, cause: str) -> None:
    d = _diagnose(case_id)
    assert d.primary is not None and d.primary.id == cause, d.primary


@pytest.mark.parametrize("case_id", [
    # LSF's "Successfully completed." after an echoed job script ("#BSUB -e x.err  # Standard error file")
    "more34k-healthy-lsf-dtu-unet-cv-val-loss-jumps-completed",
    # TensorFlow's CUDA plugins registered twice, at glog's E level, in a PyTorch job
    "more34h-healthy-bert-finetune-tf-cufft-factory-errors",
    # Ray Train's controller: "[State Transition] RUNNING -> FINISHED." after worker-group start-up retries
    "more34q-healthy-ray-train-worker-group-startup-timeout-autoscale-retry",
    # 1024 ranks' apex overflow messages glued on a few lines, each naming the scale once, then MLPerf's run_stop
    "more41l-healthy-mlperf-bert-1024gpu-overflow-flood-target-reached",
])
def test_a_finished_job_or_import_noise_is_not_a_failure(case_id: str) -> None:
    d = _diagnose(case_id)
    assert d.verdict == "healthy", d.primary


def test_a_public_function_called_with_the_wrong_arguments_is_the_codes_own_error() -> None:
    d = _diagnose("more32e-modulus-corrdiff-training-loop-called-twice-typeerror")
    assert d.primary is not None and d.primary.id == "unclassified-failure/uncaught-exception", d.primary


def test_a_nan_eval_loss_while_training_goes_on_is_a_warning() -> None:
    d = _diagnose("more5a-healthy-llm2vec-mntp-eval-loss-nan")
    assert d.verdict == "healthy" and any("a warning alone is not a failure" in n for n in d.notes)


def test_an_apex_scale_that_keeps_falling_is_not_a_scaler_at_its_minimum() -> None:
    ds = "[deepspeed] OVERFLOW! Rank 0 Skipping step. Attempted loss scale: {}, reducing to {}"
    stuck = Diagnoser().diagnose("\n".join([ds.format(2, 1), ds.format(1, 1), ds.format(1, 1)]).encode())
    assert stuck.primary is not None and stuck.primary.id == "grad-scaler-overflow/min-loss-scale"
    falling = Diagnoser().diagnose("\n".join([ds.format(4, 2), ds.format(2, 1)]).encode())
    assert falling.primary is not None and falling.primary.id == "grad-scaler-overflow/repeated-overflow"
    # apex's messages glued on one line (ranks printing without newlines) name one scale each: not a scale kept
    apex = "Gradient overflow.  Skipping step, loss scaler 0 reducing loss scale to {}"
    glued = Diagnoser().diagnose("\n".join([apex.format(2048.0), apex.format(1024.0) * 3, apex.format(1024.0) * 2])
                                 .encode())
    assert glued.primary is None or glued.primary.id != "grad-scaler-overflow/min-loss-scale", glued.primary


def test_mlperfs_run_stop_says_the_run_finished() -> None:
    """A time limit after MLPerf's logger closed the run with success is a job that outlived its work;
    near miss: a run_stop with status aborted says nothing of the kind."""
    stop = (':::MLLOG {{"namespace": "", "time_ms": 1634509834823, "event_type": "INTERVAL_END", "key": "run_stop", '
            '"value": null, "metadata": {{"file": "run_pretraining.py", "lineno": 1502, "status": "{}"}}}}\n')
    steps = "".join(f"step {i} loss 2.{i}\n" for i in range(1, 6))
    cancel = "slurmstepd: error: *** JOB 4242 ON node1 CANCELLED AT 2021-10-17T22:30:34 DUE TO TIME LIMIT ***\n"
    d = Diagnoser().diagnose((steps + stop.format("success") + cancel).encode())
    assert d.primary is not None and d.primary.id == "training-hang/exit-hang", d.primary
    d = Diagnoser().diagnose((steps + stop.format("aborted") + cancel).encode())
    assert d.primary is not None and d.primary.id == "scheduler-termination/time-limit", d.primary


def test_a_timeout_inside_zero_first_names_rank_0() -> None:
    """Non-zero ranks wait in torch_distributed_zero_first's barrier while rank 0 checks the dataset."""
    d = _diagnose("more5c-store-timeout-yolov6-zero-first-image-check")
    assert d.primary is not None and (d.primary.id, d.primary.rank) == ("nccl-timeout/store-barrier-timeout", 0)


def test_a_silent_rank_whose_progress_bar_still_moved_was_slow_not_hung() -> None:
    """Ranks 1-3 time out (their lines glued to rank 0's progress bar) while rank 0 still scans labels;
    the process abort that follows the watchdog's teardown is its echo, not the root."""
    d = _diagnose("more5c-nccl-timeout-yolov5-rank0-label-cache-60s")
    assert d.verdict == "failure"
    assert d.primary is not None and (d.primary.id, d.primary.rank) == ("nccl-timeout/watchdog-timeout", 0)


def test_nccl_proxy_notes_at_teardown_are_not_a_failure() -> None:
    """'[Service thread] Unknown command ... from localRank -1' after the last epoch: the exit, not a failure."""
    d = _diagnose("more5c-healthy-nccl-service-thread-unknown-command-at-exit")
    assert d.verdict == "healthy", d.primary


def test_a_precursor_before_an_unknown_failure_is_its_first_reading() -> None:
    """NCCL listed the loopback interface, then its bootstrap connects failed: the interface cause
    leads, though no line names it outright; the failure in words no signature knows is the next
    reading. Near-miss: the same warning after the failure is only offered."""
    d = _diagnose("more5b-nccl-horovod-lo-interface-connect-refused")
    assert d.primary is not None and d.primary.id == "nccl-error/socket-interface"
    assert "its warning came first" in d.primary.why
    assert d.alternatives and d.alternatives[0].id == "unclassified-failure/error-lines"
    lo = "node2:4152:4206 [0] NCCL INFO NET : Using interface lo:127.0.0.1<0>"
    refused = "node2:4153:4209 [1] include/socket.h:361 NCCL WARN Call to connect timeout : Connection refused"
    d = Diagnoser().diagnose(f"{refused}\n{lo}\n".encode())
    assert d.primary is not None and d.primary.id == "unclassified-failure/error-lines"
    assert any(a.id == "nccl-error/socket-interface" for a in d.alternatives)


def test_an_oom_the_framework_caught_and_skipped_is_not_the_failure() -> None:
    """fairseq: 'THCudaCheck FAIL ... out of memory', then '| WARNING: ran out of memory on GPU #2, skipping
    batch', and the progress bar goes on."""
    d = _diagnose("more6a-healthy-fairseq-fconv-oom-skipping-batch")
    assert d.verdict == "healthy", d.primary
    assert any("handled by the framework" in n for n in d.notes)
    # The same OOM without the framework's note is the failure when the later step may be another
    # process's (a job of several processes whose lines carry no rank), or with no progress after it.
    oom = "RuntimeError: CUDA out of memory. Tried to allocate 20.00 MiB (GPU 0; 15.78 GiB total capacity)"
    several = f"world_size=2\nstep 1 loss 0.5\n{oom}\nstep 2 loss 0.4\n"
    assert Diagnoser().diagnose(several.encode()).verdict == "failure"
    skipped = f"step 1 loss 0.5\n{oom}\n| WARNING: ran out of memory on GPU #0, skipping batch\n"
    assert Diagnoser().diagnose(skipped.encode()).verdict == "failure"


def test_triton_without_a_c_compiler_is_a_compile_toolchain_failure() -> None:
    d = _diagnose("more6a-compile-nnunet-resenc-triton-no-c-compiler")
    assert d.primary is not None and d.primary.id == "torch-compile-failure/cpp-compile-error"


def test_c10d_name_resolution_retries_are_warnings() -> None:
    """'[W socket.cpp:558] [c10d] The IPv6 network addresses of (...) cannot be retrieved (gai error ...)'
    repeats while pods start; the run went on."""
    d = _diagnose("more6b-healthy-jobset-gai-error-while-pods-start")
    assert d.verdict == "healthy", d.primary


def test_an_exception_reraised_from_a_dataloader_worker_is_the_workers_exception() -> None:
    """The traceback ends in `data.reraise()` with a message that failed to print: still a worker's
    __getitem__ exception, on the rank that printed it. (The case's own class, LibsndfileError, names the
    decoder's failure: see the test of that rule; here an exception class that names nothing.)"""
    log = _case("more6b-multirank-salmonn-rank3-libsndfile-epoch2").log.replace("soundfile.LibsndfileError",
                                                                                 "mylib.DecodeError")
    d = Diagnoser().diagnose(Named("output.log", log.encode()))
    assert d.primary is not None
    assert (d.primary.id, d.primary.rank) == ("dataloader-worker-failure/getitem-exception", 3)


def test_a_gdb_backtrace_of_every_thread_is_evidence_of_a_hang() -> None:
    """`thread apply all bt` ("Thread 21 (Thread 0x7f09d23e7700 (LWP 107942)):") taken from a stuck run."""
    d = _diagnose("more5a-hang-torch-profiler-first-step-cupti-gdb")
    assert d.verdict == "hang" and d.primary is not None and d.primary.id == "training-hang/stalled-progress"


def test_ctrl_c_in_fairseqs_batch_queue_is_a_dataloader_wait() -> None:
    """fairseq's BufferedIterator hands the DataLoader's batches over a queue: interrupted there, the
    main loop was waiting for data (the frames as CPython prints them; fairseq/data/iterators.py)."""
    log = "\n".join([
        "2021-05-04 10:00:00 | INFO | train_inner | epoch 002:    100 / 2000 loss=4.1, ups=1.2",
        "^CTraceback (most recent call last):",
        '  File "/workspace/fairseq/fairseq_cli/train.py", line 274, in train',
        "    for i, samples in enumerate(progress):",
        '  File "/workspace/fairseq/fairseq/data/iterators.py", line 648, in __next__',
        "    item = self._queue.get(True)",
        '  File "/usr/lib/python3.8/queue.py", line 170, in get',
        "    self.not_empty.wait()",
        '  File "/usr/lib/python3.8/threading.py", line 302, in wait',
        "    waiter.acquire()",
        "KeyboardInterrupt",
    ])
    d = Diagnoser().diagnose(log.encode() + b"\n")
    assert d.primary is not None and d.primary.id == "dataloader-worker-failure/worker-hang"


def test_a_py_spy_dump_is_read_for_where_the_main_thread_waited() -> None:
    """py-spy's dump of rank 0's main thread: blocked on the batch queue the DataLoader feeds, so the
    data pipeline stopped delivering; the same dump in a collective stays a plain hang."""
    d = _diagnose("more4-fairseq-rank0-dataloader-queue-hang")
    assert d.primary is not None and d.primary.id == "dataloader-worker-failure/worker-hang"
    assert any("a stack dump shows it" in e.text for e in d.primary.evidence)
    collective = "\n".join([
        'Thread 0x7FA6E7C01740 (idle): "MainThread"',
        "    wait (torch/distributed/distributed_c10d.py:2501)",
        "    all_reduce (torch/distributed/distributed_c10d.py:2488)",
        "    train (train.py:88)",
        "    <module> (train.py:120)",
    ])
    d = Diagnoser().diagnose(collective.encode() + b"\n")
    assert d.primary is not None and d.primary.id == "training-hang/stalled-progress"


def test_a_faulthandler_dump_is_read_for_where_the_main_thread_waited() -> None:
    """faulthandler prints every thread, innermost frame first, the main thread last: the main thread's
    wait decides (here fairseq's batch queue), another thread's does not (format: CPython's faulthandler.c)."""
    def dump(*threads: list[str]) -> bytes:
        out = ["step 41 loss 0.52"]
        for i, frames in enumerate(threads):
            head = "Current thread" if i == len(threads) - 1 else "Thread"
            out += [f"{head} 0x00007f0c2d6b474{i} (most recent call first):", *frames, ""]
        return "\n".join(out).encode()

    queue = ['  File "/usr/lib/python3.8/threading.py", line 302 in wait',
             '  File "/usr/lib/python3.8/queue.py", line 170 in get',
             '  File "/workspace/fairseq/fairseq/data/iterators.py", line 648 in __next__',
             '  File "/workspace/fairseq/fairseq_cli/train.py", line 274 in train']
    collective = ['  File "/usr/lib/python3.10/site-packages/torch/distributed/distributed_c10d.py", line 2501 in all_reduce',
                  '  File "train.py", line 88 in train']
    d = Diagnoser().diagnose(dump(queue))
    assert d.primary is not None and d.primary.id == "dataloader-worker-failure/worker-hang"
    d = Diagnoser().diagnose(dump(queue, collective))  # the queue wait is another thread's
    assert d.primary is not None and d.primary.id == "training-hang/stalled-progress"


def test_averagemeter_running_averages_say_how_long_the_steps_waited_for_data() -> None:
    """pytorch/examples' ProgressMeter prints running averages in parentheses: after 200 iterations
    they say 95 % of each step waited for data, though the line's own figures (0.001 s) do not; the
    start-up's iteration 0 is left out, so a slow first batch alone is no starvation."""
    d = _diagnose("more5a-starvation-simplenet-imagenet-first-batches")
    assert d.primary is not None and d.primary.id == "input-pipeline-starvation/slow-input"
    head = "Epoch: [0][  0/5005]\tTime 203.582 (203.582)\tData 196.425 (196.425)\tLoss 6.9348 (6.9348)"
    later = "Epoch: [0][200/5005]\tTime 0.550 ( 1.560)\tData 0.001 ( 0.980)\tLoss 6.7401 (6.8409)"
    assert Diagnoser().diagnose(f"{head}\n{later}\n".encode()).verdict == "healthy"
    # the same two lines with a pipeline that stayed slow: starvation
    slow = later.replace("( 1.560)", "(12.315)").replace("( 0.980)", "(11.761)")
    starved = Diagnoser().diagnose(f"{head}\n{slow}\n".encode())
    assert starved.primary is not None and starved.primary.id == "input-pipeline-starvation/slow-input"


def test_an_ignored_exception_cut_off_by_the_log_is_no_hang() -> None:
    """Python printed it under "Exception ignored in" and went on; that the excerpt ends inside it
    does not make the DataLoader's destructor a stuck process."""
    log = "\n".join([
        "step 120 loss 0.41",
        "Exception ignored in: <function _MultiProcessingDataLoaderIter.__del__ at 0x7f0c8c1b5e50>",
        "Traceback (most recent call last):",
        '  File "/usr/lib/python3.10/site-packages/torch/utils/data/dataloader.py", line 1479, in __del__',
        "    self._shutdown_workers()",
        '  File "/usr/lib/python3.10/site-packages/torch/utils/data/dataloader.py", line 1443, in _shutdown_workers',
        "    self.worker_result_queue.get()",
    ])
    d = Diagnoser().diagnose(log.encode() + b"\n")
    assert d.primary is None or d.primary.id != "dataloader-worker-failure/worker-hang", d.primary


@pytest.mark.parametrize(("case_id", "cause", "rank"), [
    # NCCL's own hang warning names the rank around which the collective calls differ
    ("more7c-lightning-nccl-mismatch-around-rank1", "rank-desync/mismatched-collectives", 1),
    # Megatron core's NaN check before the data-parallel reduction, on the rank that printed it
    ("more7c-nemo-dapt-rank2-nan-grad-norm", "nan-loss/nonfinite-loss", 2),
])
def test_messages_that_name_the_rank(case_id: str, cause: str, rank: int) -> None:
    d = _diagnose(case_id)
    assert d.primary is not None and (d.primary.id, d.primary.rank) == (cause, rank)


def test_monitored_barrier_names_the_rank_that_did_not_arrive_not_the_monitor() -> None:
    """Rank 0 says "Rank 2 failed to pass monitoredBarrier"; ranks 1 and 3 say "check rank 0 logs for
    faulty rank": rank 0 is where to read, rank 2 is the one."""
    d = _diagnose("more7c-cosyvoice-rank2-monitored-barrier-uneven")
    assert d.primary is not None and d.primary.rank == 2


def test_srun_names_the_task_that_exited_on_its_own() -> None:
    from trainmedic.logs.attribution import launcher_rank

    assert launcher_rank("srun: error: node1: task 5: Exited with exit code 1") == 5
    assert launcher_rank("srun: error: node3: task 5: Killed") == 5  # the task the kernel killed
    assert launcher_rank("srun: error: node3: task 2: Segmentation fault (core dumped)") == 2
    assert launcher_rank("srun: error: node1: tasks 3,7: Killed") is None
    assert launcher_rank("srun: error: node1: task 6: Terminated") is None  # the step's teardown of the others


def test_the_quoted_raise_of_recvfds_is_fd_exhaustion_when_the_log_is_cut_before_the_error() -> None:
    d = _diagnose("more7a-dlw-fd-ancdata-speechbrain-32-workers")
    assert d.primary is not None and d.primary.id == "dataloader-worker-failure/fd-exhaustion"


def test_a_helper_thread_that_died_after_the_run_finished_ended_nothing() -> None:
    """YOLOX says "Training of experiment is done", then the pin_memory thread's "Exception in thread
    Thread-1:" traceback: the main thread had finished. The same traceback with no such line is a failure."""
    d = _diagnose("more7a-healthy-yolox-pin-memory-connreset-after-done")
    assert d.verdict == "healthy", d.primary
    log = _case("more7a-healthy-yolox-pin-memory-connreset-after-done").log
    unfinished = "\n".join(ln for ln in log.splitlines() if "is done" not in ln)
    assert Diagnoser().diagnose(unfinished.encode()).verdict == "failure"


def test_a_task_that_exited_with_its_own_code_before_the_step_was_cancelled_is_the_failure() -> None:
    """srun: "task 5: Exited with exit code 1", then the step "CANCELLED" (no reason) and every other
    task Killed: srun tore the step down after task 5 failed; the scheduler did not stop the job."""
    d = _diagnose("more7c-deit-srun-task5-exit1-others-killed")
    assert d.primary is not None and (d.primary.id, d.primary.rank) == ("unclassified-failure/process-exited", 5)


def test_a_log_that_ends_waiting_in_the_store_barrier_is_a_hang_at_launch() -> None:
    """torch's _store_based_barrier logs "Waiting in store based barrier ... (world_size=8, worker_count=7,
    ...)" every 10 s: a log that ends there hung at launch. The same lines before the group formed and
    training went on are a normal start."""
    d = _diagnose("more7b-hang-openllama-store-barrier-wandb")
    assert d.verdict == "hang" and d.primary is not None and d.primary.id == "training-hang/stalled-progress"
    wait = ("I0510 07:28:04.417845 139863945226048 distributed_c10d.py:337] Waiting in store based barrier to "
            "initialize process group for rank: {r}, key: store_based_barrier_key:1 (world_size=2, "
            "worker_count=1, timeout=0:30:00)")
    started = "\n".join([wait.format(r=0),
                         "I0510 07:28:06.417845 139863945226048 distributed_c10d.py:368] Rank 0: Completed "
                         "store-based barrier for key:store_based_barrier_key:1 with 2 nodes.",
                         *(f"step {i} loss 0.5" for i in range(1, 12)), "Training completed."])
    assert Diagnoser().diagnose(started.encode() + b"\n").verdict == "healthy"
    stuck = Diagnoser().diagnose((wait.format(r=0) + "\n") .encode())
    assert stuck.verdict == "hang" and stuck.primary is not None and stuck.primary.rank == 1


def test_nccl_info_lines_are_no_errors_and_nvls_cuda_failures_are_the_fabric() -> None:
    """"NCCL INFO NET/Plugin: Failed to find ncclNetPlugin_v8 symbol." is NCCL's INFO level, below a
    warning; a CUDA failure inside NCCL's NVLS transport is the NVSwitch fabric not ready."""
    d = _diagnose("more8a-healthy-nccl-plugin-v8-symbol-info")
    assert d.verdict == "healthy", d.primary
    d = _diagnose("more8a-nccl-976-nvls-invalid-argument-fm-restart")
    assert d.primary is not None and d.primary.id == "nvlink-error/fabric-not-ready"


def test_a_destructor_interrupted_while_it_waited_is_the_hang_and_a_childs_header_is_not_an_exception() -> None:
    # Ctrl-C on a run whose DataLoader had deadlocked: Python prints the iterator's __del__ traceback,
    # blocked on the worker queue's lock, ending in KeyboardInterrupt, with another process's
    # "Process Process-19:" header printed into it; then the main loop's traceback, cut in the paste.
    d = _diagnose("more6c-detectron-pytorch-step553061-loader-deadlock")
    assert d.primary is not None and d.primary.id == "dataloader-worker-failure/worker-hang"
    assert any("_shutdown_workers" in e.text or "__del__" in e.text or "put" in e.text for e in d.primary.evidence)


def test_a_destructor_that_raised_and_was_ignored_is_still_no_failure_of_its_own() -> None:
    """Near-miss: the same destructor traceback ending in an error (not an interrupt) is Python's ignored
    exception at shutdown, and says nothing about a hang."""
    log = (
        "epoch 3 step 120 loss 0.412\n"
        "Exception ignored in: <bound method _DataLoaderIter.__del__ of <torch.utils.data.dataloader._DataLoaderIter"
        " object at 0x7f33d805aa20>>\n"
        "Traceback (most recent call last):\n"
        '  File "/usr/lib/python3.6/site-packages/torch/utils/data/dataloader.py", line 349, in __del__\n'
        "Process Process-19:\n"
        "    self._shutdown_workers()\n"
        '  File "/usr/lib/python3.6/site-packages/torch/utils/data/dataloader.py", line 340, in _shutdown_workers\n'
        "    self.worker_result_queue.put(None)\n"
        '  File "/usr/lib/python3.6/multiprocessing/queues.py", line 346, in put\n'
        "    with self._wlock:\n"
        "ValueError: semaphore or lock released too many times\n"
        "epoch 3 step 130 loss 0.405\n"
        "Training completed.\n"
    )
    d = Diagnoser().diagnose(Named("output.log", log.encode()))
    assert d.verdict == "healthy", d.primary


def test_the_watchdogs_own_stack_frame_names_a_timeout_whose_message_was_cut() -> None:
    # The paste keeps only the C++ stack of the watchdog's exception (checkTimeout, ncclCommWatchdog),
    # not its "Watchdog caught collective operation timeout" line.
    d = _diagnose("more7c-particleflow-rank0-end-of-epoch-tests-timeout")
    assert d.primary is not None and d.primary.id == "nccl-timeout/watchdog-timeout"
    assert any("checkTimeout" in e.text for e in d.primary.evidence)


@pytest.mark.parametrize(("case_id", "cause", "rank"), [
    # cut off inside HF's main_process_first: the rank waited there for rank 0
    ("more9b-medicalgpt-rank0-tokenize-30min-store-timeout", "nccl-timeout/store-barrier-timeout", 0),
    # c10d's "waitForInput: socket ... timed out after 1800000ms", a warning-level line, is the store timing out
    ("more9b-axolotl-rank0-tokenize-29min-rank1-store-socket-timeout", "nccl-timeout/store-barrier-timeout", 0),
    # two ranks' tracebacks interleaved: a frame glued onto a line is still a frame, not the exception
    ("more9b-accelerate-rank0-single-gpu-eval-30min-broadcast-timeout", "nccl-timeout/watchdog-timeout", 0),
    # rank 2's error glued after rank 0's progress bar is rank 2's; its message wrapped by the paste
    ("more9b-nanotron-rank0-grouping-texts-10min-allreduce-timeout", "nccl-timeout/watchdog-timeout", 0),
])
def test_a_rank_that_waited_for_another_is_read_through_the_pastes_damage(case_id: str, cause: str, rank: int) -> None:
    d = _diagnose(case_id)
    assert d.primary is not None and d.primary.id == cause and d.primary.rank == rank


def test_a_launchers_teardown_line_run_into_an_exception_is_not_the_exception() -> None:
    """DeepSpeed's "Killing subprocess N" right after the exception line joins its message: the exception
    ("tensors must be 2-D", ZeRO-3's placeholder weight) is the finding, not the launcher's teardown."""
    d = _diagnose("more6c-ds-stage3-test-partitioned-linear-2d")
    assert d.primary is not None and d.primary.id == "deepspeed-failure/zero3-params-not-gathered"


def test_the_dataloaders_own_wrapper_decides_an_ambiguous_line_it_carries() -> None:
    """"CUDA error: initialization error" alone may be a broken driver; inside "Caught RuntimeError in
    DataLoader worker process 0" it is CUDA used in a forked worker."""
    d = _diagnose("more10b-cuda-init-error-pyg-neighborloader-gpu")
    assert d.primary is not None and d.primary.id == "dataloader-worker-failure/cuda-in-forked-worker"
    assert "cannot say why" not in d.primary.why


@pytest.mark.parametrize("case_id", [
    "more7b-hang-lightning-ddp-checkpoint-pystack",  # pystack's frames, pasted without a header
    "more7b-hang-hf-trainer-eval-nested-gather-stack",  # a periodic stack printer that indents nothing
])
def test_a_stack_with_neither_header_nor_exception_is_a_live_process_not_an_error(case_id: str) -> None:
    """Python writes 'Traceback (most recent call last):' above every exception's frames and the
    exception below them; frames with neither come from a stack printer (traceback.print_stack,
    pystack, a hang watchdog) looking at a process that was alive: a stall, not an uncaught exception."""
    d = _diagnose(case_id)
    assert d.verdict == "hang" and d.primary is not None and d.primary.id == "training-hang/stalled-progress"
    assert any("a stack dump, no error" in e.text for e in d.primary.evidence)


def test_a_traceback_cut_before_its_exception_is_still_an_exception() -> None:
    """Near-miss: with Python's header the frames are an exception's, whose line the log lost; and a
    stack printed without indentation still ends in its exception when it has one."""
    frames = ['  File "train.py", line 88, in train', "    loss = model(batch)",
              '  File "model.py", line 12, in forward', "    x = self.fc(x)"]
    d = Diagnoser().diagnose("\n".join(["step 3 loss 0.5", "Traceback (most recent call last):", *frames]).encode())
    assert d.verdict == "failure" and d.primary is not None
    assert d.primary.id == "unclassified-failure/uncaught-exception"
    bare = ["Traceback (most recent call last):", 'File "train.py", line 88, in train', "loss = model(batch)",
            'File "model.py", line 12, in forward', "x = self.fc(x)", "ZeroDivisionError: division by zero"]
    d = Diagnoser().diagnose("\n".join(bare).encode() + b"\n")
    assert d.verdict == "failure" and d.primary is not None
    assert any("ZeroDivisionError" in e.text for e in d.primary.evidence), d.primary.evidence


def test_horovod_shutdown_is_an_echo_and_mpirun_names_the_first_rank_to_exit() -> None:
    """Rank 1's "Horovod has been shut down" only says another rank raised first; mpirun's "The first
    process to do so was: Process name: [[50371,1],0]" names rank 0 (the last number is the rank)."""
    d = _diagnose("more7c-uniter-horovod-rank0-oom-shutdown")
    assert d.primary is not None and d.primary.rank == 0
    assert d.primary.id != "unclassified-failure/uncaught-exception"
    assert any(c.id == "peer-connection-lost/horovod-shut-down" and c.rank == 1 for c in d.collateral), d.collateral


def test_an_exception_message_under_its_prefixed_header_is_that_ranks() -> None:
    """DeepSpeed raises ZeRORuntimeException with a message that starts on the next line; the launcher
    prefixed only the header ("[rank0]: ...ZeRORuntimeException:"), so the matched line is rank 0's."""
    d = _diagnose("fw-ds-qwen-vl-dp-4-to-8")
    assert d.primary is not None and d.primary.rank == 0
    # near-miss: a prefixed line that is a sentence, not an exception header, lends no rank
    log = (b"[rank1]: Epoch 3 summary follows:\n"
           b"The checkpoint being loaded used a DP world size of 4 but the current world size is 8.\n")
    d = Diagnoser().diagnose(log)
    assert d.primary is not None and d.primary.rank is None


def test_a_launcher_line_a_logging_handler_reflowed_still_names_the_rank_that_exited() -> None:
    """accelerate's rich handler wraps torch elastic's "failed (exitcode: 1) local_rank: 5 (pid: 22) of
    binary: ..." so that no fingerprint matches it (format: torch/distributed/elastic/multiprocessing/
    api.py); its words still name the rank that exited on its own while the others got SIGTERM."""
    sigterms = [f" WARNING  Sending process {p} closing signal SIGTERM         api.py:699" for p in (14, 15, 16)]
    failed = [" ERROR    failed (exitcode: 1) local_rank: 5 (pid: 22) of  api.py:673", " binary: /opt/conda/bin/python "]
    d = Diagnoser().diagnose("\n".join([*sigterms, *failed]).encode() + b"\n")
    assert d.primary is not None and d.primary.rank == 5, d.primary
    d = Diagnoser().diagnose("\n".join(sigterms).encode() + b"\n")  # near-miss: SIGTERM names no culprit
    assert d.primary is None or d.primary.rank != 5


def test_an_error_after_which_the_step_rose_did_not_end_the_run() -> None:
    """FreeVC printed a worker segfault near an epoch's end and went on to the next epoch: the error
    did not end the run. Near-misses: a scheduler's cancel that Lightning's SIGTERM bypass outlived by
    a few steps still ended it; the same segfault with no later rise of the step is the failure."""
    d = _diagnose("more7b-healthy-freevc-worker-segfault-epoch-continues")
    assert d.verdict == "healthy", d.primary
    assert any("training went on after it" in n for n in d.notes)
    d = _diagnose("mr-lightning-slurm-time-limit")
    assert d.primary is not None and d.primary.id == "scheduler-termination/time-limit"
    log = ("INFO:freevc:Train Epoch: 1515 [70%]\nERROR: Unexpected segmentation fault encountered in worker.\n"
           "INFO:freevc:Train Epoch: 1515 [70%]\n")
    d = Diagnoser().diagnose(log.encode())
    assert d.primary is not None and d.primary.id == "dataloader-worker-failure/worker-segfault"


def test_later_epochs_after_a_worker_error_and_a_destructors_glued_note_are_a_run_that_went_on() -> None:
    """pytorch-ts: a worker killed by SIGABRT, then epochs 7, 8 and 9 of 10 each complete their bar
    (49/49; the epoch rises in the bar's postfix), and the iterator's destructor's "Exception ignored
    in:" is glued after the last bar. The bars are the run going on, not the exception's message."""
    d = _diagnose("more12b-ok-pytorch-ts-worker-aborted-epochs-continue")
    assert d.verdict == "healthy", d.primary
    [scan] = Diagnoser(parallel=False).scan(Named("a.log", _case("more12b-ok-pytorch-ts-worker-aborted-epochs-continue")
                                                  .log.encode()))
    assert scan.tracebacks[0].exceptions[-1].endswith("is killed by signal: Aborted.")
    assert scan.tracebacks[1].ignored
    # near-miss: the same bar at the same epoch after the error is no progress
    log = ("RuntimeError: DataLoader worker (pid 39662) is killed by signal: Aborted.\n"
           "100%|##########| 49/49 [00:08<00:00,  5.65it/s, epoch=7/10, avg_loss=3.96]\n")
    head = "100%|##########| 49/49 [00:08<00:00,  5.65it/s, epoch=7/10, avg_loss=3.96]\n"
    d = Diagnoser().diagnose((head + log).encode())
    assert d.verdict == "failure"


@pytest.mark.parametrize("case_id", [
    "more11a-megatron-bridge-nemotronh-exit-hang-slurm-time-limit",  # "[after training is done]", then the limit
    "more11a-megatron-bridge-qwen3-30b-exit-hang-nsys-slurm-time-limit",
])
def test_a_time_limit_after_training_said_it_finished_is_a_process_that_never_exited(case_id: str) -> None:
    d = _diagnose(case_id)
    assert d.verdict == "hang" and d.primary is not None and d.primary.id == "training-hang/exit-hang"
    assert any("said training finished" in e.text for e in d.primary.evidence)


def test_a_time_limit_before_the_finish_is_the_time_limit() -> None:
    """Near-miss: the limit ran out mid-training (the log's "training is done" never came)."""
    log = ("iteration       49/      50 | consumed samples:         9408\n"
           "slurmstepd: error: *** STEP 1250740.1 ON node1 CANCELLED AT 2025-11-24T22:14:50 DUE TO TIME LIMIT ***\n")
    d = Diagnoser().diagnose(log.encode())
    assert d.primary is not None and d.primary.id == "scheduler-termination/time-limit" and d.verdict == "failure"


def test_the_watchdogs_teardown_line_is_its_own_echo_not_a_ranks_error() -> None:
    """torch 2.x prints "[Rank 3] To avoid data inconsistency, we are taking the entire process down."
    after the watchdog's timeout (WorkNCCL::handleException): the timeout's teardown, not rank 3's own
    failure. The specific reading beats the words every kind prints: a remote error's lines outweigh
    the generic "failed or timed out" and teardown lines around them."""
    d = _diagnose("more11a-litgpt-slurm-resume-broadcast-seq1-watchdog")
    assert d.primary is not None and d.primary.id == "nccl-timeout/watchdog-timeout"
    d = _diagnose("more6b-peer-llamafactory-worker-recv-broken-pipe-nccl2215")
    assert d.primary is not None and d.primary.id == "peer-connection-lost/nccl-remote-error"


def test_a_process_abort_whose_what_is_the_timeout_is_the_timeouts_echo() -> None:
    """"terminate called after throwing an instance of 'c10::DistBackendError'" with the watchdog's
    timeout as its "what():" on the next line. Near-miss: the same abort whose what() is an illegal
    memory access is that error."""
    d = _diagnose("more11a-megatron-reduce-scatter-882s-watchdog-terminate")
    assert d.primary is not None and d.primary.id == "nccl-timeout/watchdog-timeout"
    log = ("terminate called after throwing an instance of 'c10::Error'\n"
           "  what():  CUDA error: an illegal memory access was encountered\n")
    d = Diagnoser().diagnose(log.encode())
    assert d.primary is not None and d.primary.id == "cuda-illegal-memory-access/illegal-address"


@pytest.mark.parametrize(("case_id", "rank"), [
    ("more14b-hang-horovod-avg-loss-rank1-missing", 1),  # the warning, then "allreduce.avg_loss [missing ranks: 1]"
    ("more14b-hang-horovod-docker-broadcast-rank1-missing", 1),  # printed by rank 0 ("[1,0]<stderr>:")
])
def test_horovods_stall_warning_is_a_hang_of_the_rank_it_says_is_missing(case_id: str, rank: int) -> None:
    """Horovod's stall inspector: some ranks submitted a collective and waited over a minute for the
    rest; the per-tensor lines name the missing ranks, which are where it stopped (not the rank whose
    output printed it)."""
    d = _diagnose(case_id)
    assert d.verdict == "hang" and d.primary is not None and d.primary.id == "training-hang/stalled-progress"
    assert d.primary.rank == rank


@pytest.mark.parametrize("case_id", [
    "more14b-ok-dataloader-nfs-tempdir-finalizer-errors",
    "more14b-ok-dlio-epoch-boundary-finalizer-traceback",
])
def test_a_traceback_multiprocessings_finalizers_caught_and_printed_is_no_failure(case_id: str) -> None:
    """multiprocessing/util.py _run_finalizers catches what a finalizer raises and prints it
    (`traceback.print_exc()`): removing a temporary directory on NFS fails, the run goes on. Near-miss:
    the same exception raised from the training script's own frames ended it."""
    d = _diagnose(case_id)
    assert d.verdict == "healthy", d.primary
    own = ("Traceback (most recent call last):\n"
           '  File "train.py", line 40, in <module>\n    shutil.rmtree(tmp)\n'
           '  File "/usr/lib64/python3.9/shutil.py", line 688, in _rmtree_safe_fd\n    os.unlink(entry.name, dir_fd=topfd)\n'
           "OSError: [Errno 16] Device or resource busy: '.nfs8b2479d03841bd4400015e16'\n")
    assert Diagnoser().diagnose(own.encode()).verdict == "failure"


def test_timeouts_at_one_sequence_number_in_different_collectives_are_a_mismatch() -> None:
    """Ranks 1 and 2 timed out in an ALLREDUCE at SeqNum 4084, rank 3 in a BROADCAST at the same
    SeqNum: they were not running the same collective (rank 3 took another path), which is the code,
    not a slow rank. Near-miss: the same timeouts all in the ALLREDUCE stay a collective timeout."""
    d = _diagnose("more14b-dist-ddp-rank3-broadcast-vs-allreduce-desync")
    assert d.primary is not None and d.primary.id == "rank-desync/mismatched-collectives" and d.primary.rank == 3
    line = ("[rank{r}]:[E ProcessGroupNCCL.cpp:563] [Rank {r}] Watchdog caught collective operation timeout: "
            "WorkNCCL(SeqNum=4084, OpType=ALLREDUCE, NumelIn=4821568, NumelOut=4821568, Timeout(ms)=600000) "
            "ran for 600077 milliseconds before timing out.")
    d = Diagnoser().diagnose("\n".join(line.format(r=r) for r in (1, 2, 3)).encode() + b"\n")
    assert d.primary is not None and d.primary.id == "nccl-timeout/watchdog-timeout"
    # near-miss: one sequence number in two process groups is two different collectives' numbers
    groups = ("[rank{r}]:[E ProcessGroupNCCL.cpp:1595] [PG {g} Rank {r}] Watchdog caught collective operation "
              "timeout: WorkNCCL(SeqNum=10, OpType={op}, NumelIn=8, NumelOut=8, Timeout(ms)=600000) ran for 600077 "
              "milliseconds before timing out.")
    log = "\n".join(groups.format(r=r, g=g, op=op) for r, g, op in ((0, 1, "ALLREDUCE"), (1, 1, "ALLREDUCE"),
                                                                    (2, 2, "BROADCAST"), (3, 2, "BROADCAST")))
    d = Diagnoser().diagnose(log.encode() + b"\n")
    assert d.primary is not None and d.primary.id == "nccl-timeout/watchdog-timeout"


@pytest.mark.parametrize("case_id", [
    "more16b-ok-wandb-filestream-thread-traceback-training-continues",  # the tracker's file-stream thread
    "more16b-ok-lightning-wandb-broken-pipe-threads-after-run-synced",  # after "finish... (success)"
])
def test_an_experiment_trackers_thread_dying_ends_no_training(case_id: str) -> None:
    """wandb uploads from background threads; one dying mid-run or after wandb.finish() reported the
    script's success ends nothing training waits on."""
    assert _diagnose(case_id).verdict == "healthy"


def test_a_training_thread_dying_or_a_failed_finish_is_still_read() -> None:
    """Near-misses: wandb reporting the script's failure ("(failed 1)") is no finish; a DataLoader's
    pin-memory thread dying is no tracker's."""
    failed = ("wandb: Waiting for W&B process to finish... (failed 1). Press Control-C to abort syncing.\n"
              "Exception in thread IntMsgThr:\nTraceback (most recent call last):\n"
              '  File "/usr/lib/python3.10/threading.py", line 1016, in _bootstrap_inner\n    self.run()\n'
              "BrokenPipeError: [Errno 32] Broken pipe\n")
    assert Diagnoser().diagnose(failed.encode()).verdict == "failure"
    pin = ("Exception in thread Thread-3:\nTraceback (most recent call last):\n"
           '  File "/usr/lib/python3.10/threading.py", line 1016, in _bootstrap_inner\n    self.run()\n'
           '  File "/opt/venv/lib/python3.10/site-packages/torch/utils/data/_utils/pin_memory.py", line 49, in '
           "_pin_memory_loop\n    do_one_step()\n"
           "RuntimeError: Pin memory thread exited unexpectedly\n")
    assert Diagnoser().diagnose(pin.encode()).verdict == "failure"


@pytest.mark.parametrize("case_id", [
    "more12b-ok-deeplabcut-enqueue-cancelled-after-max-iter",  # the message continues on a tab
    "more14b-ok-deeplabcut-enqueue-cancelled-after-training",  # then a chained, cut traceback
])
def test_a_helper_thread_whose_work_was_cancelled_ended_nothing(case_id: str) -> None:
    """A feeder thread's enqueue is cancelled when its session closes: a CancelledError in a thread is
    how the program stopped its helper, not a failure; the chain line after it is no error line."""
    d = _diagnose(case_id)
    assert d.verdict == "healthy", d.primary


def test_a_cancelled_main_thread_or_a_thread_that_failed_is_still_read() -> None:
    """Near-misses: a CancelledError outside a thread (asyncio's, ending the program) is a failure; a
    thread that died of another error, chained to the cancellation, is read as before when the
    thread's own exception is the failure."""
    main = ("Traceback (most recent call last):\n  File \"serve.py\", line 9, in <module>\n    asyncio.run(main())\n"
            "asyncio.exceptions.CancelledError\n")
    assert Diagnoser().diagnose(main.encode()).verdict == "failure"
    thread = ("Exception in thread Thread-2:\nTraceback (most recent call last):\n"
              '  File "/usr/lib/python3.10/threading.py", line 1016, in _bootstrap_inner\n    self.run()\n'
              '  File "/opt/app/feeder.py", line 40, in run\n    self.queue.put(batch)\n'
              "OSError: [Errno 28] No space left on device\n")
    d = Diagnoser().diagnose(thread.encode())
    assert d.verdict == "failure" and d.primary is not None


def test_a_chain_line_alone_is_no_error_line() -> None:
    """"During handling of the above exception, another exception occurred:" links two tracebacks;
    their exception lines say what failed, so the link is never quoted as an error of its own."""
    log = ("step 10 loss 0.5\nDuring handling of the above exception, another exception occurred:\n")
    assert Diagnoser().diagnose(log.encode()).verdict == "healthy"


def test_a_precursors_error_sounding_advice_is_not_an_error_line() -> None:
    """DeepSpeed ZeRO-3's "pytorch allocator cache flushes since last step ... If you are unable to make
    the cache flushes go away ..." is a warning of memory pressure (a precursor), not the failure
    no signature knows. Near-miss: an error after it is still a failure, read first as the OOM it
    foretold."""
    d = _diagnose("more16b-ok-peft-flan-t5-zero3-allocator-cache-flushes-warning")
    assert d.verdict == "healthy", d.primary
    warn = _case("more16b-ok-peft-flan-t5-zero3-allocator-cache-flushes-warning").log.rstrip("\n")
    d = Diagnoser().diagnose(f"{warn}\nRuntimeError: CUDA error: unspecified launch failure in step 40\n".encode())
    assert d.verdict == "failure" and d.primary is not None


def test_a_frame_quoted_as_a_location_then_a_log_record_is_no_exception() -> None:
    """Inductor's "skipping cudagraphs due to cpu device (cat_1). Found from :" quotes one frame of the
    user's code; the next record is a glog warning ("W0907 ... failed while executing ..."), not the
    frame's exception. Near-miss: a quoted frame ending in a real exception line is still a failure."""
    d = _diagnose("more16b-ok-ultralytics-compile-skipping-cudagraphs-cpu-device")
    assert d.verdict == "healthy", d.primary
    quoted = ('  File "/data/coco.py", line 229, in loadImgs\n    return [self.imgs[id] for id in ids]\n'
              '  File "/data/coco.py", line 229, in <listcomp>\n    return [self.imgs[id] for id in ids]\n'
              "KeyError: '2'\n")
    d = Diagnoser().diagnose(quoted.encode())
    assert d.verdict == "failure" and d.primary is not None and "KeyError" in d.primary.evidence[0].text


def test_a_worker_exception_re_raised_with_its_traceback_as_message_is_read_whole() -> None:
    """torch 0.4-1.0 re-raised a DataLoader worker's exception as "RuntimeError: Traceback (most recent
    call last):" with the worker's frames and exception below: one traceback, whose specific message
    (a shared-memory segment it could not write) beats the generic worker frame."""
    d = _diagnose("more16b-k8s-kubeflow-notebook-fastai-unable-to-write-torch-shm")
    assert d.primary is not None and d.primary.id == "dataloader-worker-failure/shm-exhausted"
    [scan] = Diagnoser(parallel=False).scan(
        Named("a.log", _case("more16b-k8s-kubeflow-notebook-fastai-unable-to-write-torch-shm").log.encode()))
    assert len(scan.tracebacks) == 1 and scan.tracebacks[0].final.startswith("RuntimeError: unable to write")


def test_nccl_errors_at_startup_that_training_ran_past_end_nothing() -> None:
    """Azure ML: NCCL's remote allocator reports a closed connection and "Cuda failure 'out of memory'"
    at bootstrap, then pytorch/examples-style lines ("Train Epoch: 1 [2700/246000 (18%)]") show the
    step rising: the errors and the collateral they brought ended nothing. Near-miss: the same errors
    with no progress after them are the failure."""
    case = _case("more16b-ok-azureml-nccl-rem-allocator-failed-training-continues")
    assert Diagnoser().diagnose(case.log.encode()).verdict == "healthy"
    head = case.log.split("Train Epoch")[0]
    assert Diagnoser().diagnose(head.encode()).verdict == "failure"


def test_among_ranks_that_exited_on_their_own_the_summarys_root_cause_leads() -> None:
    """torchrun's ChildFailedError summary lists ranks 0 and 1 with exit code 1; its "Root Cause (first
    observed failure)" section holds rank 0. Near-miss: with both records under "Failures:" nothing
    says which came first."""
    log = _case("more19a-dist-minigpt4-torchrun-root-cause-rank0-exit1").log
    d = Diagnoser().diagnose(log.encode())
    assert d.primary is not None and d.primary.rank == 0
    both = log.replace("Root Cause (first observed failure):", "------------------------------------------------------------")
    d = Diagnoser().diagnose(both.encode())
    assert d.primary is not None and d.primary.rank is None


def test_fewer_lightning_members_than_its_world_size_then_silence_is_a_hang_at_launch() -> None:
    """Lightning prints "MEMBER: k/N" as each process joins; the log ending with fewer members than N
    is positive evidence of a hang: the others were never started (a SLURM job run without srun)."""
    d = _diagnose("more4-lightning-multinode-no-srun-init-freeze")
    assert d.verdict == "hang" and d.primary is not None
    assert "4 of 8 came" in d.primary.why and "srun" in d.primary.why


@pytest.mark.parametrize("case_id", [
    "more33m-threestudio-4xv100-if-stuck-initializing-distributed",  # 4 of 4 joined, seeds interleaved
    "more33m-vista-torchrun-2gpu-frozen-initializing-distributed",  # 2 of 2 under torchrun
])
def test_every_lightning_member_joining_and_no_group_forming_is_a_hang_at_launch(case_id: str) -> None:
    """All N members announced themselves, and rank 0 never said the group formed ("All distributed
    processes registered", printed once init_process_group returns): they did not reach one another."""
    d = _diagnose(case_id)
    assert d.verdict == "hang" and d.primary is not None and d.primary.id == "training-hang/stalled-progress"
    assert "before rank 0 said it formed" in d.primary.why


def test_a_lightning_group_that_formed_or_trained_on_is_no_hang_at_launch() -> None:
    """Near-misses: the group formed (rank 0 said so) and the log just ends after, or the run trained."""
    joined = "".join(f"Initializing distributed: GLOBAL_RANK: {r}, MEMBER: {r + 1}/2\n" for r in range(2))
    formed = joined + ("-" * 40 + "\ndistributed_backend=nccl\nAll distributed processes registered. "
                       "Starting with 2 processes\n" + "-" * 40 + "\n")
    assert Diagnoser().diagnose(formed.encode()).verdict == "healthy"
    assert Diagnoser().diagnose(joined.encode()).verdict == "hang"
    one = "Initializing distributed: GLOBAL_RANK: 0, MEMBER: 1/2\n"
    went_on = one + "".join(f"Epoch 0: {i}/100 [00:0{i}<00:10, 9.1it/s, loss=0.5]\n" for i in range(1, 8))
    assert Diagnoser().diagnose(went_on.encode()).verdict == "healthy"


@pytest.mark.parametrize("case_id", [
    "more21a-reid-baseline-pin-memory-thread-exited-on-reset",  # the thread's unpack, then the reset
    "more21a-lightning-pin-memory-thread-exited-epoch-reset",  # the reset alone, under Lightning
])
def test_a_pin_memory_thread_dying_at_a_persistent_reset_is_the_torch_17_bug(case_id: str) -> None:
    d = _diagnose(case_id)
    assert d.primary is not None and d.primary.id == "dataloader-worker-failure/pin-memory-persistent-workers-resume"


def test_a_pin_memory_thread_dying_of_its_own_error_is_read_by_that_error() -> None:
    """Near-miss: the same RuntimeError after the thread died opening a vanished shm segment (torch 2.x,
    no reset, no unpack) is not the 1.7 bug."""
    d = _diagnose("dlw-shm-enoent-pin-memory-mediswarm")
    assert d.primary is not None and d.primary.id != "dataloader-worker-failure/pin-memory-persistent-workers-resume"


def test_lightnings_observer_names_the_child_sigkill_ended_and_its_rank() -> None:
    """Lightning 2.x reports a child's end under its rank ("[rank: 1] Child process ... terminated with
    code -9"): SIGKILL, on rank 1. Near-miss: code -6 is an abort, no kill."""
    d = _diagnose("more21a-autoware-streampetr-cow-annotations-rank1-sigkill")
    assert d.primary is not None and _names(d, "host-oom/sigkill") and d.primary.rank == 1
    abort = "[rank: 2] Child process with PID 13117 terminated with code -6. Forcefully terminating all other processes\n"
    d = Diagnoser().diagnose(abort.encode())
    assert d.primary is not None and d.primary.id not in ("host-oom/sigkill", "host-oom/oom-killer")


def test_ranks_timing_out_together_in_different_collectives_without_sequence_numbers() -> None:
    """torch <= 1.9 printed no SeqNum: ranks whose first timeouts name different collectives (rank 0 in
    an ALLREDUCE, the rest in a BROADCAST) were not in the same one; rank 0 took the other path.
    Near-miss: every rank in the same collective is a plain timeout."""
    d = _diagnose("more22a-accelerate-epoch-end-rank0-allreduce-others-broadcast")
    assert d.primary is not None and d.primary.id == "rank-desync/mismatched-collectives" and d.primary.rank == 0
    same = "".join(
        f"[E ProcessGroupNCCL.cpp:566] [Rank {r}] Watchdog caught collective operation timeout: "
        f"WorkNCCL(OpType=BROADCAST, Timeout(ms)=1800000) ran for 180114{r} milliseconds before timing out.\n"
        for r in range(4))
    d = Diagnoser().diagnose(same.encode())
    assert d.primary is not None and d.primary.id == "nccl-timeout/watchdog-timeout"


def test_a_launcher_that_raised_something_of_its_own_failed_itself() -> None:
    """accelerate's launcher calling .lower() on a missing config value raised AttributeError from its own
    code before any worker ran: not an echo of a worker's failure. Near-miss: the same launcher frames
    ending in CalledProcessError report a worker that exited (its error elsewhere)."""
    d = _diagnose("more23a-diffusers-accelerate-launch-no-config-mixed-precision-none")
    assert d.primary is not None and d.primary.id == "unclassified-failure/uncaught-exception"
    assert any("AttributeError" in e.text for e in d.primary.evidence)
    report = ("Traceback (most recent call last):\n  File \"/usr/local/bin/accelerate\", line 8, in <module>\n"
              "    sys.exit(main())\n"
              "  File \"/usr/lib/python3/dist-packages/accelerate/commands/launch.py\", line 562, in simple_launcher\n"
              "    raise subprocess.CalledProcessError(returncode=process.returncode, cmd=cmd)\n"
              "subprocess.CalledProcessError: Command '['./run.sh', '--fast']' returned non-zero exit "
              "status 1.\n")
    d = Diagnoser().diagnose(report.encode())
    assert d.primary is not None and d.primary.id == "unclassified-failure/process-exited"


def test_a_watchdog_line_a_terminal_wrapped_is_still_a_timeout_and_invents_no_silent_rank() -> None:
    """A fixed-width terminal cut "Watchdog caught collective opera|tion timeout: WorkNCCL(...) ran for
    ..."; the work's own report still reads as the timeout. With no rank reporting a timeout under its
    own prefix, no rank is called the silent one the others waited for."""
    d = _diagnose("more25a-openr1-grpo-broadcast-seq4-watchdog-30min")
    assert d.verdict == "failure" and d.primary is not None and d.primary.id == "nccl-timeout/watchdog-timeout"
    assert "printed no timeout of its own" not in d.primary.why


@pytest.mark.parametrize("case_id", [
    "more26a-dvclive-live-end-studio-queue-join-exit-hang",  # Ctrl-C in a tracker's Live.__exit__
    "more26a-torchtitan-destroy-process-group-pyspy-cleanup-deadlock",  # py-spy: destroy_process_group
])
def test_a_stack_waiting_in_teardown_is_a_hang_at_exit(case_id: str) -> None:
    d = _diagnose(case_id)
    assert d.verdict == "hang" and d.primary is not None and d.primary.id == "training-hang/exit-hang"


def test_a_stack_waiting_inside_the_loop_is_no_hang_at_exit() -> None:
    """Near-miss: interrupted while a collective in the training step waited (a with-block around the
    loop is in the stack too, but the wait is not in its exit)."""
    log = ("^CTraceback (most recent call last):\n  File \"train.py\", line 40, in <module>\n    main()\n"
           "  File \"train.py\", line 31, in main\n    loss = step(batch)\n"
           "  File \"train.py\", line 12, in step\n    dist.all_reduce(t)\n"
           "  File \"/opt/venv/lib/python3.11/site-packages/torch/distributed/distributed_c10d.py\", line 2501, "
           "in all_reduce\n    work.wait()\nKeyboardInterrupt\n")
    d = Diagnoser().diagnose(log.encode())
    assert d.primary is not None and d.primary.id != "training-hang/exit-hang"


@pytest.mark.parametrize("case_id", [
    "more26a-wenet-stale-ddp-init-file-worker-count-287",  # a file:// init file earlier runs left
    "dist-yolov5-store-barrier-extra-workers",  # two launches on one store
])
def test_a_store_barrier_counting_more_workers_than_the_world_is_shared_with_another_job(case_id: str) -> None:
    d = _diagnose(case_id)
    assert d.verdict == "hang" and d.primary is not None
    assert d.primary.id == "rendezvous-failure/store-shared-by-two-jobs"


def test_a_store_barrier_short_of_workers_is_a_hang_at_launch_not_a_shared_store() -> None:
    """Near-miss: fewer workers than the world size means ranks never came, not another job."""
    log = ("Waiting in store based barrier to initialize process group for rank: 0, key: store_based_barrier_key:1 "
           "(world_size=4, worker_count=3, timeout=0:30:00)\n")
    d = Diagnoser().diagnose(log.encode())
    assert d.verdict == "hang" and d.primary is not None and d.primary.id == "training-hang/stalled-progress"


def test_an_info_records_indented_list_of_errors_it_skipped_is_no_failure() -> None:
    """A record at INFO level ("- INFO - In epoch 1 the following errors occurred:") and the indented
    lines of its message (the samples a generator skipped) report; they end nothing."""
    d = _diagnose("more26a-ok-ml4h-tensor-generator-epoch-error-summary-skipped")
    assert d.verdict == "healthy", d.primary


def test_an_error_line_after_an_info_record_or_naming_info_is_still_read() -> None:
    """Near-misses: an unindented error after the INFO record is its own line; "NCCL_DEBUG=INFO" in an
    error's advice is no INFO level."""
    after = ("2019-10-16 15:16:26,801 - gen:129 - INFO - In epoch 1 the following errors occurred:\n"
             "    [Tensor contains nans.] - 167\nFATAL: cannot allocate the batch buffer\n")
    assert Diagnoser().diagnose(after.encode()).verdict == "failure"
    advice = "step 10 loss 0.5\nproxy failed: unhandled foo error (run with NCCL_DEBUG=INFO for details)\n"
    assert Diagnoser().diagnose(advice.encode()).verdict == "failure"


def test_the_spawn_parents_report_names_the_childs_rank() -> None:
    """torch.multiprocessing.spawn's parent raises "-- Process 2 terminated with the following error:"
    and the child's traceback is cut off: the failure is rank 2's. Near-miss: a plain exception names no rank."""
    d = _diagnose("more22a-detectron2-launch-process2-error-in-forward")
    assert d.primary is not None and d.primary.rank == 2
    plain = "Traceback (most recent call last):\n  File \"t.py\", line 3, in <module>\n    f()\nValueError: bad value 2\n"
    d = Diagnoser().diagnose(plain.encode())
    assert d.primary is not None and d.primary.rank is None


def _unknown(case_id: str, entry: str) -> Diagnosis:
    """The case diagnosed with the library entry that explains it removed: a failure no signature knows."""
    from trainmedic.api import load_library
    from trainmedic.evaluate.unknown import without

    return Diagnoser(without(load_library(), entry)).diagnose(Named("output.log", _case(case_id).log.encode()))


@pytest.mark.parametrize(("case_id", "entry"), [
    ("more28a-tnt-trajectory-segfault-mid-epoch", "native-crash"),  # the crash glued to a bar's redraw
    ("more28a-ginex-cgexec-8gb-killed-first-superbatch", "host-oom"),  # zsh's job table; "Done!" at setup
    # DataLoader's hint that its workers are out of shared memory: failure words with no class
    ("more21a-k8s-helm-interactive-services-shm-hint", "dataloader-worker-failure"),
    # slurmstepd's "Detected 3 oom-kill event(s) in step 220424.batch cgroup": a job step's id, not progress
    ("more52h-pl-save-checkpoint-slurm-batch-oom-kill", "host-oom"),
    # torchrun's summary pasted as its two fields: "exitcode: -9" and "Signal 9 (SIGKILL)"
    ("b84b-cosmos-4gpu-post-training-sigkill-cpu-ram", "host-oom"),
    # load_state_dict's key lists pasted without the "Error(s) in loading state_dict" line above them
    ("b82c-3dunet-resume-dataparallel-prefix", "checkpoint-load-mismatch"),
])
def test_a_crash_no_signature_knows_is_still_a_failure(case_id: str, entry: str) -> None:
    """Without the entry that explains it, the crash's own words still make it a failure: a crash glued
    to the progress line a bar was redrawing is after that progress; zsh's lower-case "killed" in its job
    table is a kill; a "Done!" that training progress follows (a dataset's preparation) is no finish."""
    d = _unknown(case_id, entry)
    assert d.verdict == "failure", d.notes


def test_a_done_after_the_last_progress_still_finishes_the_run() -> None:
    """Near-miss: "Done!" after the last step is the run's end; an error-worded line before it is no
    failure no signature knows."""
    log = "step 1 loss 0.5\nerror: could not upload the sample grid, skipping\nstep 2 loss 0.4\nDone!\n"
    assert Diagnoser().diagnose(log.encode()).verdict == "healthy"


@pytest.mark.parametrize("case_id", [
    "more27a-determined-ddp-rank0-cuda-oom",  # Determined's "[rank=0]" prefix after its own fields
    "more27a-memoryvla-dlc-torchrun-rank0-sigkill",  # "failed (exitcode: -9) for binary located at ... local_rank: 0 (process ID: 71)"
    "more27a-qwenvl-finetune-deepspeed-rank0-oom-killer-on-save",  # DeepSpeed's kill list + the kernel's pid
])
def test_rank_from_what_the_launcher_says(case_id: str) -> None:
    d = _diagnose(case_id)
    assert d.primary is not None and d.primary.rank == _case(case_id).label.rank


def test_deepspeeds_kill_list_maps_pids_only_on_one_node() -> None:
    """Near-miss: the same kill list under host prefixes (pdsh, several nodes) names local ranks of
    different nodes, so the kernel's pid names no rank."""
    log = ("node1: [INFO] [launch.py:319:sigkill_handler] Killing subprocess 410126\n"
           "node1: [INFO] [launch.py:319:sigkill_handler] Killing subprocess 410127\n"
           "[856341.770960] Out of memory: Killed process 410127 (python) total-vm:79905000kB, anon-rss:22957108kB, "
           "file-rss:72036kB, shmem-rss:15143164kB, UID:1000 pgtables:78032kB oom_score_adj:0\n")
    d = Diagnoser().diagnose(log.encode())
    assert d.primary is not None and d.primary.id == "host-oom/oom-killer" and d.primary.rank is None
    one = log.replace("node1: ", "")
    d = Diagnoser().diagnose(one.encode())
    assert d.primary is not None and d.primary.rank == 1


@pytest.mark.parametrize(("case_id", "cause"), [
    ("dlw-spawn-main-guard-pyg-windows", "spawn-without-main-guard"),  # the message from its first line
    ("more7a-dlw-spawn-main-guard-ganomaly-windows", "spawn-without-main-guard"),  # a paste from its last lines
    ("more7a-dlw-spawn-pickle-local-llamafactory-windows", "spawn-unpicklable-object"),
])
def test_spawned_workers_failing_to_start_on_windows_and_macos(case_id: str, cause: str) -> None:
    d = _diagnose(case_id)
    assert d.primary is not None and d.primary.id == f"dataloader-worker-failure/{cause}"


def test_an_attribute_error_of_the_dataset_is_no_spawn_failure() -> None:
    """Near-miss: an AttributeError the dataset raised names no pickling."""
    log = ("Traceback (most recent call last):\n  File \"train.py\", line 9, in <module>\n    x = ds[0]\n"
           "AttributeError: 'CustomDataset' object has no attribute 'transform'\n")
    d = Diagnoser().diagnose(log.encode())
    assert d.primary is not None and not d.primary.id.startswith("dataloader-worker-failure/spawn")


@pytest.mark.parametrize(("case_id", "cause"), [
    ("more-srgan-torch171-inplace-version2", "autograd-error/inplace-modification"),
    ("mr-sophia-backward-second-time", "autograd-error/backward-twice"),
    ("more-egoplan-ddp-embedding-device-mismatch", "device-mismatch/tensors-on-different-devices"),
    ("more10a-swift-resume-deepspeed-loss-scaler-weights-only", "checkpoint-load-mismatch/weights-only-default"),
    ("more20a-mps-backward-oom-other-allocations-14gb", "cuda-out-of-memory/mps-allocator-oom"),
    ("more20a-xla-fsdp-tpu-v3-8-reserve-10g-resource-exhausted", "cuda-out-of-memory/xla-hbm-exhausted"),
    ("more25a-swift-grpo-import-grpoconfig-old-trl-py38", "dependency-version-mismatch/api-changed"),
    ("mr-poseidon-trainingargs-eval-strategy", "dependency-version-mismatch/api-changed"),
    ("more4-dcnv4-backward-bf16-unsupported", "dtype-mismatch/incompatible-dtypes"),
    ("more6c-huatuo2-accelerate-device-map-auto", "hf-trainer-failure/device-map-distributed"),
    ("more6c-simpletuner-flux-zero3-embedding-2d", "deepspeed-failure/zero3-params-not-gathered"),
    ("more24a-bionemo-esm2-pipeline-parallel-num-layers-assert", "megatron-failure/parallel-layout-invalid"),
])
def test_model_code_errors_are_named_with_their_fix(case_id: str, cause: str) -> None:
    """Errors in the model code (autograd, the dispatcher, torch.load's safe unpickler) are named, not left
    unclassified."""
    d = _diagnose(case_id)
    assert d.primary is not None and d.primary.id == cause and d.primary.fix


@pytest.mark.parametrize("case_id", [
    "more23a-cylinder3d-last-batch-input-target-batch-mismatch",  # the loss's batch sizes, last batch
    "more4-isic2018-bce-target-size-mismatch",  # BCE's target size
    "mr-mtpsl-mat1-mat2-shapes",  # a linear layer's in_features
])
def test_shapes_an_operation_cannot_combine_are_named(case_id: str) -> None:
    d = _diagnose(case_id)
    assert d.verdict == "failure" and d.primary is not None
    assert d.primary.id == "tensor-shape-mismatch/incompatible-shapes"


def test_an_uncaught_cpp_exception_seen_only_in_its_native_stack_is_no_bare_abort() -> None:
    """libtorch's backward-cpp stack shows `std::terminate()` above the abort: the abort is what the
    uncaught exception led to, so it is not what the wrapper wraps."""
    d = _diagnose("more30a-native-terminate-libtorch-gssdf-config")
    assert d.primary is not None and d.primary.id == "native-crash/cpp-terminate"
    # near miss: the same abort without the terminate frame has no message of its own
    bare = "Aborted (Signal sent by tkill() 1733323 1000)\nAborted (core dumped)\n"
    d = Diagnoser().diagnose(Named("output.log", bare.encode()))
    assert d.primary is not None and d.primary.id == "native-crash/abort"


def test_the_pre_1_3_cudnn_version_check_is_read() -> None:
    d = _diagnose("more30a-cudnn-mismatch-centernet-conda-7102")
    assert d.primary is not None and d.primary.id == "missing-cuda-libraries/cudnn-version-incompatible"


@pytest.mark.parametrize("case_id", [
    "more30d-alpaca-lora-docker-4x3090-all-ranks-sigbus-shm",  # the launcher's unranked line comes first
    "more30d-llamafactory-slurm-8gpu-sigbus-root-rank0",  # "Failures:" lists ranks 6 and 7 before the root cause
])
def test_torchruns_root_cause_record_names_the_rank_among_records_of_one_failure(case_id: str) -> None:
    d = _diagnose(case_id)
    assert d.primary is not None and d.primary.rank == 0


def test_a_ranks_own_line_is_not_overruled_by_the_summary() -> None:
    """Rank 2 printed its own crash; a summary whose root-cause record is another rank does not move it."""
    own = "[rank2]: Fatal Python error: Segmentation fault\n"
    summary = ("Failures:\n[1]:\n  time      : 2024-05-01_10:00:00\n  host      : node1\n"
               "  rank      : 2 (local_rank: 2)\n  exitcode  : -11 (pid: 12)\n  error_file: <N/A>\n"
               "  traceback : Signal 11 (SIGSEGV) received by PID 12\n"
               "Root Cause (first observed failure):\n[0]:\n  time      : 2024-05-01_10:00:00\n  host      : node1\n"
               "  rank      : 0 (local_rank: 0)\n  exitcode  : -11 (pid: 10)\n  error_file: <N/A>\n"
               "  traceback : Signal 11 (SIGSEGV) received by PID 10\n")
    d = Diagnoser().diagnose(Named("output.log", (own + summary).encode()))
    assert d.primary is not None and d.primary.id == "native-crash/segfault" and d.primary.rank == 2


def test_a_padded_meter_that_recovers_from_nan_is_healthy() -> None:
    line = "Train: 4 [{i:4d}/5004 ({p:3d}%)]  Loss:  {x:>9} ({x:>6})  Time: 0.202s,  LR: 6.227e-02\n"
    losses = ["6.913", "6.871", "nan", "6.802", "6.755"]
    log = "".join(line.format(i=50 * i, p=i, x=x) for i, x in enumerate(losses))
    assert Diagnoser().diagnose(Named("output.log", log.encode())).verdict == "healthy"


def test_hpe_pals_names_the_rank_that_died_of_a_signal() -> None:
    """PALS mpiexec (Aurora, Polaris, Sunspot): rank 0's segfault, then the rank it killed."""
    d = _diagnose("more30d-ezpz-xpu-tp2-rank0-sigsegv-rank4-killed")
    assert d.primary is not None and (d.primary.id, d.primary.rank) == ("native-crash/segfault", 0)


@pytest.mark.parametrize(("case_id", "cause"), [
    ("mr-llamafactory-module-not-found", "dependency-version-mismatch/module-missing"),  # top-level package
    ("more30f-ai-toolkit-hidream-bnb-triton-ops-removed", "dependency-version-mismatch/api-changed"),  # a submodule
])
def test_a_missing_module_is_named_and_a_vanished_submodule_is_a_version_change(case_id: str, cause: str) -> None:
    d = _diagnose(case_id)
    assert d.primary is not None and d.primary.id == cause


def test_a_traceback_a_logger_printed_under_a_warning_is_that_warning() -> None:
    """xformers probes for Triton and logs the ImportError with its warning (exc_info): no failure."""
    case = _case("more17b-ok-lora-easy-training-triton-import-traceback-windows")
    d = _diagnose(case.id)
    assert d.verdict == "healthy" and any("printed with a warning record" in n for n in d.notes)
    # near misses: the same traceback under an ERROR record, or under a warnings-module line, ended the run
    for above in ("ERROR    A matching Triton is not available   __init__.py:61",
                  "/usr/lib/python3.10/site-packages/xformers/__init__.py:61: UserWarning: no Triton"):
        lines = case.log.splitlines()
        log = "\n".join([above, *lines[1:]]) + "\n"
        d = Diagnoser().diagnose(Named("output.log", log.encode()))
        assert d.verdict == "failure" and d.primary is not None
        assert d.primary.id == "dependency-version-mismatch/module-missing"


def test_a_host_allocation_failing_inside_a_worker_is_the_workers_oom_when_the_wrapper_comes_first() -> None:
    """The paste starts at "Caught RuntimeError in DataLoader worker process 0." and the allocation
    error ends the worker's own traceback below it: the wrapper's worker gives it its meaning."""
    d = _diagnose("more30g-cpu-alloc-collate-arcgis-ssd")
    assert d.primary is not None and d.primary.id == "dataloader-worker-failure/worker-oom"
    # near miss: the same allocation failure in the main process stays the host's
    own = _case("more30g-cpu-alloc-collate-arcgis-ssd").log.splitlines()[-1] + "\n"
    d = Diagnoser().diagnose(Named("output.log", own.encode()))
    assert d.primary is not None and d.primary.id == "host-oom/cpu-allocation-failure"


def test_workers_interrupted_by_ctrl_c_while_waiting_are_a_hang_not_a_dataset_error() -> None:
    """pytorch/examples at the end of an epoch: the user pressed Ctrl-C on a frozen run; every worker's
    traceback runs through _worker_loop into its queue's lock. Where they waited, not what they raised."""
    case = _case("more30i-imagenet-alexnet-freeze-end-of-epoch-ctrl-c-workers")
    d = _diagnose(case.id)
    assert d.verdict == "hang" and d.primary is not None and d.primary.id == "training-hang/stalled-progress"
    # near miss: no Ctrl-C above the same worker tracebacks, and the worker's loop frame is the worker's failure
    log = case.log.replace("^C^C", "")
    d = Diagnoser().diagnose(Named("output.log", log.encode()))
    assert d.primary is not None and d.primary.id == "dataloader-worker-failure/getitem-exception"


@pytest.mark.parametrize(("case_id", "cause"), [
    # NCCL's "unhandled system error", then its "Last error: Failed to open libnvidia-ml.so.1"
    ("more24a-llamafactory-091-nccl-libnvidia-ml-missing", "missing-cuda-libraries/library-not-found"),
    # NCCL's "unhandled cuda error", then CUDA's 802 (system not yet initialized: the NVSwitch fabric)
    ("more8a-nccl-1231-802-after-harmless-plugin-line", "nvlink-error/fabric-not-ready"),
])
def test_the_specific_line_of_one_message_names_it_whatever_entry_it_belongs_to(case_id: str, cause: str) -> None:
    d = _diagnose(case_id)
    assert d.primary is not None and d.primary.id == cause
    # near miss: the same generic error with no specific line after it stays the generic one
    head = [ln for ln in _case(case_id).log.splitlines() if "Failed to open libnvidia-ml" not in ln
            and "802" not in ln and "system not yet initialized" not in ln]
    d = Diagnoser().diagnose(Named("output.log", ("\n".join(head) + "\n").encode()))
    assert d.primary is not None and d.primary.id != cause


def test_a_metrics_table_whose_training_rows_read_nan_is_a_nan_loss() -> None:
    """StarGANv2-VC prints one row per loss term after each epoch's header ("train/real     : nan"):
    training terms non-finite in two rows or more are what a NaN loss line says."""
    case = _case("more30j-stargan-vc-hifigan-mels-epoch43-nan-inf")
    d = _diagnose(case.id)
    assert d.primary is not None and d.primary.id == "nan-loss/nonfinite-loss"
    rows = case.log.splitlines()
    # near misses: the evaluation's rows alone, one training row alone, a later epoch whose rows are finite
    evals = "\n".join(r for r in rows if not r.startswith("train/")) + "\n"
    one = "\n".join(r for r in rows if r.startswith(("---", "train/real ", "train/ds"))) + "\n"
    later = case.log + "--- epoch 44 ---\n" + "".join(f"train/{k:<9}: 0.{i}31\n" for i, k in enumerate(("real", "fake", "reg")))
    for log in (evals, one, later):
        assert Diagnoser().diagnose(Named("output.log", log.encode())).verdict == "healthy", log[-300:]


def test_a_crash_while_the_process_exits_ends_no_work() -> None:
    # gloo's enforce aborting at interpreter exit, its what() CUDA's "driver shutting down": healthy, noted
    d = _diagnose("more14b-ok-gloo-enforce-driver-shutting-down-at-exit")
    assert d.verdict == "healthy", d.primary
    assert any("while the process exited" in n for n in d.notes)
    # Near miss: the failure before it still counts (a gloo read timeout, then the abort at exit).
    d = _diagnose("more31e-sentiment-discovery-3gpu-after-epoch1-gloo-read-timeout-allreduce")
    assert d.primary is not None and d.primary.id == "nccl-timeout/gloo-timeout"


def test_a_rank_that_aborts_after_its_own_watchdog_timeout_died_of_the_timeout() -> None:
    # rank 7's watchdog timed out, it aborted, the launcher sent SIGTERM to 7 others and reported rank 7's -6
    d = _diagnose("more31e-discoscene-8xp40-broadcast-seq806-rank7-sigterm-others")
    assert d.primary is not None and d.primary.id == "nccl-timeout/watchdog-timeout"


def test_an_announcement_right_above_its_traceback_is_that_traceback_s_exception() -> None:
    # Hydra's "Error executing job with overrides: [...]", then the traceback that holds a known cause
    d = _diagnose("more31i-gstarx-gcnconv-no-attribute-weight")
    assert d.primary is not None and d.primary.id == "dependency-version-mismatch/api-changed"


def test_a_loss_that_falls_straight_to_zero_and_stays_there_is_a_metric_anomaly() -> None:
    d = _diagnose("more31o-moe-llava-loss-drops-to-zero-after-first-step")  # 2.1559, then 0.0 five times
    assert d.primary is not None and d.primary.id == "unclassified-failure/metric-anomaly"
    assert "exactly 0" in d.primary.why
    # two such lines are enough (Qwen3-VL: 2.7584, then 0.0 and 0.0 with the same gradient norm)
    d = _diagnose("more32a-qwen3vl-finetune-loss-zero-after-first-step")
    assert d.primary is not None and d.primary.id == "unclassified-failure/metric-anomaly"
    # ... but one is not: a last line alone may be one empty batch
    log = "{'loss': 2.7584, 'learning_rate': 0.0, 'epoch': 0.02}\n{'loss': 0.0, 'learning_rate': 5e-06, 'epoch': 0.05}\n"
    assert Diagnoser().diagnose(log.encode()).verdict == "healthy"
    # Near miss: a loss that decreased by degrees is printed rounded to 0.0000 at the end, and trains on.
    steps = [2.1, 0.9, 0.2, 0.03, 0.004, 0.0, 0.0, 0.0, 0.0]
    log = "".join(f"{{'loss': {x}, 'learning_rate': 1e-05, 'epoch': {i / 10}}}\n" for i, x in enumerate(steps))
    assert Diagnoser().diagnose(log.encode()).verdict == "healthy"


def test_a_bus_error_in_nccl_s_frames_is_nccl_s_shared_memory_and_elsewhere_a_native_bus_error() -> None:
    # UCX's handler reports the SIGBUS with a backtrace through ncclGroupEnd / libnccl (docker's 64 MB /dev/shm)
    d = _diagnose("more32e-pipedream-docker-nccl-bus-error-default-shm")
    assert d.primary is not None and d.primary.id == "nccl-error/shm-too-small"
    # near miss: the same report with no NCCL frame in it is a bus error of unknown origin
    log = _case("more32e-pipedream-docker-nccl-bus-error-default-shm").log
    plain = "\n".join(ln for ln in log.splitlines() if "nccl" not in ln) + "\n"
    d = Diagnoser().diagnose(Named("output.log", plain.encode()))
    assert d.primary is not None and d.primary.id == "native-crash/bus-error"


def test_an_ignored_destructor_traceback_whose_exception_only_the_fallback_knows_ended_nothing() -> None:
    # torch 0.4's _DataLoaderIter.__del__ draining its queue: a frame a fingerprint names, then
    # "ConnectionResetError: [Errno 104] Connection reset by peer"; DARTS went on searching
    d = _diagnose("more32f-dlw-healthy-darts-del-connreset")
    assert d.verdict == "healthy", d.primary
    # near miss: the same traceback without "Exception ignored in" above it ended the run
    log = _case("more32f-dlw-healthy-darts-del-connreset").log
    d = Diagnoser().diagnose(Named("output.log", log.split("\n", 1)[1].encode()))
    assert d.verdict == "failure" and d.primary is not None


def test_a_loss_that_jumped_did_not_stop_a_run_that_says_it_finished() -> None:
    # a diffusion LoRA's per-step loss is noisy (0.0012 at best, 0.0651 at the end, below its first 0.094:
    # no jump at all, as logged); the run finished
    assert _diagnose("more32g-healthy-sdxl-lora-advanced-decompression-bomb-wandb-finished-warning").verdict == "healthy"
    # its first loss put lower (0.009), the end's 0.0651 is a jump above where training began: the run that
    # says it finished is still healthy, and the note says the jump stopped nothing
    log = _case("more32g-healthy-sdxl-lora-advanced-decompression-bomb-wandb-finished-warning").log
    log = log.replace("loss=0.094,", "loss=0.009,")
    d = Diagnoser().diagnose(Named("output.log", log.encode()))
    assert d.verdict == "healthy", d.primary
    assert any("loss jumped" in n and "training went on" in n for n in d.notes), d.notes
    # near miss: the same log without wandb's word that the script finished is a run the jump stopped
    cut = "\n".join(ln for ln in log.splitlines() if "process to finish" not in ln) + "\n"
    d = Diagnoser().diagnose(Named("output.log", cut.encode()))
    assert d.primary is not None and d.primary.id == "loss-spike/spike-detected"


def test_only_a_loss_that_jumped_is_excused_by_a_run_that_finished() -> None:
    # A loss gone NaN to the end is still the failure in a finished run, whichever cause claims the shape
    # (here the unclassified metric anomaly, with the NaN entry left out as if it were unknown).
    from trainmedic.catalog import load_library
    from trainmedic.evaluate.unknown import without

    log = "".join(f"{{'loss': {x}, 'learning_rate': 1e-05, 'epoch': {i / 10}}}\n"
                  for i, x in enumerate([2.1, 1.4, 0.9, "nan", "nan", "nan"]))
    log += "{'train_runtime': 12.5, 'train_samples_per_second': 40.1, 'epoch': 0.6}\n"
    d = Diagnoser(library=without(load_library(), "nan-loss")).diagnose(Named("output.log", log.encode()))
    assert d.verdict == "failure" and d.primary is not None, d.notes
    assert d.primary.id == "unclassified-failure/metric-anomaly"


def test_the_jobs_own_oom_record_explains_the_kill_it_does_not_name() -> None:
    """Slurm's cgroup notice names no pid: its scope is the job, so the shell's `Killed` is its victim.
    Near-miss: a kernel record naming another process may be another job on the host; it stays an
    alternative, and the kill keeps its unknown sender."""
    d = _diagnose("mem-slurm-cgcnn-oom-kill-batch")
    assert d.primary is not None and d.primary.id == "host-oom/oom-killer"
    assert d.primary.confidence >= 0.9
    killed = b"train.sh: line 28:  8156 Killed                  python3 main.py --epochs 400\n"
    host = b"[12345.678901] Out of memory: Killed process 4242 (java) total-vm:9000kB, anon-rss:8000kB\n"
    other = Diagnoser().diagnose(Named("output.log", killed + host))
    # (the kill then reads as its likeliest sender by the prior alone: below a confirmed kill's certainty)
    assert other.primary is not None and _names(other, "host-oom/sigkill")
    assert other.primary.confidence < d.primary.confidence and "names the same process" not in other.primary.why


def test_a_line_that_dismisses_itself_is_a_notice_not_the_failure() -> None:
    """Unsloth's "Not an error, but `device` is not supported in vLLM. Skipping." in a GRPO notebook that
    went on to train. Near-miss: words that refuse to be ignored still read as an error."""
    d = _diagnose("more33l-unsloth-qwen3-fp8-grpo-vllm-warnings-healthy")
    assert d.verdict == "healthy"
    setup = b"Loading model from scratch...\n"
    assert Diagnoser().diagnose(setup + b"Unsloth: Not an error, but `device` is not supported. Skipping.\n"
                                ).verdict == "healthy"
    assert Diagnoser().diagnose(setup + b"This message can be safely ignored: failed to load libnuma\n"
                                ).verdict == "healthy"
    refused = Diagnoser().diagnose(setup + b"Error: the checksum failed and cannot be ignored\n")
    assert refused.verdict == "failure"


def test_a_store_the_agent_cannot_reach_is_unreachable_at_start_and_lost_once_it_trained() -> None:
    """RendezvousConnectionError: at start-up the agent never reached the store (a Ray cluster with few open
    ports); after training progress, the store it reached went away (`mid_run_as`)."""
    d = _diagnose("more33n-torchx-ray-cluster-c10d-store-unreachable-limited-ports")
    assert d.primary is not None and d.primary.id == "rendezvous-failure/store-unreachable"
    error = ("torch.distributed.elastic.rendezvous.api.RendezvousConnectionError: The connection to the C10d store "
             "has failed. See inner exception for details.\n")
    steps = "".join(f"{{'loss': {2.0 - i / 10:.2f}, 'learning_rate': 2e-05, 'epoch': 0.{i}}}\n" for i in range(1, 6))
    lost = Diagnoser().diagnose((steps + error).encode())
    assert lost.primary is not None and lost.primary.id == "peer-connection-lost/store-lost"
    assert Diagnoser().diagnose(error.encode()).primary.id == "rendezvous-failure/store-unreachable"  # type: ignore[union-attr]


def test_a_store_barrier_that_counts_more_workers_than_ranks_is_a_shared_store() -> None:
    """The barrier's timeout names its count: 16 workers for a world of 4 is another job in the same store.
    Near-miss: fewer workers than ranks is a rank that never came (the store barrier's timeout)."""
    d = _diagnose("more31e-pseco-store-barrier-world4-worker-count-16")
    assert d.primary is not None and d.primary.id == "rendezvous-failure/store-shared-by-two-jobs"
    late = (b"RuntimeError: Timed out initializing process group in store based barrier on rank: 0, for key: "
            b"store_based_barrier_key:1 (world_size=4, worker_count=3, timeout=0:30:00)\n")
    other = Diagnoser().diagnose(late)
    assert other.primary is not None and other.primary.id == "nccl-timeout/store-barrier-timeout"


def test_hccls_notify_timeout_is_a_collective_timeout_of_the_rank_it_names() -> None:
    """Ascend's HCCL says which rank's notify never came (CANN's EI0002); that rank is where it stopped.
    Near miss: with the remote rank unknown, the line names none (the rank comes from elsewhere, not 3)."""
    line = ("EI0002: [PID: 7277] 2024-11-28-11:59:30.645.648 The wait execution of the Notify register times out. "
            "Reason: The Notify register has not received the Notify record from remote rank [{}].base information: "
            "[streamID:[2282987520], taskID[5], tag[AllReduce_10.0.0.1%enp_60000_0_1]]\n")
    steps = "".join(f"step {i} loss 2.{i}\n" for i in range(1, 4))
    d = Diagnoser().diagnose((steps + line.format(3)).encode())
    assert d.primary is not None and d.primary.id == "nccl-timeout/watchdog-timeout"
    assert d.primary.rank == 3
    d = Diagnoser().diagnose((steps + line.format("unknown")).encode())
    assert d.primary is not None and d.primary.id == "nccl-timeout/watchdog-timeout"
    assert d.primary.rank != 3


@pytest.mark.parametrize("case_id", [
    "more42e-healthy-nanogpt-shakespeare-char-keyboardinterrupt-at-loss-item-iter-1330",  # KeyboardInterrupt in loss.item()
    "more34m-healthy-signlang-torchrun-ddp-ctrl-c",  # both ranks, then the agent's SignalException for signal 2
])
def test_ctrl_c_on_a_run_that_was_training_is_a_stop_not_a_failure(case_id: str) -> None:
    d = _diagnose(case_id)
    assert d.verdict == "healthy", d.primary
    assert any(n.startswith("stopped by hand (Ctrl-C)") for n in d.notes), d.notes


def test_ctrl_c_before_any_progress_or_a_sigterm_is_still_a_failure() -> None:
    """Near misses: Ctrl-C before the run showed any progress may be a person giving up on a stall; the
    agent's SIGTERM (15) is a stop from outside, not a hand on the keyboard."""
    tb = ('Traceback (most recent call last):\n  File "train.py", line 9, in <module>\n'
          '    loss = model(batch).sum()\nKeyboardInterrupt\n')
    d = Diagnoser().diagnose(Named("output.log", tb.encode()))
    assert d.verdict != "healthy"
    steps = "".join(f"iter {i}: loss {2.0 - i / 100:.4f}, time 55.00ms\n" for i in range(0, 50, 10))
    d = Diagnoser().diagnose(Named("output.log", (steps + tb).encode()))
    assert d.verdict == "healthy" and any(n.startswith("stopped by hand") for n in d.notes)
    term = steps + ("WARNING:torch.distributed.elastic.agent.server.api:Received 15 death signal, shutting down "
                    "workers\n")
    assert Diagnoser().diagnose(Named("output.log", term.encode())).verdict != "healthy"
    sigint = steps + ("WARNING:torch.distributed.elastic.agent.server.api:Received 2 death signal, shutting down "
                      "workers\n")
    assert Diagnoser().diagnose(Named("output.log", sigint.encode())).verdict == "healthy"
    # Ctrl-C on a run that had trained but then waited on its DataLoader: its stuck loader, with no note of a stop.
    waited = steps + ('Traceback (most recent call last):\n  File "train.py", line 9, in <module>\n'
                      '  File "/opt/torch/utils/data/dataloader.py", line 1310, in _try_get_data\n'
                      "    data = self._data_queue.get(timeout=timeout)\nKeyboardInterrupt\n")
    d = Diagnoser().diagnose(Named("output.log", waited.encode()))
    assert d.primary is not None and d.primary.id == "dataloader-worker-failure/worker-hang"
    assert not any(n.startswith("stopped by hand") for n in d.notes), d.notes


def test_an_unranked_failure_in_a_job_of_several_ranks_is_read_as_rank_0s() -> None:
    """Rank-prefixed progress from two ranks, then an error no prefix claims: most often rank 0's output
    (the rank that logs), as when rank 0 is the only rank named. Near miss: a single process names no rank."""
    steps = "".join(f"[rank{r}]: step {i} loss 1.{i}\n" for i in range(3) for r in (0, 1))
    oom = "torch.OutOfMemoryError: CUDA out of memory. Tried to allocate 2.00 GiB. GPU 0 has a total capacity of 79.15 GiB\n"
    d = Diagnoser().diagnose(Named("output.log", (steps + oom).encode()))
    assert d.primary is not None and d.primary.id == "cuda-out-of-memory/allocator-oom"
    assert d.primary.rank == 0 and "most often rank 0's" in d.primary.why
    d = _diagnose("more35b-fish-speech-lora-loss-no-grad-fn")  # a rank-zero logger's "[rank: 0]", then the error
    assert d.primary is not None and d.primary.rank == 0 and "the only rank the log names" in d.primary.why
    single = "".join(f"step {i} loss 1.{i}\n" for i in range(3)) + oom
    d = Diagnoser().diagnose(Named("output.log", single.encode()))
    assert d.primary is not None and d.primary.rank is None


def test_what_threads_found_behind_an_answer_is_offered_next() -> None:
    """A watchdog timeout with no rank's own error: the readings the dev threads found behind that
    answer (calibration.yaml `mistaken`) follow it, with the fact that confirms them."""
    d = _diagnose("more5c-desync-trlx-ppo-empty-responses-allgather")
    assert d.primary is not None and d.primary.id == "nccl-timeout/watchdog-timeout"
    offered = {a.id: a for a in d.alternatives}
    assert "rank-desync/mismatched-collectives" in offered
    assert "real logs given this answer" in offered["rank-desync/mismatched-collectives"].why
    assert all(a.confidence < d.primary.confidence for a in d.alternatives)


def test_a_dataloader_reading_needs_a_dataloader_in_sight() -> None:
    """Where the dev threads often found a dataset's __getitem__ behind an exception no line names (as the
    calibration measured before the dataset-getitem-frame fingerprint read most of those cases), that
    reading is offered only where the log shows a DataLoader or a file of dataset code (the `needs_context`
    marks). The measured readings are set here, so the gate is shown whatever the calibration now holds."""
    answers, truths = LIBRARY.mistaken["unclassified-failure/uncaught-exception"]
    mistaken = dict(LIBRARY.mistaken)
    mistaken["unclassified-failure/uncaught-exception"] = (
        answers, (*truths, ("dataloader-worker-failure/getitem-exception", 3)))
    library = dataclasses.replace(LIBRARY, mistaken=mistaken)
    tb = ("Traceback (most recent call last):\n"
          '  File "train.py", line 9, in <module>\n'
          "    x = subset[3]\n"
          '  File "{p}", line 412, in __getitem__\n'
          "    return self.dataset[self.indices[idx]]\n"
          '  File "train.py", line 4, in __getitem__\n'
          "    return self.rows[i]['label']\n"
          "KeyError: 'label'\n")
    for path, shown in (("/usr/lib/python3/site-packages/torch/utils/data/dataset.py", True),
                        ("/usr/lib/python3/site-packages/mylib/containers.py", False)):
        d = Diagnoser(library).diagnose(Named("output.log", tb.format(p=path).encode()))
        assert d.primary is not None and d.primary.id == "unclassified-failure/uncaught-exception"
        assert ("dataloader-worker-failure/getitem-exception" in [a.id for a in d.alternatives]) == shown


def test_a_death_the_launcher_reports_for_no_rank_after_the_timeouts_is_theirs() -> None:
    """The DeepSpeed launcher's "exits with return code = -6" names the command it spawned last, not the
    rank that died; reported after the watchdog took the processes down, it is that abort."""
    d = _diagnose("more43a-olora-ds-2gpu-first-broadcast-watchdog-p2p-disable-fix")
    assert d.primary is not None and d.primary.id == "nccl-timeout/watchdog-timeout"
    wd = ("[rank1]:[E1218 20:27:21.433063423 ProcessGroupNCCL.cpp:629] [Rank 1] Watchdog caught collective operation "
          "timeout: WorkNCCL(SeqNum=1, OpType=BROADCAST, NumelIn=131072000, NumelOut=131072000, Timeout(ms)=600000) "
          "ran for 600040 milliseconds before timing out.\n"
          "[rank1]:[E1218 20:27:21.484966856 ProcessGroupNCCL.cpp:695] [Rank 1] To avoid data inconsistency, we are "
          "taking the entire process down.\n")
    ds = ("[2025-12-18 20:27:23,533] [ERROR] [launch.py:325:sigkill_handler] ['python', '-u', 'train.py', "
          "'--local_rank=1'] exits with return code = -6\n")
    after = Diagnoser().diagnose(Named("output.log", (wd + ds).encode()))
    assert after.primary is not None and after.primary.id == "nccl-timeout/watchdog-timeout"
    # near miss: reported before any timeout, the death came first and the timeouts followed from it
    before = Diagnoser().diagnose(Named("output.log", (ds + wd).encode()))
    assert before.primary is not None and before.primary.id == "native-crash/abort"


def _hf_log(lines: list[str]) -> bytes:
    """HF Trainer's output: its bar, and a metrics dict printed between two states of the bar."""
    return ("\n".join(lines) + "\n").encode()


_BAR = "{p:3d}%|##########| {n}/20 [00:{n:02d}<00:00,  1.00s/it]"
_END = "{'train_runtime': 100.0, 'train_samples_per_second': 0.6, 'train_steps_per_second': 0.02, 'train_loss': 0.0}"


def _metrics(grad_norm: str) -> str:
    return "{'loss': 0.0, 'grad_norm': " + grad_norm + ", 'learning_rate': 1e-06, 'epoch': 0.01}"


def test_a_nan_in_every_metrics_line_to_the_end_did_not_recover() -> None:
    """grad_norm NaN in all 20 steps of a GRPO run that then 'finished': the bar's last move to 20/20 is the
    step the last NaN belonged to, not training that went on."""
    d = _diagnose("more43c-unsloth-qwen3-4b-grpo-vllm-server-grad-accum-8-grad-norm-nan-all-20-steps")
    assert d.verdict == "failure" and d.primary is not None and d.primary.id == "nan-loss/nonfinite-loss"
    persist = [_BAR.format(p=95, n=19), _metrics("nan"), _BAR.format(p=100, n=20), _metrics("nan"), _END,
               _BAR.format(p=100, n=20)]
    assert Diagnoser().diagnose(Named("output.log", _hf_log(persist))).verdict == "failure"
    # near miss: a NaN early, then finite metrics while the bar moves on (past the dicts between its states)
    recover = [_BAR.format(p=5, n=1), _metrics("nan"), _BAR.format(p=10, n=2), _metrics("0.8"),
               _BAR.format(p=95, n=19), _metrics("0.7"), _BAR.format(p=100, n=20), _END, _BAR.format(p=100, n=20)]
    assert Diagnoser().diagnose(Named("output.log", _hf_log(recover))).verdict == "healthy"


def test_a_known_message_in_an_ignored_exception_yields_to_an_uncaught_one_after_it() -> None:
    # A DataLoader iterator's destructor finds its worker aborted ("Exception ignored in: ...__del__",
    # "killed by signal: Aborted") while the process unwinds a CUDA OOM nobody caught, printed below it.
    d = _diagnose("more45d-fgdcc-vith-kmeans-mem-creep-oom-worker-aborted")
    assert d.primary is not None and not d.primary.id.startswith("dataloader-worker-failure/")
    assert "cuda-out-of-memory/allocator-oom" in [d.primary.id, *(a.id for a in d.alternatives[:2])]


def test_the_lines_above_pythons_echo_of_warnings_warn_are_that_warnings_message() -> None:
    # A UserWarning pasted without its "file:line: UserWarning:" header: Python's echo of the call that
    # issued it ("  warnings.warn(...") says the lines above are the warning's text, "Failure to do this" too.
    d = _diagnose("more46a-ok-yolov5-lr-scheduler-order-warning-gpu")
    assert d.verdict == "healthy"
    # Without the echo nothing says those words are a warning's: they stay an error-worded line.
    text = _case("more46a-ok-yolov5-lr-scheduler-order-warning-gpu").log
    cut = "\n".join(ln for ln in text.splitlines() if "warnings.warn(" not in ln) + "\n"
    d = Diagnoser().diagnose(Named("output.log", cut.encode()))
    assert d.verdict == "failure"


def test_a_record_printed_bare_and_again_with_its_warning_level_is_that_warning() -> None:
    # Ray's worker output carries huggingface_hub's retried request twice: bare, then by a handler that
    # shows its level ("WARNING:...:HTTP Error 502 thrown while requesting HEAD ...").
    case = "more46c-ok-verl-ppo-qwen3-hf-hub-502-retry-during-checkpoint-save"
    assert _diagnose(case).verdict == "healthy"
    # The bare line alone says nothing of its level: an error-worded line, read as one.
    cut = "\n".join(ln for ln in _case(case).log.splitlines() if "WARNING:" not in ln) + "\n"
    assert Diagnoser().diagnose(Named("output.log", cut.encode())).verdict == "failure"


def test_a_store_connection_the_group_formed_after_was_retried() -> None:
    # MLPerf's 72 ranks: three could not reach the store at first (errno 113), then Lightning's rank 0 counted
    # every process and gloo connected each rank to its 71 peers
    case = _case("more47b-ok-mlperf-gb300-18node-store-no-route-to-host-then-72-ranks")
    d = Diagnoser().diagnose(Named("output.log", case.log.encode()))
    assert d.verdict == "healthy", d.primary
    assert any("the process group formed after it" in n for n in d.notes)
    # Near misses: the log ends before the group forms, or gloo connected a rank to fewer peers than expected.
    lines = case.log.splitlines(keepends=True)
    cut = next(i for i, ln in enumerate(lines) if "distributed_backend=nccl" in ln)
    d = Diagnoser().diagnose(Named("output.log", "".join(lines[:cut]).encode()))
    assert d.primary is not None and d.primary.id == "rendezvous-failure/store-unreachable"
    short = "".join(ln.replace("connected to 71 peer", "connected to 70 peer") for ln in lines[:cut + 10]
                    if "All distributed processes registered" not in ln)
    d = Diagnoser().diagnose(Named("output.log", short.encode()))
    assert d.primary is not None and d.primary.id == "rendezvous-failure/store-unreachable"


def test_recvfds_finding_its_socket_closed_is_a_descriptor_that_could_not_be_passed() -> None:
    # (resource_sharer's detach -> recv_handle -> recvfds -> "raise EOFError", under a Lightning epoch's bar)
    d = _diagnose("more47g-spiking-detection-lightning-recvfds-eoferror")
    assert d.primary is not None and d.primary.id == "dataloader-worker-failure/fd-exhaustion", d.primary
    # Near miss: an EOFError raised in another frame is no descriptor passing.
    log = _case("more47g-spiking-detection-lightning-recvfds-eoferror").log.replace("in recvfds", "in recv_bytes")
    d = Diagnoser().diagnose(Named("output.log", log.encode()))
    assert d.primary is not None and d.primary.id != "dataloader-worker-failure/fd-exhaustion"


def test_torch_save_opening_a_file_in_a_missing_directory_is_the_missing_directory() -> None:
    # torch < 1.6 opens the file itself ("_open_file_like(f, 'wb')", earlier "_with_file_like(f, "wb", ...)"):
    # Python's FileNotFoundError, or IOError on Python 2, for a checkpoint directory nobody created
    for case in ("more48f-openke-transe-save-checkpoint-dir-missing", "more48f-pytorch-pcnn-py27-checkpoints-dir-missing"):
        d = _diagnose(case)
        assert d.primary is not None and d.primary.id == "checkpoint-permission-error/missing-parent-directory", case
    # Near miss: torch.load opening a checkpoint that is not there reads ("rb"): no directory to create.
    log = _case("more48f-openke-transe-save-checkpoint-dir-missing").log.replace("'wb'", "'rb'")
    d = Diagnoser().diagnose(Named("output.log", log.encode()))
    assert d.primary is not None and d.primary.id != "checkpoint-permission-error/missing-parent-directory"


def test_an_evaluation_s_loss_in_words_is_not_the_training_loss() -> None:
    # "Train Loss: nan" to the early stop, then "Test Loss: 3.0366" of the best model reloaded from an
    # earlier checkpoint: the test figure is no sign that training came back
    d = _diagnose("more48a-speedtransformer-finetune-fold-nan-early-stop")
    assert d.primary is not None and d.primary.id == "nan-loss/nonfinite-loss", d.primary
    # Near miss: the same figure as a training loss is a loss that came back finite.
    log = _case("more48a-speedtransformer-finetune-fold-nan-early-stop").log.replace("Test Loss: 3.0366", "Train Loss: 3.0366")
    assert Diagnoser().diagnose(Named("output.log", log.encode())).primary is None


def test_a_loss_term_holding_nan_is_a_non_finite_loss() -> None:
    from trainmedic.logs.reader import _LOSS_NONFINITE, _training_loss

    # (stylegan2's metric lines and a sentence ending in its figure, "Training Loss: nan.")
    assert _training_loss(_LOSS_NONFINITE, "D_loss: nan, D_loss_grad_norm: nan, D_lr: 0.001882")
    assert _training_loss(_LOSS_NONFINITE, "Epoch : 0 finished. Training Loss: nan. Validation Loss: nan")
    # Near misses: an evaluation's figure, in words or as a name; a finite term; a file named after nan.
    assert not _training_loss(_LOSS_NONFINITE, "Val   Loss: nan, Val   Acc: 0.0379")
    assert not _training_loss(_LOSS_NONFINITE, "{'val_loss': nan, 'epoch': 3}")
    assert not _training_loss(_LOSS_NONFINITE, "D_loss: 0.693, G_loss: 2.1")
    assert not _training_loss(_LOSS_NONFINITE, "saved loss: nan.png")


def test_w_and_b_s_run_summary_at_exit_is_no_training_going_on() -> None:
    # The checkpoint save hit the disk quota; wandb.finish() then printed the run's history and summary
    # ("wandb:   train/global_step 260"): steps that were, not steps after the error
    case = "more41l-trl-sft-llama2-peft-checkpoint-safetensors-disk-quota-exceeded"
    d = _diagnose(case)
    assert d.primary is not None and d.primary.id == "disk-full/quota-exceeded", d.primary
    # Near miss: a progress bar that moved on after the error is training that went on.
    bar = " 53%|█████▎    | 265/500 [12:11<11:02,  2.81s/it]"
    log = _case(case).log.replace("wandb:   train/global_step 260", bar)
    assert Diagnoser().diagnose(Named("output.log", log.encode())).verdict == "healthy"


def test_a_bare_device_assert_takes_its_kind_from_the_assertion_text_another_rank_printed() -> None:
    # Rank 1's "device-side assert triggered" comes first and names no kernel; rank 0's lines are the
    # kernel's own assertion (indexSelectLargeIndex: "srcIndex < srcSelectDimSize"): an index out of range
    case = "more49a-mpirun-fp16-embedding-vocab-too-small-index-select-assert"
    d = _diagnose(case)
    assert d.primary is not None and d.primary.id == "cuda-device-side-assert/index-out-of-range", d.primary
    assert d.primary.rank == 1 and any(e.rank == 0 and "srcIndex" in e.text for e in d.primary.evidence)
    # Near miss: without an assertion text anywhere, the bare assert leads with what threads most often found.
    bare = "\n".join(ln for ln in _case(case).log.splitlines() if "Assertion" not in ln)
    d = Diagnoser().diagnose(Named("output.log", bare.encode()))
    assert d.primary is not None and d.primary.id == "cuda-device-side-assert/target-out-of-range", d.primary


def test_the_pin_memory_thread_unpacking_nothing_is_the_persistent_workers_resume_bug() -> None:
    # torch 1.7: the pin-memory thread's "idx, data = r" meets the bare resume marker ("expected 2, got 0");
    # a shortened paste keeps only the thread's error and the main process's RuntimeError
    case = "more49c-glmc-pin-memory-thread-unpack-empty-resume-marker"
    d = _diagnose(case)
    assert d.primary is not None and d.primary.id == "dataloader-worker-failure/pin-memory-persistent-workers-resume"
    # Near miss: the thread died unpacking something else: not the resume marker.
    assert _primary_if_changed(case, ("(expected 2, got 0)", "(expected 3, got 2)")) not in (
        None, "dataloader-worker-failure/pin-memory-persistent-workers-resume")


def test_an_unexplained_signal_names_the_reading_it_leads_with() -> None:
    from dataclasses import replace

    # "DataLoader worker ... exited unexpectedly" names no signal. When the threads behind it most often
    # found /dev/shm (the share is measured on dev; here it is set), the explanation says that reading,
    # not that the OOM killer sent a kill.
    exited = "dataloader-worker-failure/worker-exited"
    lib = replace(LIBRARY, resolved={**LIBRARY.resolved, exited: (9, 7, "dataloader-worker-failure/shm-exhausted")})
    log = _case("more49b-geti-docker-memory-12g-rfdetr-seg-xl-loader-worker-exited-memory-grows").log
    d = Diagnoser(lib).diagnose(Named("output.log", log.encode()))
    assert d.primary is not None and d.primary.id == "dataloader-worker-failure/shm-exhausted", d.primary
    assert "OOM killer" not in d.primary.why and "the log does not say which; this in 7 of 9" in d.primary.why
    # Near miss: a SIGKILL with no sender named leads with the OOM killer, and says so.
    d = _diagnose("more31a-dolly-databricks-z3-pythia28b-return-code-minus9")
    assert d.primary is not None and d.primary.id == "host-oom/oom-killer"
    assert "no sender named: the OOM killer in" in d.primary.why


def test_ranks_timing_out_in_different_kinds_of_collective_at_different_points_were_desynchronised() -> None:
    # Rank 1 timed out in its 215121st collective, an ALLREDUCE; rank 0 in its 215122nd, a BROADCAST:
    # a rank that is only behind has nothing pending, so each was calling a collective of its own
    case = "more49g-f5tts-2gpu-epoch2-allreduce-vs-broadcast-seqnum-off-by-one"
    d = _diagnose(case)
    assert d.primary is not None and d.primary.id == "rank-desync/mismatched-collectives", d.primary
    assert "ALLREDUCE as collective 215121 on rank 1" in d.primary.why
    # Near miss: the same kind of collective at the two points (a rank one step behind in the same
    # stream) is a collective timeout, not a desynchronisation.
    log = _case(case).log.replace("OpType=BROADCAST", "OpType=ALLREDUCE")
    d = Diagnoser().diagnose(Named("output.log", log.encode()))
    assert d.primary is not None and d.primary.id == "nccl-timeout/watchdog-timeout", d.primary


def test_a_shape_mismatch_inside_the_optimizers_update_is_its_restored_state() -> None:
    """Optimizer.load_state_dict pairs saved buffers with parameters by position: resumed for a model whose
    parameters changed, the first step fails inside the update (torch's SGD before 1.0 in TH's words, a
    project's copy of AdamW). Near misses: the same mismatch in the model's forward is the model's shapes,
    and another error raised in torch/optim (a non-leaf tensor handed to the optimizer) is no restored state."""
    for case in ("more50h-detectron-pytorch-resume-step69999-sgd-momentum-sizes-do-not-match",
                 "more50h-lgesql-load-optimizer-resume-adamw-exp-avg-768-vs-2"):
        d = _diagnose(case)
        assert d.primary is not None and d.primary.id == "checkpoint-load-mismatch/state-dict-mismatch", case
    update = ("Traceback (most recent call last):\n"
              '  File "train.py", line 80, in <module>\n'
              "    optimizer.step()\n"
              '  File "/opt/conda/lib/python3.10/site-packages/torch/optim/adam.py", line 402, in _single_tensor_adam\n'
              "    exp_avg.lerp_(grad, 1 - beta1)\n"
              "RuntimeError: The size of tensor a (768) must match the size of tensor b (2) at non-singleton "
              "dimension 0\n")
    d = Diagnoser().diagnose(Named("output.log", update.encode()))
    assert d.primary is not None and d.primary.id == "checkpoint-load-mismatch/state-dict-mismatch"
    forward = update.replace("torch/optim/adam.py", "torch/nn/modules/linear.py").replace(
        "_single_tensor_adam", "forward").replace("exp_avg.lerp_(grad, 1 - beta1)", "return F.linear(x, self.weight)")
    d = Diagnoser().diagnose(Named("output.log", forward.encode()))
    assert d.primary is not None and d.primary.id == "tensor-shape-mismatch/incompatible-shapes"
    leaf = ("Traceback (most recent call last):\n"
            '  File "train.py", line 12, in <module>\n'
            "    opt = torch.optim.SGD([w * 2], lr=0.1)\n"
            '  File "/opt/conda/lib/python3.10/site-packages/torch/optim/optimizer.py", line 1026, in add_param_group\n'
            '    raise ValueError("can\'t optimize a non-leaf Tensor")\n'
            "ValueError: can't optimize a non-leaf Tensor\n")
    d = Diagnoser().diagnose(Named("output.log", leaf.encode()))
    assert d.primary is None or d.primary.id != "checkpoint-load-mismatch/state-dict-mismatch"


def test_a_loss_printed_as_losses_is_the_loss() -> None:
    """A training script's own print ("iteration : 7, losses : nan") names the summed loss in the plural.
    Near miss: the same lines with a finite last loss are no non-finite loss."""
    d = _diagnose("more50g-maskrcnn-benchmark-1gpu-losses-explode-to-1e6-then-nan")
    assert d.primary is not None and d.primary.id == "nan-loss/nonfinite-loss"
    assert d.primary.evidence[0].text == "iteration : 7, losses : nan"
    log = _case("more50g-maskrcnn-benchmark-1gpu-losses-explode-to-1e6-then-nan").log.replace("losses : nan", "losses : 2.5")
    d = Diagnoser().diagnose(Named("output.log", log.encode()))
    assert d.primary is None or d.primary.id != "nan-loss/nonfinite-loss"


def test_zero3_placeholders_in_a_state_dict_report_name_the_partitioned_model() -> None:
    """Under "Error(s) in loading state_dict", every current shape torch.Size([0]) (DeepSpeed's placeholder)
    or, before DeepSpeed 0.5, torch.Size([1]) against a saved matrix is ZeRO-3's partitioning, the more
    specific reading of the report. Near miss: a saved vector against [1] is an ordinary size change."""
    for case in ("more50h-lightning-deepspeed-stage3-resume-boringmodel-shape-1-sharded-params",
                 "more15a-ckpt-swift-deepseek-vl-zero3-load-size-zero"):
        d = _diagnose(case)
        assert d.primary is not None and d.primary.id == "deepspeed-failure/zero3-params-not-gathered", case
    vector = ("RuntimeError: Error(s) in loading state_dict for Net:\n"
              "\tsize mismatch for head.bias: copying a param with shape torch.Size([2]) from checkpoint, "
              "the shape in current model is torch.Size([1]).\n")
    d = Diagnoser().diagnose(Named("output.log", vector.encode()))
    assert d.primary is not None and d.primary.id == "checkpoint-load-mismatch/state-dict-mismatch"


def test_a_dead_peer_on_a_multiprocessing_pipe_is_a_process_that_exited() -> None:
    """recv() on a child's pipe raises EOFError or ConnectionResetError when the child died (SB3's
    SubprocVecEnv at reset, or building it): the child exited, its own error is elsewhere. Near miss: an
    EOFError of the script's own reading (input() with no terminal) is its own uncaught exception."""
    for case in ("more33l-sb3-subprocvecenv-reset-by-peer-at-start",
                 "more35d-deckard-sb3-subprocvecenv-reset-eoferror"):
        d = _diagnose(case)
        assert d.primary is not None and d.primary.id == "unclassified-failure/process-exited", case
    own = ("Traceback (most recent call last):\n"
           '  File "train.py", line 40, in <module>\n'
           '    answer = input("overwrite the checkpoint? ")\n'
           "EOFError: EOF when reading a line\n")
    d = Diagnoser().diagnose(Named("output.log", own.encode()))
    assert d.primary is not None and d.primary.id == "unclassified-failure/uncaught-exception"


def test_an_eval_nan_under_a_training_loss_of_zero_throughout_is_a_nan_loss() -> None:
    """HF's Trainer leaves NaN steps out of the loss it logs (logging_nan_inf_filter): a loss NaN at every
    step prints as 'loss': 0.0, and the evaluation's NaN is the only figure left that says so. Near miss:
    the same evaluation NaN beside a real training loss stays a warning."""
    case = "more50g-medicalgpt-sft-loss-zero-eval-loss-nan-lr-frozen"
    d = _diagnose(case)
    assert d.primary is not None and d.primary.id == "nan-loss/nonfinite-loss"
    assert "'eval_loss': nan" in d.primary.evidence[0].text
    _assert_healthy(_case(case).log.replace("{'loss': 0.0,", "{'loss': 1.25,"))


def test_a_loss_term_that_turned_nan_is_the_loss() -> None:
    """A GAN prints its two losses by name ("D_loss: nan", "G_loss: nan"): a term that turned NaN and
    stayed so is the run computing nothing. Near miss: a term that comes back finite on a later metric
    line was one bad step."""
    case = "more48a-stylegan2-ffhq256-d-g-loss-nan"
    d = _diagnose(case)
    assert d.primary is not None and d.primary.id == "nan-loss/nonfinite-loss"
    _assert_healthy(_case(case).log + "\nD_loss: 0.693, D_loss_grad_norm: 0.2, D_lr: 0.001882\nG_loss: 0.71\n")


def test_a_run_that_ends_right_after_tcmalloc_reports_a_huge_allocation_ran_out_of_host_memory() -> None:
    """tcmalloc (LD_PRELOADed on Colab) reports every allocation past 1 GiB; a log that ends right after
    one (the cell's "^C") is a process the host's memory could not hold. Near miss: the same report with
    training going on after it is a note."""
    case = "more46f-mixtext-colab-44gb-alloc-caret-c"
    d = _diagnose(case)
    assert d.primary is not None and d.primary.id == "host-oom/oom-killer"
    assert "tcmalloc: large alloc" in d.primary.evidence[0].text
    _assert_healthy(_case(case).log.replace("^C", "Epoch 1: 120/500 [00:30<01:35, 4.0it/s]\n"
                                                   "Epoch 1: 240/500 [01:00<01:05, 4.0it/s]"))


def test_a_torch_cpp_warning_is_a_warning_whatever_it_says() -> None:
    """torch's C++ warnings (TORCH_WARN) reach the log as "... (Triggered internally at <file>:<line>.)":
    cuDNN's "Plan failed ... CUDNN_STATUS_NOT_SUPPORTED" is a plan it fell back from. Near miss: the same
    words raised as an error (TORCH_CHECK's RuntimeError) end the run."""
    d = _diagnose("more52c-healthy-pconv-cudnn-plan-failed-warning-yolo12")
    assert d.verdict == "healthy", d.primary
    raised = ("Traceback (most recent call last):\n  File \"train.py\", line 9, in <module>\n    y = conv(x)\n"
              "RuntimeError: cuDNN error: CUDNN_STATUS_NOT_SUPPORTED. This error may appear if you passed in a "
              "non-contiguous input.\n")
    d = Diagnoser().diagnose(Named("output.log", raised.encode()))
    assert d.verdict == "failure"


def test_espnet_skipping_every_step_for_a_nan_grad_norm_is_a_nan_loss() -> None:
    """ESPnet's trainer skips each step whose grad norm is not finite and warns: a log that ends in those
    skips trains nothing. Near miss: a skip with training going on after it was one bad batch."""
    case = "more52d-espnet2-conformer-ctc-nan-grad-skipped-every-step"
    d = _diagnose(case)
    assert d.primary is not None and d.primary.id == "nan-loss/nonfinite-loss"
    lines = _case(case).log.splitlines()
    progress = next(line for line in lines if "batch: iter_time" in line)
    _assert_healthy("\n".join([lines[0], progress, progress.replace("12009-12640", "12641-13272")]) + "\n")


def test_an_exception_after_a_weak_sign_training_went_on_from_is_the_failure() -> None:
    """One metric line reading NaN, then finite ones: a weak sign training went on after, a note. An
    uncaught exception below it ended the run and is the finding; the run is never "healthy" for it.
    Near miss: with no exception, the same lines are a healthy run with the NaN noted."""
    metrics = "epoch 3 iter 120: loss=nan\nepoch 3 iter 130: loss=0.52\n"
    log = (metrics + "Traceback (most recent call last):\n  File \"train.py\", line 88, in <module>\n    main()\n"
           "  File \"train.py\", line 80, in main\n    writer.add_row(stats)\nKeyError: 'lr'\n")
    d = Diagnoser().diagnose(Named("output.log", log.encode()))
    assert d.verdict == "failure" and d.primary is not None
    assert d.primary.id == "unclassified-failure/uncaught-exception"
    assert any("training went on" in n for n in d.notes)
    _assert_healthy(metrics)


def test_a_launcher_summary_alone_is_a_worker_that_exited_with_its_error_elsewhere() -> None:
    """torch.distributed.launch's CalledProcessError (or torchrun's table of exit codes) with nothing
    else: a worker exited with an error these lines do not hold; the summary is its echo. Near miss:
    with the worker's own error above it, that error is the finding."""
    case = "more41k-apex-simple-ddp-example-launch-exit-status-1"
    d = _diagnose(case)
    assert d.primary is not None and d.primary.id == "unclassified-failure/process-exited"
    worker = ("Traceback (most recent call last):\n  File \"distributed_data_parallel.py\", line 40, in <module>\n"
              "    loss.backward()\ntorch.cuda.OutOfMemoryError: CUDA out of memory. Tried to allocate 2.00 GiB "
              "(GPU 0; 15.78 GiB total capacity; 13.9 GiB already allocated; 1.1 GiB free; 14.2 GiB reserved in "
              "total by PyTorch)\n")
    d = Diagnoser().diagnose(Named("output.log", (worker + _case(case).log).encode()))
    assert d.primary is not None and d.primary.id.startswith("cuda-")


def test_apex_dividing_by_a_zero_loss_scale_is_the_scale_bottomed_out() -> None:
    """apex's scaler has no minimum: it halves the scale to 0.0 and then divides by it when it unscales
    (ZeroDivisionError in apex/amp/scaler.py). That is the loss scale at its minimum, not an exception of
    its own. Near miss: the same ZeroDivisionError raised in the project's own code stays unclassified."""
    case = "more50g-nemo-asr-apex-o1-loss-scale-zero-zerodivision"
    d = _diagnose(case)
    assert d.primary is not None and d.primary.id == "grad-scaler-overflow/min-loss-scale"
    assert any("ZeroDivisionError" in e.text for e in d.primary.evidence)
    own = ("Traceback (most recent call last):\n  File \"train.py\", line 120, in <module>\n"
           "    acc = correct / total\nZeroDivisionError: float division by zero\n")
    d = Diagnoser().diagnose(Named("output.log", own.encode()))
    assert d.primary is not None and d.primary.id == "unclassified-failure/uncaught-exception"


@pytest.mark.parametrize("case_id", [
    "more41b-hang-openrlhf-sft-slurm-extensions-root-stale-lock",  # every rank at "Using ... extensions root..."
    "more52e-modelscope-gpt3-fused-kernels-build-lock-hang",  # Megatron's fused kernels, mid-build
])
def test_a_log_that_ends_inside_an_extension_build_is_a_hang_at_its_lock(case_id: str) -> None:
    """torch's just-in-time extension build takes a lock file; the other processes poll until it goes, and
    a lock a killed build left never goes. A log whose last lines are the build's steps is a stall there,
    not a run that merely ends. Near misses: the same steps followed by training, or by DeepSpeed's word
    that the op loaded, are a healthy setup."""
    d = _diagnose(case_id)
    assert d.verdict == "hang" and d.primary is not None
    assert d.primary.id == "training-hang/extension-build-lock"
    assert any("extension" in e.text or "ninja" in e.text for e in d.primary.evidence)
    log = _case(case_id).log.rstrip("\n") + "\n"
    _assert_healthy(log + "".join(f"epoch 0 step {i} loss 0.{9 - i}\n" for i in range(8)))
    _assert_healthy(log + "Loading extension module fused_adam...\nTime to load fused_adam op: 0.53 seconds\n")


def test_a_build_another_process_finished_loading_is_not_a_stale_lock() -> None:
    """DeepSpeed prints "Time to load X op" once a process has the op (op_builder's load): the lock was not
    stale, so a log cut right after another rank's "Loading extension module X..." is not a hang at the
    build (the tail of a dev case's interleaved ranks). Without that line it is one."""
    case = _case("more37a-healthy-deepspeed-import-libaio-libcufile-link-errors-cpu-adam-loads").log
    tail = case[case.index("Using /"):].splitlines()
    assert any("Time to load cpu_adam op" in ln for ln in tail) and tail[-1].startswith("Loading extension module")
    _assert_healthy("\n".join(tail) + "\n")
    d = Diagnoser().diagnose(Named("output.log", "".join(ln + "\n" for ln in tail if "Time to load" not in ln).encode()))
    assert d.verdict == "hang" and d.primary is not None and d.primary.id == "training-hang/extension-build-lock"


def test_a_gdb_backtrace_is_a_stack_dump_read_for_where_it_waits() -> None:
    """gdb attached to a live process (`bt`, no signal) is a stack dump, read like py-spy's: Horovod's rank 0
    sat in MPI_Finalize under Py_Exit, a process stuck on its way out. Near misses: the same frames under
    gdb's "received signal SIGSEGV" are a crash's backtrace; with the exit frames gone, a wait in nanosleep is
    the generic stall."""
    case = "more37e-horovod-rank0-exit-mpi-finalize-hang-gdb"
    d = _diagnose(case)
    assert d.verdict == "hang" and d.primary is not None and d.primary.id == "training-hang/exit-hang"
    log = _case(case).log
    crash = ('Thread 1 "python" received signal SIGSEGV, Segmentation fault.\n'
             "0x00007f118e20430d in nanosleep () at ../sysdeps/unix/syscall-template.S:84\n" + log)
    d = Diagnoser().diagnose(Named("output.log", crash.encode()))
    assert d.verdict == "failure" and d.primary is not None and d.primary.id.startswith("native-crash/")
    inner = "".join(ln + "\n" for ln in log.splitlines()[:4])  # "(gdb) bt" and frames #0-#2: sleep, MPI
    d = Diagnoser().diagnose(Named("output.log", inner.replace("ompi_mpi_finalize", "progress_engine").encode()))
    assert d.verdict == "hang" and d.primary is not None and d.primary.id == "training-hang/stalled-progress"


def test_a_thread_error_the_main_thread_then_died_of_did_not_go_on() -> None:
    """torch 1.7's pin-memory thread died (persistent workers, a new iteration), one more step printed, and
    the log ends inside the main thread's traceback: the process did not train on, the thread's error is why.
    Near miss: without that last traceback the step rising after the error makes it a note on a healthy log."""
    case = "more52a-donerf-pin-memory-unpack-resume"
    d = _diagnose(case)
    assert d.primary is not None and d.primary.id == "dataloader-worker-failure/pin-memory-persistent-workers-resume"
    log = _case(case).log
    _assert_healthy(log[: log.rindex("Traceback (most recent call last):")])


def test_wandbs_own_threads_dying_at_exit_are_no_failure() -> None:
    """wandb's run keeps daemon threads (IntMsgThr, ChkStopThr, NetStatThr); their tracebacks as the process
    exits, after the run's summary and sync, end nothing training waited on. Near miss: the same header for a
    thread of the project's own ("Exception in thread Thread-3 (_producer):") is still an error line."""
    case = "more16b-ok-wandb-intmsgthr-traceback-after-run-synced"
    d = _diagnose(case)
    assert d.verdict == "healthy", d.primary
    log = _case(case).log.replace("Exception in thread IntMsgThr:", "Exception in thread Thread-3 (_producer):")
    d = Diagnoser().diagnose(Named("output.log", log.encode()))
    assert d.verdict == "failure"


def test_an_error_in_a_queue_feeder_thread_loses_its_batch_whatever_prints_after() -> None:
    """A DataLoader worker's queue feeder failed to put a batch into shared memory: that batch never arrives
    and the main process waits for it for ever; the one step printed after is work already in flight. Near
    miss: the same error raised elsewhere, with the step rising after it, is a note on a healthy log."""
    case = "more32f-dlw-shm-open-graphnet-freeze"
    d = _diagnose(case)
    assert d.primary is not None and d.primary.id == "dataloader-worker-failure/fd-exhaustion"
    _assert_healthy(_case(case).log.replace("queues.py\", line 239, in _feed", "queues.py\", line 239, in put"))


def test_deepspeeds_expert_group_divisibility_assertion_is_the_parallel_layout() -> None:
    """DeepSpeed's MoE group builder asserts the world size divides by the expert-parallel size; the bare
    "4 is not divisible by 8" raised in deepspeed/utils/groups.py is the layout not fitting the GPUs (the
    library's `claims`). Near miss: the same assertion in the project's own code stays unclassified."""
    d = _diagnose("b54c-ds-moe-ep-size-gt-world")
    assert d.primary is not None and d.primary.id == "megatron-failure/parallel-layout-invalid"
    own = ("Traceback (most recent call last):\n  File \"train.py\", line 12, in <module>\n"
           "    assert n % k == 0, '{} is not divisible by {}'.format(n, k)\nAssertionError: 4 is not divisible by 8\n")
    d = Diagnoser().diagnose(Named("output.log", own.encode()))
    assert d.primary is not None and d.primary.id == "unclassified-failure/uncaught-exception"


def test_a_loss_every_evaluation_logs_as_nan_is_the_failure() -> None:
    """One NaN evaluation is a sign to read with the training loss; the same process logging `'eval_loss': nan`
    at every evaluation is a model gone non-finite (here fp16 MLM training whose logged loss stayed 0). Near
    miss: the first two of those evaluations alone stay warnings on a healthy log."""
    case = "more48a-simcsp-hf-mlm-fp16-train-loss-zero-eval-nan"
    d = _diagnose(case)
    assert d.verdict == "failure" and d.primary is not None and d.primary.id == "nan-loss/nonfinite-loss"
    lines = _case(case).log.splitlines(keepends=True)
    nan = [i for i, ln in enumerate(lines) if "'eval_loss': nan" in ln]
    assert len(nan) >= 3
    _assert_healthy("".join(lines[: nan[1] + 1]))


def test_a_gap_between_the_two_ranks_that_timed_out_is_no_silent_rank() -> None:
    """Ranks 0 and 2 of an eight-GPU LoRA run report the all-reduce timeout; nothing names rank 1, which the
    posted excerpt may simply leave out, so no rank is called the hung one: the finding is the timeout. Near
    miss: with rank 3 reporting too, most ranks speak and rank 1's silence stands out: it hung."""
    case = "more31o-firefly-chinese-alpaca2-h800-step568-allreduce-timeout"
    d = _diagnose(case)
    assert d.verdict == "failure" and d.primary is not None
    assert d.primary.id == "nccl-timeout/watchdog-timeout" and d.primary.rank is None
    log = _case(case).log
    rank2 = next(ln for ln in log.splitlines() if "[Rank 2] Watchdog" in ln)
    rank3 = rank2[rank2.index("[E ProcessGroupNCCL"):].replace("[Rank 2]", "[Rank 3]")
    d = Diagnoser().diagnose(Named("output.log", (log + rank3 + "\n").encode()))
    assert d.verdict == "hang" and d.primary is not None and d.primary.rank == 1


def test_a_projects_own_nan_guard_logged_again_and_again_is_the_failure() -> None:
    """OpenFold's guard logs "loss is NaN. Returning 0 loss..." at warning level and trains on: once, a skipped
    batch (a note on a healthy log); on three lines of the same process the model has gone non-finite."""
    line = _case("more31l-openfold-v100-loss-nan-returning-zero-then-hang").log.strip().splitlines()[0]
    assert "loss is NaN" in line
    _assert_healthy(f"step 10 loss 0.52\n{line}\nstep 11 loss 0.50\n")
    d = Diagnoser().diagnose(Named("output.log", f"step 10 loss 0.52\n{line}\n{line}\n{line}\n".encode()))
    assert d.verdict == "failure" and d.primary is not None and d.primary.id == "nan-loss/nonfinite-loss"


def test_a_ray_jobs_failed_entrypoint_is_a_failure_whatever_its_last_logs_show() -> None:
    """`ray job submit` reports the entrypoint's non-zero exit, then the job's last logs: Ray's memory monitor
    advice names the cause (the host's memory), and without it the exit alone is still a failure though the
    logs below show steps. Near miss: a job that finished successfully, with the same logs, is healthy."""
    case = "b56b-openrlhf-reinforce-ray-memory-monitor-kills-ref-actor"
    d = _diagnose(case)
    assert d.primary is not None and d.primary.id == "host-oom/oom-killer"
    lines = _case(case).log.splitlines(keepends=True)
    bare = "".join(ln for ln in lines if "out of memory issue" not in ln)
    d = Diagnoser().diagnose(Named("output.log", bare.encode()))
    assert d.verdict == "failure" and d.primary is not None and d.primary.id == "unclassified-failure/process-exited"
    ok = bare.replace("Job entrypoint command failed with exit code 1, last available logs (truncated to 20,000 chars):",
                      "Job finished successfully.").replace("ERR cli.py", "INFO cli.py")
    _assert_healthy(ok)


def test_a_traceback_indented_with_ideographic_spaces_is_read_as_one() -> None:
    """A traceback pasted through a CJK input method, its frames indented with U+3000 ("　File ..."), is read as
    Python printed it: torch.save's open for writing ("wb") failed, a missing parent directory. Near miss: the
    same frames with the open for reading ("rb", torch.load) are no save's directory."""
    case = "more48f-inpaintnet-arnn-models-dir-missing"
    log = _case(case).log
    assert "\u3000File" in log
    d = _diagnose(case)
    assert d.primary is not None and d.primary.id == "checkpoint-permission-error/missing-parent-directory"
    d = Diagnoser().diagnose(Named("output.log", log.replace('"wb"', '"rb"').encode()))
    assert d.primary is not None and d.primary.id != "checkpoint-permission-error/missing-parent-directory"
    nbsp = Diagnoser().diagnose(Named("output.log", log.replace("\u3000", "\u00a0").encode()))
    assert nbsp.primary is not None and nbsp.primary.id == "checkpoint-permission-error/missing-parent-directory"


def test_nan_warnings_a_finite_loss_follows_were_recovered_from() -> None:
    """The persistence rule's near miss: the same guard line three times, then a finite loss logged after
    them (fp16's early skipped steps), is a run that trained on: healthy."""
    line = _case("more31l-openfold-v100-loss-nan-returning-zero-then-hang").log.strip().splitlines()[0]
    _assert_healthy(f"step 10 loss 0.52\n{line}\n{line}\n{line}\nstep 11 loss 0.50\nstep 12 loss 0.49\n")


def test_an_exit_reported_without_reason_is_the_echo_of_the_exception_that_ended_the_process() -> None:
    """Ray's job status says the entrypoint exited with code 1, and the job's last logs below it hold the
    traceback that ended it: the exception is the finding, quoted, and the exit line its echo. Near miss:
    with no traceback in the logs, the exit is the finding (see the test above)."""
    lines = _case("b56b-openrlhf-reinforce-ray-memory-monitor-kills-ref-actor").log.splitlines(keepends=True)
    bare = "".join(ln for ln in lines if "out of memory issue" not in ln)
    tb = ('Traceback (most recent call last):\n  File "train_ppo_ray.py", line 412, in <module>\n    train(args)\n'
          "ValueError: num_episodes must be a multiple of rollout_batch_size\n")
    d = Diagnoser().diagnose(Named("output.log", (bare + tb).encode()))
    assert d.primary is not None and d.primary.id == "unclassified-failure/uncaught-exception"
    assert "num_episodes must be a multiple" in d.primary.evidence[0].text


def test_the_deepspeed_launchers_exit_report_names_rank_0_when_it_spawned_one_worker() -> None:
    """The DeepSpeed launcher reports the command of the last worker it spawned; "--local_rank=0" there
    means it spawned one, so that one failed. Near miss: "--local_rank=1" names no one."""
    d = _diagnose("more31a-dolly-databricks-z3-pythia28b-return-code-minus9")
    assert d.primary is not None and d.primary.id.startswith("host-oom/") and d.primary.rank == 0
    line = ("[2023-05-15 13:14:32,960] [ERROR] [launch.py:434:sigkill_handler] ['/usr/bin/python', '-u', "
            "'train.py', '--local_rank={}', '--deepspeed', 'ds.json'] exits with return code = -9\n")
    d = Diagnoser().diagnose(Named("output.log", line.format(1).encode()))
    assert d.primary is not None and d.primary.rank is None
    d = Diagnoser().diagnose(Named("output.log", line.format(0).encode()))
    assert d.primary is not None and d.primary.rank == 0


def test_a_loss_printed_with_only_spaces_before_its_figure_is_followed_for_jumps() -> None:
    """"Train loss 0.160487" (a script's own print, no colon) is a training-loss line: a jump to 10^18
    that the log ends on is a loss spike, with the diverged run (the plateau) as the other reading.
    Near misses: the same loss back down is healthy; prose ("loss 2 times") is no figure."""
    d = _diagnose("more2-loss-spike-laddernet-wrong-lr-epoch4")
    assert d.primary is not None and d.primary.id == "loss-spike/spike-detected"
    assert [a.id for a in d.alternatives][:1] == ["loss-spike/high-loss-plateau"]
    log = _case("more2-loss-spike-laddernet-wrong-lr-epoch4").log
    _assert_healthy(log.replace("Train loss 1629511453423918336.000000", "Train loss 0.152001"))
    _assert_healthy(log.replace("Train loss 1629511453423918336.000000", "Train loss 2 times the last"))


def test_a_trainer_that_ends_polling_its_rollout_server_could_not_reach_it() -> None:
    """TRL's VLLMClient logs "Server is not up yet" for each failed health check: a log that ends in them
    is a trainer that never reached `trl vllm-serve`, though every line is at INFO level. AReaL's remote
    engine says the same in its own words ("server launch failed" raised in sglang_remote.py). Near miss:
    the server comes up and the steps rise after the retries."""
    d = _diagnose("more32a-philschmid-mini-grpo-zero3-vllm-server-not-launched")
    assert d.primary is not None and d.primary.id == "vllm-rollout-failure/server-not-running"
    d = _diagnose("more41h-areal-lite-gsm8k-grpo-sglang-server-launch-failed-all-ranks")
    assert d.primary is not None and d.primary.id == "vllm-rollout-failure/server-not-running"
    retry = "2025-03-26 05:53:13 - INFO - trl.extras.vllm_client - Server is not up yet. Retrying in 2.0 seconds...\n"
    up = "2025-03-26 05:53:19 - INFO - trl.extras.vllm_client - Server is up!\n"
    bars = "".join(f"  {i}%|          | {i}/100 [00:0{i}<05:00,  1.20s/it]\n" for i in range(1, 5))
    _assert_healthy(retry * 3 + up + bars)


def test_apple_mps_backend_limits_are_named_ahead_of_the_abort_they_cause() -> None:
    """Metal Performance Shaders' own assertion ("MPSNDArray.mm:...: failed assertion") aborts the process
    with no Python traceback: the assertion is the cause, the shell's "Abort trap: 6" its echo. An
    operator the MPS backend lacks names itself. Near miss: the fallback's warning is not a failure."""
    d = _diagnose("more31n-admotiondirector-m2-mpsndarray-slice-assert-abort-trap")
    assert d.primary is not None and d.primary.id == "device-backend-unsupported/mps-internal-error"
    d = _diagnose("more35e-kraken-ketos-train-mps-ctc-loss-not-implemented")
    assert d.primary is not None and d.primary.id == "device-backend-unsupported/mps-op-not-implemented"
    _assert_healthy("step 1 loss 0.9\nUserWarning: The operator 'aten::sgn.out' is not currently supported on the "
                    "MPS backend and will fall back to run on the CPU.\nstep 2 loss 0.8\nstep 3 loss 0.7\n"
                    "Training completed.\n")


def test_a_chat_template_that_masks_every_sample_is_the_failure_once_it_persists() -> None:
    """LLaVA's "WARNING: tokenization mismatch: 58 vs. 57. (ignored)" masks that sample's labels: printed
    for sample after sample, nothing trains (the cause's `persists`). Near misses: one or two odd samples,
    and the warnings followed by a real, non-zero loss, are healthy."""
    d = _diagnose("more35c-llava-llama3-wrong-preprocess-version")
    assert d.primary is not None and d.primary.id == "training-config-error/conversation-template-mismatch"
    warn = "WARNING: tokenization mismatch: {} vs. {}. (ignored)\n"
    steps = "".join(f"{{'loss': 1.{9 - i}2, 'learning_rate': 2e-05, 'epoch': 0.0{i}}}\n" for i in range(1, 5))
    _assert_healthy(steps + warn.format(58, 57) + warn.format(66, 65) + steps)
    _assert_healthy("".join(warn.format(58 + i, 57 + i) for i in range(4)) + steps)


def test_what_the_device_runtime_prints_below_an_unknown_exception_is_its_detail() -> None:
    """torch_npu raises "NPU error, error code is 107020" and CANN then prints what failed ("hccl fftsplus
    task timeout occurred"): the lines right below the exception, in its own process, are its detail, and
    what they name leads. Near miss: the same timeout from another rank is a later failure the exception
    may have caused; the exception still leads."""
    d = _diagnose("more41e-npu-3node-910b-main-process-first-barrier-hccl-exec-timeout")
    assert d.primary is not None and d.primary.id == "nccl-timeout/watchdog-timeout"
    tb = ("[rank0]: Traceback (most recent call last):\n"
          '[rank0]:   File "train.py", line 9, in <module>\n'
          "[rank0]:     dist.barrier()\n"
          "[rank0]: RuntimeError: npuSynchronizeDevice:torch_npu/csrc/core/npu/NPUStream.cpp:363 NPU error, error "
          "code is 107020\n")
    detail = ("[rank{}]: EI9999: The error from device(chipId:0, dieId:0), serial number is 1, hccl fftsplus task "
              "timeout occurred during task execution, stream_id:4, sq_id:4, task_id:5, timeout:1836.\n")
    led = {rank: Diagnoser().diagnose(Named("output.log", (tb + detail.format(rank)).encode())).primary
           for rank in (0, 1)}
    assert {rank: p.id if p else None for rank, p in led.items()} == {
        0: "nccl-timeout/watchdog-timeout", 1: "unclassified-failure/uncaught-exception"}


def test_a_worker_killed_by_sigterm_is_not_read_as_the_oom_killer() -> None:
    """The OOM killer sends SIGKILL only: a worker "killed by signal: Terminated" (a tuner's DDP job torn
    down) stays a kill whose sender was a scheduler, a launcher or a person, with no OOM reading."""
    d = _diagnose("more7a-dlw-killed-sigterm-ultralytics-tuner-ddp")
    assert d.primary is not None and d.primary.id == "dataloader-worker-failure/worker-killed", d.primary
    assert "OOM killer" not in d.primary.why
    # Near miss: the same message with SIGKILL leads with the worker's OOM kill.
    d = _diagnose("dlw-killed-memory-leak-rlvigen")
    assert d.primary is not None and d.primary.id == "dataloader-worker-failure/worker-oom", d.primary


def test_old_torch_wordings_of_a_device_mismatch_are_a_device_mismatch() -> None:
    """torch 1.1's TensorIterator said "expected backend CPU and dtype Float but got backend CUDA": Adam's
    state restored on the CPU while the model trained on the GPU. Another dtype on the same device is not."""
    d = _diagnose("b65c-schnetpack-qm9-restart-cuda-adam-state-backend-cpu")
    assert d.primary is not None and d.primary.id == "device-mismatch/tensors-on-different-devices"
    near = ("backend CPU and dtype Float but got backend CUDA", "backend CUDA and dtype Float but got backend CUDA")
    assert _primary_if_changed("b65c-schnetpack-qm9-restart-cuda-adam-state-backend-cpu", near) not in (
        None, "device-mismatch/tensors-on-different-devices")


def test_a_deepspeed_op_whose_link_fails_is_its_build_failure_before_the_extension_error() -> None:
    """ninja's "FAILED: cpu_adam.so" and the linker's "cannot find -lcurand": the paste stops at torch's
    CalledProcessError, before DeepSpeed's "Error building extension 'cpu_adam'"; a project's own
    extension failing the same way is not DeepSpeed's op."""
    case_id = "b65c-ds-cpu-adam-ld-cannot-find-lcurand-symlink-torch-lib"
    d = _diagnose(case_id)
    assert d.primary is not None and d.primary.id == "deepspeed-failure/op-build-failure"
    assert _primary_if_changed(case_id, ("cpu_adam", "my_kernels")) not in (None, "deepspeed-failure/op-build-failure")


def test_a_nan_step_its_process_trained_past_is_not_the_failure() -> None:
    """Every loss NaN to the end is the failure (a real run, the dev case); one NaN step, then two steps
    with finite losses, is a skipped step (HF Trainer's bar and log dict, as it prints them). A loss of
    exactly 0 after it is no sign: the Trainer logs a NaN step's loss as 0."""
    d = _diagnose("more31h-torchao-float8-rowwise-lora-nan-zero-scale")
    assert d.primary is not None and d.primary.id == "nan-loss/nonfinite-loss"
    lines = ["{'loss': 1.9, 'grad_norm': 3.1, 'learning_rate': 2e-05, 'epoch': 0.0}"]
    for step, loss in enumerate(("nan", "1.7", "1.6"), start=1):
        lines.append(f"  {step}%|▏         | {step}/100 [00:1{step}<08:12,  2.49s/it]"
                     f"{{'loss': {loss}, 'grad_norm': {loss}, 'learning_rate': 4e-05, 'epoch': 0.0{step}}}")
    went_on = "\n".join(lines) + "\n"
    assert Diagnoser().diagnose(Named("output.log", went_on.encode())).verdict == "healthy"
    zeros = went_on.replace("'loss': 1.7", "'loss': 0.0").replace("'loss': 1.6", "'loss': 0.0")
    d = Diagnoser().diagnose(Named("output.log", zeros.encode()))
    assert d.primary is not None and d.primary.id == "nan-loss/nonfinite-loss"


def test_a_layout_the_pin_thread_cannot_pin_is_not_a_failed_allocation() -> None:
    """The pin-memory thread's NotImplementedError (a sparse CSR batch: no _pin_memory kernel for it) is
    a batch that cannot be pinned; the same thread re-raising a RuntimeError stays what it was."""
    case_id = "b68b-dlw-pin-thread-sparse-csr-notimplemented"
    d = _diagnose(case_id)
    assert d.primary is not None and d.primary.id == "pinned-memory-failure/pin-non-cpu-tensor"
    near = ("NotImplementedError: Caught NotImplementedError", "RuntimeError: Caught RuntimeError")
    assert _primary_if_changed(case_id, near) not in (None, "pinned-memory-failure/pin-non-cpu-tensor")


@pytest.mark.parametrize("case_id", [
    "more50c-semseg-second-concurrent-run-same-a100-tcpstore-address-in-use",  # the script's "Global Rank: 0"
    "more32b-vits-train-ms-spawn-rank0-device-assert-nccl-unhandled-cuda",  # c10d's "Process Group destroyed on rank 0"
])
def test_an_unprefixed_log_whose_process_says_its_rank_is_that_ranks(case_id: str) -> None:
    """No rank prefix anywhere, one process saying which rank it is: its failure is that rank's. A second
    rank saying so in the same input (each Lightning rank prints its own GLOBAL_RANK) leaves it open."""
    d = _diagnose(case_id)
    assert d.primary is not None and d.primary.rank == 0
    two = "Initializing distributed: GLOBAL_RANK: 1, MEMBER: 2/2\n" + _case(case_id).log
    d = Diagnoser().diagnose(Named("output.log", two.encode()))
    assert d.primary is not None and d.primary.rank is None


def test_a_connection_reset_raised_by_a_store_operation_is_the_store_lost() -> None:
    """torch 1.x's bare "RuntimeError: Connection reset by peer", raised in init_process_group's
    store-based barrier (store.add) after the process hosting the store exited, is the store lost; the
    same error raised from another call (a data client's socket) stays a reset connection."""
    case_id = "b69b-hx-launch-wrong-attempt-2node-worker-node-store-reset"
    d = _diagnose(case_id)
    assert d.primary is not None and d.primary.id == "peer-connection-lost/store-lost"
    changed = _primary_if_changed(case_id, ("store.add(store_key, 0)", "sock.recv(4096)"),
                                  ("_store_based_barrier", "fetch_batch"))
    assert changed not in (None, "peer-connection-lost/store-lost")


def test_a_rank_s_bare_abort_after_a_watchdog_timeout_is_that_watchdog_s_teardown() -> None:
    """NCCL's watchdog ends the process with SIGABRT once it fires (`aborts_process`): a rank torchrun then
    reports dead of signal 6, with no message of its own, died of the timeout, not of a native crash of its
    own. It printed no timeout, so it stays the rank to look at (it was stuck, not waiting)."""
    d = _diagnose("dist-nccl1438-syncbn-allreduce-timeout")
    assert d.primary is not None and d.primary.id == "nccl-timeout/watchdog-timeout" and d.primary.rank == 1
    assert "die of SIGABRT after the others' timeouts" in d.primary.why
    # the unprefixed traceback's exception names rank 0 in its own words: it is that traceback's exception
    [scan] = Diagnoser().scan(Named("output.log", _case("dist-nccl1438-syncbn-allreduce-timeout").log.encode()))
    assert scan.tracebacks[0].exceptions[0].startswith("RuntimeError: NCCL communicator was aborted on rank 0")
    assert scan.tracebacks[0].rank == 0
    # near misses: a gloo timeout, whose watchdog aborts nothing; the death reported before the timeout
    gloo = ("NCCL communicator was aborted on rank 0.  Original reason for failure was: [Rank 0] Watchdog caught "
            "collective operation timeout: WorkNCCL(SeqNum=35582, OpType=ALLREDUCE, Timeout(ms)=1800000) ran for "
            "1800366 milliseconds before timing out.",
            "[../third_party/gloo/gloo/transport/tcp/unbound_buffer.cc:84] Timed out waiting 1800000ms for recv "
            "operation to complete")
    assert _primary_if_changed("dist-nccl1438-syncbn-allreduce-timeout", gloo) == "native-crash/abort"
    log = _case("dist-nccl1438-syncbn-allreduce-timeout").log.splitlines()
    death = next(i for i, ln in enumerate(log) if "exitcode: -6" in ln)
    early = "\n".join([log[death], *log[:death], *log[death + 1:]])
    d = Diagnoser().diagnose(Named("output.log", early.encode()))
    assert d.primary is not None and d.primary.id == "native-crash/abort"


def test_a_rank_stuck_until_its_watchdog_aborted_it_is_named_over_where_the_waiting_ranks_stood() -> None:
    # six ranks time out in two collectives; rank 5 printed no timeout and torchrun saw it die of SIGABRT
    d = _diagnose("more52b-llava-rank5-index-assert-abort-others-timeout")
    assert d.primary is not None and d.primary.id == "nccl-timeout/watchdog-timeout" and d.primary.rank == 5


def test_a_class_the_checkpoint_s_unpickler_cannot_find_is_a_pickled_class_missing() -> None:
    """"Can't get attribute 'Net' on <module '__main__'>" raised inside torch.load's unpickler is a whole
    model pickled by a script and read by another (the library's `claims`); the same words raised in a
    spawned DataLoader worker's bootstrap are a dataset the worker cannot import."""
    d = _diagnose("more45h-pytorch-cifar-resume-cant-get-attribute-net")
    assert d.primary is not None and d.primary.id == "checkpoint-load-mismatch/pickled-class-missing"
    spawned = ('File "/usr/lib/python3.6/multiprocessing/spawn.py", line 115, in _main',
               "self = reduction.pickle.load(from_parent)")
    assert _primary_if_changed(
        "more45h-pytorch-cifar-resume-cant-get-attribute-net",
        ('File "/home/user/lib/python3.6/site-packages/torch/serialization.py", line 379, in _load', spawned[0]),
        ("result = unpickler.load()", spawned[1])) == "dataloader-worker-failure/spawn-unpicklable-object"


@pytest.mark.parametrize(("case_id", "cause"), [
    ("more23a-torch031-conv2d-cudnn-status-internal-error", "cudnn-error/internal-error"),
    ("b73e-video-recognition-c3d-backward-cudnn-mapping-error", "cudnn-error/mapping-error"),
    ("b73e-stylegan2-size1024-conv-transpose-grouped-cudnn-not-supported", "cudnn-error/not-supported"),
])
def test_a_cudnn_status_names_what_cudnn_could_not_do(case_id: str, cause: str) -> None:
    """torch 0.3's bare status, 0.4's "CuDNN error:" and 1.x's "cuDNN error:" name the same causes; cuDNN 9's
    allocation sub-codes are out-of-memory, and a refused plan that torch 2.3+ only warns about is no failure."""
    d = _diagnose(case_id)
    assert d.primary is not None and d.primary.id == cause
    line = next(ln for ln in _case(case_id).log.splitlines() if "CUDNN_STATUS_" in ln and "Error" in ln)
    alloc = line.replace(line[line.index("CUDNN_STATUS_"):], "CUDNN_STATUS_INTERNAL_ERROR_DEVICE_ALLOCATION_FAILED")
    assert _primary_if_changed(case_id, (line, alloc)) == "cuda-out-of-memory/cublas-alloc"


def test_a_refused_cudnn_plan_that_torch_warns_about_is_not_a_cudnn_failure() -> None:
    assert _diagnose("more33d-healthy-yolov8-cudnn-plan-failed-backward-warning").verdict == "healthy"


@pytest.mark.parametrize("case_id", [
    "b73c-healthy-torchelastic-nccl-error-worker-restart-frameworkcontroller",
    "more32j-healthy-nemo-resiliency-demo-crash-step17-in-job-restart-succeeded",
])
def test_an_error_the_launcher_restarted_the_workers_from_is_a_note_when_they_trained_on(case_id: str) -> None:
    """torch elastic's agent with restarts left says "will restart worker group"; the new workers' rising
    steps show the run recovered. With the restart line gone, or the log cut before the new workers trained,
    the error ended the run."""
    d = _diagnose(case_id)
    assert d.verdict == "healthy"
    assert any("restarted the worker group" in n for n in d.notes)
    log = _case(case_id).log.splitlines()
    at = next(i for i, ln in enumerate(log) if "will restart worker group" in ln)
    gone = "\n".join(ln for i, ln in enumerate(log) if i != at)
    cut = "\n".join(log[:at + 1])
    for text in (gone, cut):
        assert Diagnoser().diagnose(Named("output.log", text.encode())).verdict == "failure"


def test_a_directory_os_mkdir_cannot_make_is_a_missing_parent_directory() -> None:
    """os.mkdir raising FileNotFoundError means the directory above the one to make is missing; the same error
    raised while listing a directory is a path that is not there, nothing more."""
    case_id = "b73i-cosci-gan-results-dir-mkdir-parent-missing"
    d = _diagnose(case_id)
    assert d.primary is not None and d.primary.id == "checkpoint-permission-error/missing-parent-directory"
    assert _primary_if_changed(case_id, ("os.mkdir(f'./Results/{full_name}/')", "os.listdir(f'./Results/{full_name}/')")
                               ) == "unclassified-failure/uncaught-exception"


@pytest.mark.parametrize("case_id", [
    "more31j-run-glue-gpt2-mnli-tokenizer-no-pad-token",
    "b73p-securellmalign-hf-trainer-tokenizer-without-pad-token-first-batch",
])
def test_a_tokenizer_without_a_pad_token_is_named_even_inside_a_dataloader_worker(case_id: str) -> None:
    """transformers' "Asking to pad but the tokenizer does not have a padding token" names the cause whether the
    main process or a DataLoader worker's collate raised it; another ValueError in that worker is the worker's."""
    d = _diagnose(case_id)
    assert d.primary is not None and d.primary.id == "hf-trainer-failure/tokenizer-without-pad-token"
    if case_id.startswith("b73p"):
        assert _primary_if_changed(case_id, ("Asking to pad but the tokenizer does not have a padding token",
                                             "Asking to pad but the tokenizer was given a bad length")
                                   ) == "dataloader-worker-failure/getitem-exception"


@pytest.mark.parametrize("case_id", [
    "more31o-qwen7b-single-gpu-lora-output-dir-required",
    "more37d-sambanova-dataparallel-measure-perf-unrecognized-ws-arg",
    "more34w-chatglm-efficient-tuning-argparse-fp16-truthy",
])
def test_a_parser_refusing_the_command_line_is_an_invalid_argument(case_id: str) -> None:
    """argparse's "prog: error: ..." in its own words (and HfArgumentParser's, jsonargparse's) names the cause; the
    launcher's "--local-rank=N" of torch 2.0 refused by a 1.x script stays the version break it is."""
    d = _diagnose(case_id)
    assert d.primary is not None and d.primary.id == "cli-error/invalid-arguments"


def test_the_launchers_hyphenated_local_rank_refused_is_a_version_break_not_a_typo() -> None:
    d = _diagnose("more45e-tecogan-launch-local-rank-hyphen-unrecognized")
    assert d.primary is not None and d.primary.id == "dependency-version-mismatch/api-changed"


def test_a_setup_steps_bar_after_an_error_is_no_training_going_on() -> None:
    # A Ray actor's init raised; the other actors' "Loading checkpoint shards: 100%| 4/4" bars came after: they
    # count shards loaded, not steps trained, and the error still ended the run.
    case = "more37b-verl-spin-sglang-broadcast-no-backend-for-cpu"
    assert _diagnose(case).verdict == "failure"
    # (near miss: the same bar as the training loop's, which did go on after the error)
    assert _primary_if_changed(case, ("Loading checkpoint shards:", "Training:")) is None


def test_a_shape_error_raised_in_the_datasets_code_is_the_datasets_exception() -> None:
    # The same words raised in a dataset's __getitem__ (a crop that came out empty): the dataset's bug, which
    # the wrapper names, not the model's (the wrapper keeps model-code mistakes as its own).
    case = "more44a-openpose-coco-loader-crop-zero-width-broadcast"
    assert _diagnose(case).primary.id == "dataloader-worker-failure/getitem-exception"
    # (near miss: a cause of another kind inside the same traceback is still what the wrapper wraps)
    assert _primary_if_changed(case, (
        "ValueError: could not broadcast input array from shape (219,0,3) into shape (219,262,3)",
        "OSError: [Errno 24] Too many open files")) not in (None, "dataloader-worker-failure/getitem-exception")


def test_a_mid_run_cuda_unknown_error_is_read_with_what_threads_found_behind_it() -> None:
    # "terminate called ... c10::Error" carrying "CUDA error: unknown error" after 5700 steps: judged by the
    # error it carries (cudaErrorUnknown), led by what resolved threads found behind it (measured on dev).
    case = "b73e-3dgrut-train-step5700-cuda-unknown-error-terminate"
    d = _diagnose(case)
    named = [d.primary.id, *(a.id for a in d.alternatives)]
    assert "cuda-illegal-memory-access/unknown-error" in named[:2]
    assert not d.primary.id.startswith("native-crash/")
    # (near miss: another sticky CUDA error in the same place is that error's)
    assert _primary_if_changed(case, ("CUDA error: unknown error", "CUDA error: an illegal memory access was encountered")) == (
        "cuda-illegal-memory-access/illegal-address")


def test_the_shells_prompt_below_an_unfinished_bar_is_an_exit_mid_training() -> None:
    # YOLOv9 on Windows: its bar ("| 0/402 00:20", YOLOv5's own bar format) and then PowerShell's prompt: the
    # program returned to the shell in its first epoch and printed nothing.
    case = "more32g-yolov9-windows-first-epoch-silent-exit"
    d = _diagnose(case)
    assert d.verdict == "failure" and d.primary.id == "unclassified-failure/process-exited"
    assert "exit status" in d.primary.why
    # (near misses: no prompt, the log merely ends; the bar at its end, the loop finished)
    assert _primary_if_changed(case, ("PS D:\\Coding\\yolov9>", "")) is None
    assert _primary_if_changed(case, ("| 0/402 00:20", "| 402/402 05:20")) is None


def test_safetensors_saving_into_a_missing_folder_is_a_missing_parent_directory() -> None:
    case = "b74e-rsnodes-ltxv-lora-interrupt-save-final-safetensors-enoent"
    assert _diagnose(case).primary.id == "checkpoint-permission-error/missing-parent-directory"
    # (near miss: the same writer out of space is a full disk)
    assert _primary_if_changed(case, ("I/O error: No such file or directory (os error 2)",
                                      "I/O error: No space left on device (os error 28)")) == "disk-full/no-space-left"


def test_ultralytics_last_epoch_line_says_the_run_finished() -> None:
    # YOLOv8's plotting thread died of a NaN box ("Exception in thread Thread-54 (plot_images)"), and the trainer
    # then printed "25 epochs completed in 0.409 hours.": a helper thread's death in a run that finished.
    case = "b74b-healthy-comicbubbles-yolov8-plot-thread-nan-train-finishes"
    assert _diagnose(case).verdict == "healthy"
    # (near miss: without the trainer's last word, the thread's traceback is still reported)
    assert _primary_if_changed(case, ("25 epochs completed in 0.409 hours.", "")) is not None


def test_a_metric_named_error_is_a_reading_not_an_error_line() -> None:
    # The validation's summary "Rotation Error (deg): 62.79" after the DataLoader's ignored teardown errors.
    case = "b74b-healthy-rcvpose-colab-validation-child-process-assert"
    assert _diagnose(case).verdict == "healthy"
    # (near miss: the same words with no reading, an error line at the log's end)
    assert _primary_if_changed(case, ("Rotation Error (deg): 62.79", "Rotation Error (deg): solver failed")) == (
        "unclassified-failure/error-lines")


@pytest.mark.parametrize(("case_id", "cause"), [
    # NumPy's wording of the mistake: "could not broadcast input array from shape (97,) into shape (112,)"
    ("b73h-frcenv-sb3-reset-obs-97-into-112-lidar-misses-dropped", "tensor-shape-mismatch/incompatible-shapes"),
    # transformers' "Can't load the model for <id>" (the weights could not be fetched)
    ("b74b-deepsink-unsloth-hf-transfer-download-failed", "hf-trainer-failure/model-not-found"),
    # DTensor's dispatcher refusing an op that mixes the two, the message alone on its line
    ("more32o-fsdp2-tutorial-embedding-mixed-tensor-dtensor", "fsdp-failure/mixed-tensor-dtensor"),
    # the Lightning Trainer refusing its model: the class itself passed, or a model of the other package
    ("b74b-nugraph3da-lightning-fit-class-not-instance", "lightning-failure/not-a-lightning-module"),
    ("more32i-lag-llama-finetune-not-lightningmodule-two-packages", "lightning-failure/not-a-lightning-module"),
    # transformers' bitsandbytes quantizer refusing a device map that spilled modules to the CPU
    ("b74b-mistral-unsloth-t4-4bit-modules-dispatched-cpu", "cuda-out-of-memory/model-does-not-fit"),
    # mmcv's compiled ops missing (mmcv-lite, or a source install without them): the package, not its API
    ("more33f-mo3tr-train-mmcv-ext-missing", "dependency-version-mismatch/module-missing"),
])
def test_a_frameworks_own_wording_names_its_cause(case_id: str, cause: str) -> None:
    assert _diagnose(case_id).primary.id == cause


def test_a_refusal_to_pickle_inside_torch_save_is_not_a_spawned_workers() -> None:
    # torch.save's pickler refusing wandb.watch's hook lambda: the checkpoint's content, no DataLoader worker
    case = "b74a-etomnet-torch-save-wandb-watch-hook-lambda"
    assert _diagnose(case).primary.id == "unclassified-failure/uncaught-exception"
    # (near miss: the same refusal raised by multiprocessing's pickler as a worker starts)
    assert _primary_if_changed(case, ("pickler.dump(obj)", "ForkingPickler(file, protocol).dump(obj)"),
                               ("serialization.py", "reduction.py")) == "dataloader-worker-failure/spawn-unpicklable-object"


def test_a_root_cause_sigterm_the_launcher_did_not_send_is_that_ranks_own_failure() -> None:
    # torchrun's root cause is rank 0 dead of signal 15, yet the agent got no death signal and signalled
    # only the other three pids, after: something outside stopped rank 0
    case = "b74g-poster-gen-torchrun-4gpu-rank0-sigterm-exitcode-minus15-epoch1"
    d = _diagnose(case)
    assert (d.primary.id, d.primary.rank) == ("unclassified-failure/process-exited", 0)
    assert any("SIGTERM" in m.fact for m in d.primary.missing)
    # (near misses: the agent itself received the death signal, or it signalled rank 0's pid too)
    assert _primary_if_changed(case, ("E0415 18:06:54.863000 206745", "W0415 18:06:53.800000 206745 site-packages/"
                                      "torch/distributed/elastic/agent/server/api.py:704] Received Signals.SIGTERM "
                                      "death signal, shutting down workers\nE0415 18:06:54.863000 206745")) != (
        "unclassified-failure/process-exited")
    assert _primary_if_changed(case, ("Sending process 206845 closing", "Sending process 206843 closing")) != (
        "unclassified-failure/process-exited")


def test_a_train_split_of_no_sample_is_a_failure_though_its_epochs_run_on() -> None:
    # torchreid's statistics table: the train row counts no identity and no image; 150 epochs of loss 0 follow
    case = "b74g-sdfnet-reid-train-subset-zero-images-loss-zero-150-epochs"
    assert _diagnose(case).primary.id == "training-config-error/empty-dataset"
    # (near miss: the same table with the train row filled, a run that trained)
    assert _primary_if_changed(case, ("train    |     0 |        0 |", "train    |   298 |     2311 |")) != (
        "training-config-error/empty-dataset")


def test_a_process_stopped_while_making_its_store_was_waiting_to_reach_it() -> None:
    """Ctrl-C on a DDP start that never got past init_process_group: the spawned process's stack ends in the
    rendezvous (`next(rendezvous_iterator)`), which waits for MASTER_ADDR:MASTER_PORT to answer."""
    case = "more26a-spawn-find-free-port-per-rank-init-process-group-hang"
    d = _diagnose(case)
    assert d.primary is not None and d.primary.id == "rendezvous-failure/store-unreachable"
    assert "init_process_group" in d.primary.evidence[0].text
    # Near misses: the same stop inside init_process_group's store-based barrier is a wait for other ranks;
    # in a function of the training script, no rendezvous at all.
    barrier = _primary_if_changed(case, ("    store, rank, world_size = next(rendezvous_iterator)",
                                         "    _store_based_barrier(rank, store, timeout)\n"
                                         '  File "/x/torch/distributed/distributed_c10d.py", line 231, in '
                                         "_store_based_barrier\n    worker_count = store.add(store_key, 0)"))
    assert barrier == "nccl-timeout/store-barrier-timeout"
    assert _primary_if_changed(case, ("in init_process_group", "in build_model")) != \
        "rendezvous-failure/store-unreachable"


@pytest.mark.parametrize("case_id", ["b80b-rllm-deepscaler-ray-worker-cannot-find-lcuda",
                                     "b80b-segzero-triton-cuda-utils-cannot-find-lcuda"])
def test_a_launcher_stub_that_cannot_link_the_driver_library_is_a_missing_cuda_library(case_id: str) -> None:
    """Triton links its launcher with -lcuda; with no unversioned libcuda.so on the linker's path every kernel
    fails to build, and the traceback that follows is torch.compile's or Ray's, not the cause."""
    d = _diagnose(case_id)
    assert d.primary is not None and d.primary.id == "missing-cuda-libraries/library-not-found"
    assert "-lcuda" in d.primary.evidence[0].text
    # Near miss: the CUDA runtime (-lcudart) an extension build did not find is not the driver library.
    assert _primary_if_changed(case_id, ("-lcuda\n", "-lcudart\n")) != "missing-cuda-libraries/library-not-found"


def test_a_loader_thread_the_os_refused_is_a_thread_limit_not_a_loader_failure() -> None:
    """The DataLoader's queue feeder thread could not start: pthread_create met the user's or container's task
    limit, which is the cause however deep in the loader's shutdown the traceback ends."""
    case = "more35g-py312-shutdown-workers-cant-start-thread"
    d = _diagnose(case)
    assert d.primary is not None and d.primary.id == "host-resource-limit/thread-creation-failed"
    # Near miss: another RuntimeError raised at the same place is not a thread the OS refused.
    assert _primary_if_changed(case, ("can't start new thread", "cannot schedule new futures")) != \
        "host-resource-limit/thread-creation-failed"


def test_an_ssh_client_that_reached_no_sshd_is_the_launcher_failing_to_start_a_host() -> None:
    """The DeepSpeed launcher (and its autotuner) starts every host's processes through pdsh and ssh, localhost
    included: OpenSSH's own "connect to host ... port 22: Connection refused" is the whole log of a run that
    never started."""
    case = "b81a-deepspeed-autotuning-pdsh-localhost-ssh-refused"
    d = _diagnose(case)
    assert d.verdict == "failure" and d.primary is not None
    assert d.primary.id == "deepspeed-failure/multinode-launch-failure"
    # Near miss: the c10d store's client socket refused is the rendezvous, not ssh.
    assert _primary_if_changed(case, ("localhost: ssh: connect to host localhost port 22: Connection refused",
                                      "torch.distributed.DistNetworkError: The client socket has failed to connect "
                                      "to [localhost]:29500 (errno: 111 - Connection refused).")) != \
        "deepspeed-failure/multinode-launch-failure"


@pytest.mark.parametrize("case_id", ["b83a-inductor-kernel-image-invalid-old-driver-ptxas",
                                     "b83a-triton-nightly-kernel-image-invalid-driver470"])
def test_a_kernel_image_the_driver_cannot_load_is_a_driver_older_than_the_compiler(case_id: str) -> None:
    """Triton ships its own ptxas: what it builds for a newer CUDA than the driver's fails to load ("device kernel
    image is invalid"), under torch.compile's BackendCompilerFailed or alone."""
    d = _diagnose(case_id)
    assert d.primary is not None and d.primary.id == "cuda-driver-mismatch/driver-too-old"
    # Near miss: no kernel image for the GPU's architecture is the wheel's arch list, not the driver.
    assert _primary_if_changed(case_id, ("device kernel image is invalid",
                                         "no kernel image is available for execution on the device")) != \
        "cuda-driver-mismatch/driver-too-old"


@pytest.mark.parametrize("case_id", ["b83a-llama-recipes-fsdp-4bit-cannot-flatten-integer",
                                     "more52e-axolotl-8bit-dora-fsdp-cannot-flatten-integer"])
def test_quantized_weights_in_an_fsdp_flat_parameter_are_their_own_cause(case_id: str) -> None:
    """bitsandbytes keeps 4-bit and 8-bit weights in integer storage, which FSDP1 cannot flatten: the fix is the
    quantized storage's dtype, not the float dtypes a uniformity error asks to align."""
    d = _diagnose(case_id)
    assert d.primary is not None and d.primary.id == "fsdp-failure/quantized-integer-params"
    # Near miss: the float dtypes mixed in one unit are the uniformity check.
    assert _primary_if_changed(case_id, ("Cannot flatten integer dtype tensors",
                                         "Must flatten tensors with uniform dtype but got torch.bfloat16 and "
                                         "torch.float32")) == "fsdp-failure/flat-param-uniformity"


def test_a_gradient_returned_on_another_device_is_a_device_mismatch() -> None:
    """Autograd checks every gradient a backward function returns against what forward saw: a tensor that was on
    the CPU in forward and gets its gradient on the XPU (or another GPU) is a device mismatch in the model's code,
    in the older wording that prints the whole TensorOptions as in the newer "expected device ... but got ..."."""
    # Near miss: the same check on a gradient's dtype alone, on one device, is no device mismatch.
    _named_not_near("b83a-ipex-xpu-mulbackward-invalid-gradient-device", "device-mismatch/tensors-on-different-devices",
                    ("device=xpu:0", "device=cpu"),
                    ("but got TensorOptions(dtype=float", "but got TensorOptions(dtype=double"))


def test_early_stopping_without_a_best_model_is_an_invalid_argument_combination() -> None:
    """EarlyStoppingCallback keeps the best checkpoint by an evaluated metric: it asserts load_best_model_at_end,
    metric_for_best_model and an evaluation strategy before the first step."""
    # Near miss: another library's callback of the same name asking for something else.
    _named_not_near("b84a-axolotl-earlystop-needs-load-best", "hf-trainer-failure/invalid-training-arguments",
                    ("requires load_best_model_at_end = True", "requires a VecEnv."))


def test_a_resume_message_cut_before_its_path_is_still_a_missing_checkpoint() -> None:
    # The poster pasted "Can't find a valid checkpoint" and a question of their own, without the path.
    # Near miss: the words running on into another word are no such message.
    _named_not_near("b84a-medicalgpt-lora-no-checkpoint", "hf-trainer-failure/checkpoint-not-found",
                    ("checkpoint   ", "checkpointing "))


@pytest.mark.parametrize("case_id", ["b85a-mmcv-139-below-required-range-tuple",
                                     "b85a-mmdet-mmcv-114-below-min-version-assert"])
def test_an_openmmlab_package_refusing_the_installed_mmcv_is_a_version_mismatch(case_id: str) -> None:
    """mmdet, mmseg and their kin assert at import that the installed mmcv lies in the range they were released
    with, whether they print the bounds as versions or as digit_version tuples."""
    # Near miss: a line that names the installed MMCV without the assertion's verdict.
    _named_not_near(case_id, "dependency-version-mismatch/api-changed",
                    ("is used but incompatible. Please install mmcv", "is installed. See mmcv"))


def test_an_inplace_modification_message_wrapped_by_its_paste_is_still_named() -> None:
    """The posted message breaks before "by an inplace operation"; its first half names the mechanism."""
    # Near miss: the same words run on into another verb are no autograd version check.
    _named_not_near("b87c-pytorch-ddp-bn-two-forwards-inplace", "autograd-error/inplace-modification",
                    ("has been modified", "has been moved"))


def test_a_broadcast_size_message_cut_before_its_dimension_is_still_a_shape_mismatch() -> None:
    # The paste ends at "at non-singleton dimension"; the two sizes already say which shapes disagree.
    # Near miss: the sizes gone, no shapes are named.
    _named_not_near("b85a-bcp-acdc-self-train-mask-batch-shape-mismatch", "tensor-shape-mismatch/incompatible-shapes",
                    ("tensor a (18) must match the size of tensor b (6)", "tensor a must match the size of tensor b"))


def test_fsdp_s_flat_param_handle_refusing_a_tensor_off_its_compute_device_is_device_placement() -> None:
    """FlatParamHandle checks each tensor it unshards is on the handle's compute device (torch 1.13-2.15)."""
    # Near miss: the handle's other check, that an offloaded shard is on the CPU, names no compute device.
    _named_not_near("b90a-fsdp-no-set-device-expects-compute-device-cuda1", "fsdp-failure/device-placement",
                    ("to be on the compute device cuda:1", "to be on CPU but got cuda:1"))


@pytest.mark.parametrize("case_id", ["b91b-dcface-stack-mismatch-variable-crops",
                                     "b91b-monai-randcropsamples-collate-stack-mismatch"])
def test_samples_of_different_sizes_failing_the_default_collate_are_the_dataset_s(case_id: str) -> None:
    """torch.stack's 'stack expects each tensor to be equal size' is the default collate's in nearly every real log,
    with no frame of the DataLoader when a paste keeps only the message (or a framework reformats it)."""
    # Near miss: stack's other refusal, of an empty list, is no pair of unequal samples.
    _named_not_near(case_id, "dataloader-worker-failure/getitem-exception",
                    ("stack expects each tensor to be equal size", "stack expects a non-empty TensorList"))


@pytest.mark.parametrize("case_id", [
    "b89c-deepspeed-gptj-stage2-cpu-adam-return-code-9",  # memory report, "Killing subprocess", cut ERROR line
    "b89c-llamafactory-baichuan2-13b-save-step-killing-subprocess",  # progress bar, then the teardown
])
def test_a_worker_that_died_without_a_word_under_its_launcher_is_read_as_the_oom_killer(case_id: str) -> None:
    d = _diagnose(case_id)
    assert d.primary is not None and d.primary.id == "host-oom/oom-killer"
    # (a reading, not a record: the signal and the silent death are the next readings, the exit code is asked)
    assert [a.id for a in d.alternatives[:2]] == ["host-oom/sigkill", "launcher-teardown/silent-worker-death"]
    assert any("exit code" in m.fact for m in d.primary.missing)
    assert d.primary.confidence < 0.8


def test_a_launcher_stopping_its_workers_on_a_signal_of_its_own_is_no_silent_death() -> None:
    case_id = "b89c-deepspeed-gptj-stage2-cpu-adam-return-code-9"
    teardown = "[2023-04-07 13:09:33,201] [INFO] [launch.py:318:sigkill_handler] Killing subprocess 80"
    told = teardown + "\n[2023-04-07 13:09:33,202] [INFO] [launch.py:344:sigkill_handler] Main process received SIGTERM, exiting"
    assert _primary_if_changed(case_id, (teardown, told)) == "launcher-teardown/sigterm-survivor"


def test_a_teardown_after_a_worker_s_own_error_or_with_no_output_before_it_is_no_silent_death() -> None:
    case_id = "b89c-deepspeed-gptj-stage2-cpu-adam-return-code-9"
    teardown = "[2023-04-07 13:09:33,201] [INFO] [launch.py:318:sigkill_handler] Killing subprocess 80"
    said = "FATAL: could not open shard /data/train-00007.bin\n" + teardown
    assert _primary_if_changed(case_id, (teardown, said)) != "host-oom/oom-killer"
    log = _case(case_id).log
    alone = log[log.index(teardown):]  # only the launcher's lines: nothing says whether a worker spoke
    d = Diagnoser().diagnose(Named("output.log", alone.encode()))
    assert d.primary is not None and d.primary.id == "launcher-teardown/sigterm-survivor"


def test_a_silent_death_with_too_few_resolved_threads_names_its_senders_as_the_next_readings() -> None:
    # (a library whose dev split resolved no such death: no reading leads, the death itself does)
    library = dataclasses.replace(LIBRARY, resolved={})
    log = _case("b89c-deepspeed-gptj-stage2-cpu-adam-return-code-9").log
    d = Diagnoser(library).diagnose(Named("output.log", log.encode()))
    assert d.primary is not None and d.primary.id == "launcher-teardown/silent-worker-death"
    assert {a.id for a in d.alternatives} == {"host-oom/sigkill", "host-oom/oom-killer"}
    assert all("not confirmed by this log; check with `" in a.why for a in d.alternatives)


def test_a_jit_build_of_one_of_deepspeed_s_ops_is_deepspeed_s_op_build() -> None:
    # a paste cut at torch's CalledProcessError from `ninja -v`, after "Loading extension module fused_adam"
    case = "b88a-fused-adam-broken-host-compiler-mcts-dpo"
    _named_not_near(case, "deepspeed-failure/op-build-failure",
                    ("extension module fused_adam", "extension module upfirdn2d"))
    assert _primary_if_changed(case, ("extension module fused_adam", "extension module upfirdn2d")) == \
        "jit-extension-build/build-failed"


def test_a_jit_build_of_someone_else_s_extension_is_the_toolchain_s_failure() -> None:
    # gsplat's ninja link step could not find libcudart: no DeepSpeed op in sight
    d = _diagnose("more31l-garfield-gsplat-jit-build-cannot-find-lcudart")
    assert d.primary is not None and d.primary.id == "jit-extension-build/build-failed"
    assert any("build stopped" in ln.text or "FAILED:" in ln.text for ln in d.primary.evidence)


def test_fairseq_s_advice_at_the_minimum_loss_scale_names_it_when_the_paste_split_its_start() -> None:
    case = "b89a-fairseq-wav2vec-min-loss-scale"
    _named_not_near(case, "grad-scaler-overflow/min-loss-scale",
                    ("Your loss is probably exploding", "Your loss is probably fine"))


def test_a_worker_s_bus_error_message_wrapped_across_lines_still_names_the_shared_memory() -> None:
    # "killed by signal: Bus" / "error. It is possible ... out of shared" / "memory. Please try to raise ..."
    case = "b76a-fastai-course-docker-bus-error-shm-size-3g"
    assert _diagnose(case).primary.id == "dataloader-worker-failure/shm-exhausted"  # type: ignore[union-attr]
    # each piece alone names it; a worker's death by another signal, with no SIGBUS hint, does not
    assert _primary_if_changed(case, ("signal: Bus\n", "signal: Bus error.\n"), ("error. It is", "It is"),
                               ("out of shared\nmemory. Please", "out of shared memory. Please")) == \
        "dataloader-worker-failure/shm-exhausted"
    assert _primary_if_changed(case, ("signal: Bus\n", "signal: Killed.\n"), ("dataloader's workers are out of shared", "the workers are slow"),
                               ("shared memory limit", "open files limit")) != "dataloader-worker-failure/shm-exhausted"


def test_a_worker_s_sigkill_retyped_in_lower_case_is_still_the_worker_s_kill() -> None:
    case = "b89c-fastmri-h5py-pip-leak-worker-killed"
    _named_not_near(case, "dataloader-worker-failure/worker-oom", ("signal: killed.", "signal: Terminated."))


def test_the_worker_s_sigbus_handler_message_wrapped_after_its_first_sentence_names_the_shared_memory() -> None:
    # "ERROR: Unexpected bus error encountered in worker. " / "This might be caused by insufficient shared memory (shm)."
    case = "b97c-vggt-gsplat-docker-64m-dev-shm-bus-error-num-workers-4"
    assert _diagnose(case).primary.id == "dataloader-worker-failure/shm-exhausted"  # type: ignore[union-attr]
    assert _primary_if_changed(case, ("Unexpected bus error encountered in worker.", "Unexpected error in worker."),
                               ("insufficient shared memory (shm)", "insufficient patience")) != \
        "dataloader-worker-failure/shm-exhausted"


def test_an_exception_a_rank_raised_before_the_others_timed_out_starts_it_behind_pdsh_address_prefixes() -> None:
    # "10.0.0.2: [rank4]: Traceback ..." (pdsh names the node by its hostfile address); ten minutes later rank 0's
    # watchdog times out and its abort ("terminate called ...") is what the timeout did, not a cause of its own
    case = "b98a-megatron-deepspeed-2node-tp4-rank4-index-cache-filenotfound-rank0-allreduce-timeout"
    d = _diagnose(case)
    assert d.primary is not None and d.primary.id == "unclassified-failure/uncaught-exception"
    assert d.primary.rank == 4
    # near miss: without rank 4's exception, the timeouts' own reading stands
    log = _case(case).log
    cut = "\n".join(ln for ln in log.splitlines() if "[rank4]:" not in ln)
    d = Diagnoser().diagnose(Named("output.log", cut.encode()))
    assert d.primary is not None and d.primary.id != "unclassified-failure/uncaught-exception"


def test_seff_s_timeout_after_the_run_said_training_finished_is_a_hang_at_exit() -> None:
    # nerfstudio's "Training Finished" banner, then Slurm's seff summary: the job sat until its time limit.
    case = "b99d-nerfstudio-nerfacto-graham-training-finished-viewer-keeps-job-alive-8h-timeout"
    d = _diagnose(case)
    assert d.verdict == "hang" and d.primary is not None and d.primary.id == "training-hang/exit-hang"
    # Near misses: no finish banner, the time limit stopped a run still training; a completed job, no failure.
    assert _primary_if_changed(case, ("Training Finished", "Training Paused")) == "scheduler-termination/time-limit"
    assert _primary_if_changed(case, ("State: TIMEOUT", "State: COMPLETED")) is None


def test_deepspeed_zero3_s_cross_rank_trace_check_is_a_desync_of_the_ranks() -> None:
    _named_not_near("b99e-llamafactory-qwen35-moe-zero3-param-trace-list-length-disagreement",
                    "rank-desync/mismatched-collectives", ("disagreement on list length", "difference in list length"))


def test_an_empty_train_split_is_the_failure_though_the_run_finished_its_epochs() -> None:
    case = "b74g-sdfnet-reid-train-subset-zero-images-loss-zero-150-epochs"
    d = _diagnose(case)
    assert d.primary is not None and d.primary.id == "training-config-error/empty-dataset"
    assert "Training Finished" in _case(case).log  # the run said it finished
    # Near miss: the train row counts identities and images, a healthy run.
    assert _primary_if_changed(case, ("train    |     0 |        0 |", "train    |   751 |    12936 |")) is None


def test_of_ranks_that_printed_the_same_error_the_launcher_s_first_observed_failure_started_it() -> None:
    # Three ranks print the same unused-parameters error, rank 2's first; torchrun saw rank 1 exit first.
    # Near miss: without the summary's root-cause record, the order the log shows decides.
    _ranked("b99a-rfdetr-lightning-ddp-3gpu-torchrun-ema-unused-parameters-root-cause-rank1",
            "rank-desync/unused-parameters", 1, ("Root Cause (first observed failure):", "Other Failures:"), 2)


def test_the_scheduler_s_oom_kill_record_below_a_worker_s_traceback_is_not_part_of_its_message() -> None:
    # slurmstepd's "Detected 3 oom_kill events" right under the DataLoader's "worker ... killed by signal":
    # the job's cgroup killed the worker; the record is Slurm's line, not the exception's.
    case = "b99c-diffglue-megadepth-16-workers-eval-worker-killed-slurm-oom-kill-events"
    d = _diagnose(case)
    assert d.primary is not None and d.primary.id == "dataloader-worker-failure/worker-oom"
    assert any("oom_kill events" in ln.text for ln in d.primary.evidence)  # the record confirmed the kill
    # Near miss: no record; the kill alone is the OOM killer's only by how often it is, less sure.
    log = _case(case).log.replace("Detected 3 oom_kill events", "Detected 3 task exits")
    near = Diagnoser().diagnose(Named("output.log", log.encode()))
    assert near.primary is not None and near.primary.confidence < d.primary.confidence - 0.1


def test_intel_gpu_runtime_out_of_device_memory_is_the_xpu_oom() -> None:
    _named_not_near("more33k-physical-ai-studio-xpu-training-sycl-enqueue-oom-abort",
                    "cuda-out-of-memory/xpu-device-oom",
                    ("UR_RESULT_ERROR_OUT_OF_DEVICE_MEMORY", "UR_RESULT_ERROR_INVALID_ARGUMENT"))


def test_a_library_asserting_its_optional_package_is_installed_names_the_missing_module() -> None:
    _named_not_near("b99f-navppo-sb3-ppo-slurm-tensorboard-not-installed-assertion-before-training",
                    "dependency-version-mismatch/module-missing",
                    ("tensorboard is not installed, you", "tensorboard is not configured, you"))


def test_a_python_warning_quoting_a_caught_exception_is_context_not_the_failure() -> None:
    # modelopt warns "UserWarning: Failed to import diffusers plugin due to: ImportError('peft>=0.17.0 is
    # required ...')" at start-up; the run died later of a CUDA OOM.
    case = "b100b-megatron-attn-bench-sink-torch-naive-attention-scores-oom-8gib"
    _named_not_near(case, "cuda-out-of-memory/allocator-oom",
                    (" UserWarning: Failed to import diffusers plugin due to: ImportError(",
                     " Failed to import diffusers plugin due to: ImportError("))


def test_an_assertion_megatron_s_validate_args_fails_is_the_command_line_s() -> None:
    # A bare AssertionError under validate_args (--fp16 with --bf16): the flags' combination, not the code.
    _named_not_near("b100b-megatron-llama-torchrun-8-ranks-fp16-and-bf16-both-set-validate-args",
                    "cli-error/invalid-arguments", ("megatron/training/arguments.py", "megatron/training/model.py"))


def test_the_launcher_s_line_about_a_process_is_that_process_s_rank_whatever_the_srun_prefix() -> None:
    # srun --label puts "0: " before everything node 0's torchrun agent prints; its "failed (exitcode: -11)
    # local_rank: 2 (pid: 542818)" and the summary's record for that pid are rank 2's.
    # Near miss: the agent's line about a pid the summary does not list keeps the line's own prefix.
    _ranked("b100b-deepspeed-toy-ulysses-torchrun-4-ranks-rank2-sigsegv-at-startup", "native-crash/segfault", 2,
            ("(pid: 542818) of binary", "(pid: 542819) of binary"), 0)


def test_thc_s_own_check_of_invalid_device_function_is_a_build_without_the_gpu_s_architecture() -> None:
    # torch <= 1.4 printed "THCudaCheck FAIL file=... line=383 error=8 : invalid device function" on stderr
    # before the traceback. Near miss: the same check failing with another CUDA error.
    _named_not_near("b101f-snake-train-old-torch-thcudacheck-invalid-device-function",
                    "cuda-driver-mismatch/unsupported-gpu-arch", ("error=8 : invalid device function",
                                                                  "error=11 : invalid argument"))


def test_a_libsndfile_error_re_raised_from_a_worker_without_its_message_is_an_undecodable_file() -> None:
    # DataLoader's re-raise builds LibsndfileError(<text>), whose str() fails: "<exception str() failed>".
    # Near miss: another exception class that failed to print is only the dataset's exception.
    _named_not_near("more32r-salmonn-torchrun-rank1-libsndfile-error-invalid-media",
                    "corrupt-sample/undecodable-file", ("soundfile.LibsndfileError", "mylib.DecodeError"))


def test_nccl_giving_up_on_a_refused_connect_after_its_retries_is_a_system_error() -> None:
    # NCCL 2.19+: "socketPollConnect: connect to <addr> returned Connection refused, exceeded error retry count
    # after 35 attempts". Near miss: one retry of the same connect is NCCL's INFO chatter, not the failure.
    _named_not_near("b102d-diffusion-forcing-transformer-2-nodes-nccl-socketpollconnect-connection-refused-35-attempts",
                    "nccl-error/system-error", (", exceeded error retry count after 35 attempts",
                                                ", retrying (34/34) after sleep for 3400 msec"))


def test_triton_refusing_a_pointer_not_on_the_current_gpu_is_a_device_mismatch() -> None:
    # A model split over GPUs by device_map="auto" hands a Triton kernel a tensor of another device.
    # Near miss: Triton refusing an argument that is no pointer at all.
    _named_not_near("b102b-phi-3-small-device-map-auto-multi-gpu-triton-pointer-cpu-tensor",
                    "device-mismatch/tensors-on-different-devices",
                    ("ValueError: Pointer argument (at 0) cannot be accessed from Triton (cpu tensor?)",
                     "TypeError: Pointer argument must be either uint64 or have data_ptr method"))


def test_a_helper_thread_dying_after_a_stop_by_hand_ended_nothing() -> None:
    # Ctrl-C in epoch 39; the pin_memory thread's queue is torn down under it ("Exception in thread Thread-3
    # (_pin_memory_loop)" ... ConnectionResetError). Near miss: the same thread's death with no stop above it.
    case = "b101a-glueformer-torchrun-3-ranks-ctrl-c-in-epoch-39-keyboardinterrupt-pin-memory-connection-reset-healthy"
    assert _diagnose(case).verdict == "healthy"
    log = _case(case).log.replace("[rank0]: KeyboardInterrupt\n", "")
    near = Diagnoser().diagnose(Named("output.log", log.encode()))
    assert near.verdict == "failure", near.notes


def test_a_checkpoint_writer_message_a_rich_traceback_wrapped_is_still_the_failed_write() -> None:
    # transformers' rich traceback in a notebook wraps at 80 columns: "... . unexpected pos 76224 " ends a line,
    # "vs 76109" starts the next. Near miss: the same lines with other words after the writer's.
    case = ("b103d-colab-t5-large-run-translation-hf-trainer-checkpoint-3000-pytorchstreamwriter-file-write-failed-"
            "unexpected-pos")
    d = _diagnose(case)
    assert d.primary is not None and d.primary.id.startswith("disk-full/")
    near = _primary_if_changed(case, ("] . PytorchStreamWriter \n", "] . PytorchStreamWriter failed opening archive.\n"),
                               ("unexpected pos 76224 \n", "unexpected EOF\n"))
    assert near is None or not near.startswith("disk-full/")


def test_ctrl_c_while_a_loader_without_workers_reads_the_batch_is_a_stop_not_a_wait() -> None:
    # num_workers=0: Ctrl-C lands in __getitem__ (PIL decoding) under _next_data -> fetch: the process was
    # loading, not waiting for workers. Near miss: the same stack without the dataset's fetch() is a wait.
    case = "b103d-mimic-cxr-resnet50-notebook-ctrl-c-in-dataloader-fetch-after-9-of-20-epochs-healthy"
    assert _diagnose(case).verdict == "healthy"
    assert _primary_if_changed(case, ("_utils/fetch.py in fetch(", "_utils/fetch.py in collect(")) == \
        "dataloader-worker-failure/worker-hang"


def test_a_truncated_pickle_read_inside_a_dataloader_worker_is_the_dataset_s_file_not_a_checkpoint() -> None:
    # corenet's worker 7: pickle.load of an empty metadata file, "EOFError: Ran out of input" under "Caught
    # EOFError in DataLoader worker process 7." Near miss: the same traceback with no worker's wrapper.
    case = "b103d-corenet-catlip-pretrain-worker-7-metadata-pickle-load-eoferror-ran-out-of-input-at-iter-13000"
    _named_not_near(case, "corrupt-sample/unpickle-error", ("in DataLoader worker process", "in the pin-memory thread"))


def test_a_step_counted_in_a_json_record_is_progress_so_ctrl_c_below_it_is_a_stop_by_hand() -> None:
    # wandb's captured stdout of a script that prints '{"epoch": 1, "step": 4000, "loss": ...}' records, then
    # Ctrl-C in the spawned process: the quoted keys are the steps the run made.
    case = ("b104c-slot-vqa-clip-some-weights-not-used-clip-grad-norm-deprecated-checkpoints-then-ctrl-c-spawn-"
            "keyboardinterrupt")
    assert _diagnose(case).verdict == "healthy"
    # near miss: the same records with no step nor epoch in them make no progress, and the interrupt ends the run
    near = _case(case).log.replace('"epoch": ', '"ep": ').replace('"step": ', '"n": ')
    assert Diagnoser().diagnose(Named("output.log", near.encode())).verdict == "failure"


def test_a_loss_scale_deepspeed_keeps_high_up_is_hysteresis_not_its_minimum() -> None:
    # "Attempted loss scale: 4294967296, reducing to 4294967296": the first overflow spends hysteresis
    case = "more17b-ok-hf-deepspeed-lr-zero-before-scheduler-steps-overflow"
    assert _diagnose(case).verdict == "healthy"
    # near miss: the same message at a scale of 1 is a scaler that cannot go lower
    near = _primary_if_changed(case, ("4294967296, reducing to 4294967296", "1, reducing to 1"))
    assert near == "grad-scaler-overflow/min-loss-scale"


def test_a_kernel_assertion_cut_before_its_text_is_named_by_the_kernel_s_file() -> None:
    # A pager wrapped each "IndexKernel.cu:93: ... Assertion `-sizes[i] <= index && index < size$" line: the
    # check's text never reaches "failed", the index kernel's file still says what was checked.
    _named_not_near("b104f-r1-v-grpo-qwen2-vl-deepspeed-zero3-indexkernel-index-out-of-bounds-assert",
                    "cuda-device-side-assert/index-out-of-range", ("IndexKernel.cu", "Loss.cu"))


def test_pillow_s_exif_warning_of_a_truncated_read_is_not_a_truncated_image() -> None:
    # TiffImagePlugin's "UserWarning: Truncated File Read" on 16 ranks while the epoch advances: Pillow caught
    # the short read of an EXIF block and decoded the image anyway.
    case = "b105c-open-clip-mixtera-16-ranks-cc12m-pil-truncated-file-exif-warnings-training-progresses"
    assert _diagnose(case).verdict == "healthy"
    # near miss: the error ImageFile raises when the pixel data itself ends early
    near = _primary_if_changed(case, ("UserWarning: Truncated File Read", "OSError: Truncated File Read"))
    assert near == "corrupt-sample/truncated-file"


def test_a_worker_s_traceback_under_an_ipython_traceback_is_read_as_the_worker_s() -> None:
    # A notebook cell's coloured IPython traceback ends in "UnidentifiedImageError: Caught UnidentifiedImageError
    # in DataLoader worker process 0.", then Python's "Original Traceback" of the worker: its own exception
    # (Pillow could not identify a .jpg) is the cause, not six lines of the wrapper's message.
    case = "b105a-tennis-ball-tracking-dataloader-worker-pil-unidentifiedimageerror-cannot-identify-jpg"
    _named_not_near(case, "corrupt-sample/undecodable-file",
                    ("PIL.UnidentifiedImageError: cannot identify image file", "ValueError: no label for"))
    assert _primary_if_changed(case, ("PIL.UnidentifiedImageError: cannot identify image file",
                                      "ValueError: no label for")) == "dataloader-worker-failure/getitem-exception"


def test_a_jump_that_leaves_the_loss_below_where_training_began_is_noise_not_a_spike() -> None:
    # BERT fine-tuning's per-batch losses: 0.69 at the start, 0.0027 at best, 0.158 on one batch of the last epoch
    case = ("b105e-bert-base-sequence-classification-finetune-nohup-unused-weights-pad-to-max-length-futurewarning-"
            "test-accuracy")
    assert _diagnose(case).verdict == "healthy"
    # near miss: the same batch's loss above the first one (5.2 against 0.69), and the last one still above it,
    # is a jump the run had not been at and did not come back from
    assert _primary_if_changed(case, ("loss:  0.15789084136486053", "loss:  5.15789084136486053"),
                               ("loss:  0.07570521533489227", "loss:  4.07570521533489227")) == \
        "loss-spike/spike-detected"


def test_a_script_reading_the_launcher_s_rank_itself_was_not_started_by_a_launcher() -> None:
    # init_dist() does int(os.environ['RANK']) under plain `python` (nohup): "KeyError: 'RANK'"
    _named_not_near("b104d-ivop-finetune-init-dist-os-environ-rank-keyerror-launched-without-torchrun",
                    "rendezvous-failure/env-not-set", ("KeyError: 'RANK'", "KeyError: 'rank'"))


def test_torch_1_x_s_check_of_a_tensor_list_s_dtypes_is_a_dtype_mismatch() -> None:
    # torch.cat of a Float and a Long tensor, ATen's 1.x wording: "... for sequence element 1 in sequence argument"
    _named_not_near("b106d-absa-ram-model-torch-cat-float-and-long-scalar-type-sequence-element",
                    "dtype-mismatch/incompatible-dtypes",
                    ("scalar type Float but got scalar type Long", "backend CUDA but got backend CPU"))


def test_steps_printed_in_a_cancel_s_grace_are_not_training_going_on() -> None:
    # Slurm's "CANCELLED AT" (no reason given: a weak signal), then three iteration lines the process printed
    # before SIGKILL came; a non-strict load's size-mismatch warning above is what training did go on after.
    case = "b104d-ipdn-gres-roberta-attnpool-slurm-cancelled-epoch1-iter90-after-size-mismatch-warning"
    d = _diagnose(case)
    assert d.primary is not None and d.primary.id == "scheduler-termination/cancelled"
    assert any("state-dict-mismatch" in n and "training went on" in n for n in d.notes)
    # near miss: a tokenizers fork warning in the cancel's place is a warning that training went on after
    near = _case(case).log.replace(
        "slurmstepd: error: *** JOB 53471 ON node1 CANCELLED AT 2025-06-13T11:30:52 ***",
        "huggingface/tokenizers: The current process just got forked, after parallelism has already been used. "
        "Disabling parallelism to avoid deadlocks...")
    _assert_healthy(near)


def test_a_gan_player_s_loss_jumping_is_the_game_not_a_divergence() -> None:
    # QuantGAN's bar: "Discriminator Loss: 0.00000445 Generator Loss: 47.89" then "Discriminator Loss: 2.30": the
    # discriminator's loss rises whenever the generator gains, over 400 epochs that finish
    case = "b106b-healthy-quantgan-gaussianize-no-convergence-userwarning-400-epochs-generator-saved"
    assert _diagnose(case).verdict == "healthy"
    # near miss: the same figures as the training loss, ending above where it began (2.3 against 0.34, not the
    # 0.125 it came back to), are a jump that stayed up
    assert _primary_if_changed(case, ("Discriminator Loss: ", "Loss: "),
                               ("Loss: 0.12531194", "Loss: 2.12531194")) == "loss-spike/spike-detected"


def test_a_loss_after_an_evaluation_s_tag_is_held_out_data_not_training() -> None:
    # "[val] epoch 10 | loss: 0.0783" between training steps at loss 0.0001: the validation loss of a model that
    # fits its training data, not a jump of the training loss
    case = "b105b-healthy-umclassification-convnext-3fold-hf-token-warning-head-mismatch-reinit-completes-test"
    assert _diagnose(case).verdict == "healthy"
    # near miss: the same record tagged as training's is a jump
    assert _primary_if_changed(case, ("[val] epoch", "[trn] epoch")) == "loss-spike/spike-detected"


def test_a_loss_that_ends_at_zero_is_back_from_its_jump() -> None:
    # Swin-Tiny fitting a small set: per-batch losses between 0.0000 and 0.03 ("0.0332" once, 332 times the
    # 0.0001 before it), the last ones 0.0000: a loss that ends at its minimum came back from the jump
    case = "b107f-swin-tiny-3fold-classifier-mismatch-hf-token-warning-loss-zero-finished"
    d = _diagnose(case)
    assert d.verdict == "healthy", d.primary
    assert any("came back" in n and "minimum (0)" not in n for n in d.notes)
    # near miss: the same run whose late losses stay at 0.04, 400 times the minimum, did not come back
    assert _primary_if_changed(case, ("loss: 0.0000 | lr", "loss: 0.0400 | lr")) == "loss-spike/spike-detected"


def test_a_bf16_model_under_the_fp16_scaler_is_a_low_precision_master_weight() -> None:
    # TRL's GRPO with fp16=True on a model loaded in bf16: GradScaler's unscale kernel has no BFloat16 version
    _named_not_near("b107c-argen-trl-grpo-llama-3-2-1b-fp16-gradscaler-unscale-bfloat16-grads-not-implemented-"
                    "after-event-loop-closed-noise", "grad-scaler-overflow/fp16-master-weights",
                    ("not implemented for 'BFloat16'", "not implemented for 'ComplexFloat'"))


def test_a_batch_size_finder_that_reached_zero_ran_out_of_gpu_memory() -> None:
    # auto_find_batch_size halved 2 -> 1 -> 0 on out-of-memory errors it swallowed, then gave up
    _named_not_near("b107c-contexto-unsloth-grpo-llama-3b-auto-find-batch-size-halves-2-1-no-executable-batch-size-"
                    "reached-zero", "cuda-out-of-memory/allocator-oom",
                    ("No executable batch size found, reached zero", "No batch size given"))


def test_processes_interrupted_while_waiting_on_one_that_died_point_to_its_exception() -> None:
    # hsd3's actor process died of a TypeError (a headless render returned None); its learner then sat in
    # queue.get() and the parent in join() until Ctrl-C, whose tracebacks show those waits
    case = "b107f-hsd3-pretrain-headless-render-none-typeerror-learner-blocked-ctrl-c"
    d = _diagnose(case)
    assert d.primary is not None and d.primary.id == "unclassified-failure/uncaught-exception"
    assert any("TypeError" in e.text for e in d.primary.evidence)
    assert any("while it waited" in n for n in d.notes)
    # near miss: with no exception line the process died of nothing the log shows; the waits are the finding
    near = _case(case).log.replace("TypeError: expected np.ndarray (got NoneType)\n", "")
    assert Diagnoser().diagnose(Named("output.log", near.encode())).verdict == "hang"


def test_a_gym_environment_version_the_installed_gym_dropped_is_an_api_change() -> None:
    # easy-rl's SAC notebook makes Pendulum-v0 under a gym that registers only Pendulum-v1
    _named_not_near("b108a-easy-rl-sac-notebook-gym-make-pendulum-v0-deprecatedenv-before-training",
                    "dependency-version-mismatch/api-changed",
                    ("DeprecatedEnv\x1b[0m: Env Pendulum-v0 not found (valid versions include ['Pendulum-v1'])",
                     "UnregisteredEnv\x1b[0m: No registered env with id: Pendulum-v0"))


def test_an_nvcc_too_old_for_the_gpu_fails_any_jit_build_and_deepspeeds_when_it_builds_an_op() -> None:
    # StyleGAN3's bias_act plugin asked the system nvcc (CUDA 11.0) for compute_86: no DeepSpeed anywhere
    case = "b109c-stylegan3-train-bias-act-plugin-cuda11-0-nvcc-no-compute-86-rtx3090"
    d = _diagnose(case)
    assert d.primary is not None and d.primary.id == "jit-extension-build/build-failed"
    # near miss: the same build started by deepspeed.initialize (its frame in the build's traceback) is
    # DeepSpeed's op build, with DeepSpeed's fixes
    d = _diagnose("fw-ds-fused-adam-compute86-old-nvcc")
    assert d.primary is not None and d.primary.id == "deepspeed-failure/op-build-failure"
    moved = ("site-packages/deepspeed/", "site-packages/stylegan/")
    assert _primary_if_changed("fw-ds-fused-adam-compute86-old-nvcc", moved) == "jit-extension-build/build-failed"


def test_a_shell_that_cannot_fork_has_hit_the_task_limit() -> None:
    # VTool-R1's Ray RL job filled the user's process limit; the shell could not start a process
    _named_not_near("b109h-vtool-r1-ray-rl-training-fork-retry-no-child-processes-ulimit-u",
                    "host-resource-limit/thread-creation-failed",
                    ("fork: retry: No child processes", "fork: Cannot allocate memory"))


def test_an_image_metric_given_a_prediction_and_target_of_other_shapes_is_a_shape_mismatch() -> None:
    # KAIR's PSNR check at the first validation: 3-channel SwinIR output against 1-channel X-ray targets
    _named_not_near("b109i-kair-swinir-xray-sr-grayscale-target-vs-3-channel-output-l1-broadcast-warning-psnr-"
                    "valueerror-at-iter-5000", "tensor-shape-mismatch/incompatible-shapes",
                    ("Input images must have the same dimensions.", "Input images must be uint8."))


def test_ctrl_c_on_a_run_whose_progress_is_an_ultralytics_bar_is_a_stop_by_hand() -> None:
    # a YOLOv8s notebook stopped half-way through epoch 1: Ultralytics' own bar is the run's progress
    case = "b110d-healthy-yolov8s-drone-mps-libpng-iccp-corrupt-jpeg-restored-warnings-training-starts-ctrl-c-epoch-1"
    assert _diagnose(case).verdict == "healthy"
    # near miss: with no progress shown before it, the interrupt ended a run nobody saw training
    d = Diagnoser().diagnose(Named("output.log", "\n".join(
        ln for ln in _case(case).log.splitlines() if "━" not in ln).encode()))
    assert d.verdict == "failure"


@pytest.mark.parametrize("case_id", [
    "b110b-deepbeachstate-resnet-visualize-ioerror-output-dir-missing",  # Python 2's IOError, open(..., 'wb')
    # PIL's Image.save under torchvision's save_image opens "w+b" (IPython's frames)
    "b109d-dcgan-save-image-filename-embeds-dataset-repr-no-such-directory-after-first-batch",
])
def test_opening_a_file_to_write_in_a_missing_directory_is_the_missing_directory(case_id: str) -> None:
    d = _diagnose(case_id)
    assert d.primary is not None and d.primary.id == "checkpoint-permission-error/missing-parent-directory"


def test_a_file_opened_to_read_that_is_not_there_is_no_missing_output_directory() -> None:
    # near miss: the same traceback opening its file to read ("rb") is a missing input, not an output directory
    case = "b110b-deepbeachstate-resnet-visualize-ioerror-output-dir-missing"
    assert _primary_if_changed(case, (".pickle'.format(modelname, pid[:-4]), 'wb')", ".pickle'.format(modelname, "
                                      "pid[:-4]), 'rb')")) == "unclassified-failure/uncaught-exception"


def test_a_bare_assertion_in_fsdps_optimizer_state_conversion_is_the_optimizer_state_mismatch() -> None:
    # COAT's FP8 optimizer state saved through FSDP.full_optim_state_dict: `assert dtype == info.dtype`
    _named_not_near("b110c-coat-fp8-llama-finetune-fsdp-full-optim-state-save-dtype-assertion",
                    "fsdp-failure/optim-state-mismatch",
                    ("fsdp/_optim_utils.py", "fsdp/_runtime_utils.py"))


def test_a_noisy_per_batch_loss_that_ends_below_its_first_figure_has_not_diverged() -> None:
    # overlapping-NER's per-batch loss: 0.066 on a batch of one sentence, 8.4 later, 2.6 at the end (first: 3.2)
    case = ("b110d-healthy-overlapping-ner-em18-per-batch-loss-swings-0-07-to-8-7-with-batch-size-and-length-dev-"
            "f1-0-75-epoch-13")
    assert _diagnose(case).verdict == "healthy"
    # near miss: the last loss above the first figure (and 10x the minimum) stays a jump that did not come back
    changed = ("loss 2.6043624877929688", "loss 5.6043624877929688")
    assert _primary_if_changed(case, changed) == "loss-spike/spike-detected"


def test_a_first_byte_neither_zip_nor_pickle_is_a_file_that_is_not_a_checkpoint() -> None:
    # DDAD's diffusion weights fetched from Google Drive: torch.load's legacy path reads '\x9e' as an opcode
    _named_not_near("b110g-ddad-colab-finetuning-torch-load-downloaded-checkpoint-invalid-load-key",
                    "corrupted-checkpoint/not-a-checkpoint",
                    ("invalid load key, '\\x9e'", "invalid load key, '\\x00'"))


def test_a_model_output_unpacked_as_a_tuple_hands_its_keys_to_the_next_op() -> None:
    # KoBERT's classifier under transformers 4: `_, pooler = self.bert(...)` unpacks a ModelOutput's keys
    _named_not_near("b110p-kobert-nsmc-dropout-input-must-be-tensor-not-str-return-dict-ko",
                    "dependency-version-mismatch/api-changed", ("must be Tensor, not str", "must be Tensor, not int"))


def test_the_first_timing_record_of_a_run_is_its_start_up_not_its_input_pipeline() -> None:
    # OpenSelfSup's linear evaluation: "time: 0.597, data_time: 0.514" over iterations 1-50, then 0.09 / 0.015
    case = "b110n-openselfsup-byol-linear-eval-lr-30-loss-60-to-135-finite-while-accuracy-rises"
    assert _diagnose(case).verdict == "healthy"
    # near miss: the same records with the data time of the later ones as high as the first's are starved
    changed = [(f"data_time: {t}", "data_time: 0.071") for t in ("0.018", "0.014", "0.016", "0.011")]
    assert _primary_if_changed(case, *changed) == "input-pipeline-starvation/slow-input"
    # and a paste that starts mid-run (mmdetection's iterations 5231-5233) has no start-up to leave out
    assert _diagnose("more2-starvation-mmdet-cascade-data-time-dominates").primary is not None


def test_an_assignment_a_newer_base_class_made_read_only_is_an_api_change() -> None:
    # COMET's BART fine-tuning under Lightning 1.6: `self.hparams = hparams` reaches nn.Module.__setattr__'s
    # object.__setattr__, which refuses it (hparams became a property)
    _named_not_near("b111b-comet-atomic-bart-finetune-pl163-macos-hparams-cant-set-attribute",
                    "dependency-version-mismatch/api-changed",
                    ("AttributeError: can't set attribute", "AttributeError: 'SummarizationModule' has no 'hparams'"))
    # near miss: the same refusal raised in the project's own frame (not nn.Module's) is the project's code
    assert _primary_if_changed("b111b-self-supervised-moco-windows-lightning-hparams-cant-set-attribute",
                               ("object.__setattr__(self, name, value)", "self.config.lr = lr")) != (
        "dependency-version-mismatch/api-changed")


def test_torchvisions_ops_missing_for_this_torch_are_an_extension_built_for_another_torch() -> None:
    # kohya's Colab trainer after Colab's torch moved on: "operator torchvision::nms does not exist"
    _named_not_near("b111b-kohya-colab-lora-trainer-torchvision-nms-does-not-exist-torch-upgraded",
                    "missing-cuda-libraries/extension-abi-mismatch", ("torchvision::nms", "mylib::nms"))


def test_torch_1x_cpu_allocators_failed_posix_memalign_is_a_host_allocation_failure() -> None:
    case = "b111d-chrischute-squad-train-enforce-fail-cpuallocator-56-posix-memalign-12-vs-0"
    _named_not_near(case, "host-oom/cpu-allocation-failure", ("posix_memalign(&data,", "posix_memalign(&ptr,"))
    # and the near miss, an enforce no fingerprint knows, is still a failure, never a healthy run
    log = _case(case).log.replace("posix_memalign(&data,", "posix_memalign(&ptr,")
    assert Diagnoser().diagnose(Named("output.log", log.encode())).verdict == "failure"


def test_a_plugin_loader_that_finds_the_build_lock_and_says_no_more_waits_on_a_stale_lock() -> None:
    # nvdiffrast: "Lock file exists in build directory: '.../nvdiffrast_plugin/lock'", then nothing (stuck)
    case = "b112a-nvdiffrast-plugin-stale-lock-file-exists-script-stuck"
    _named_not_near(case, "training-hang/extension-build-lock", ("/lock'", "/lock', removing"))
    # near miss: the same notice followed by the build's load and training is a run that went on
    log = _case(case).log.rstrip("\n") + "\nLoading extension module nvdiffrast_plugin...\n" + "".join(
        f"Epoch {i}/3: loss {0.6 - i / 10:.2f}\n" for i in range(1, 4)) + "Training complete.\n"
    _assert_healthy(log)


def test_a_link_the_filesystem_does_not_support_is_a_refused_symlink() -> None:
    # Composer's latest-rank0.pt link on a network drive: "[Errno 524] Unknown error 524: 'src' -> 'link'"
    _named_not_near("b112b-composer-llm-foundry-latest-symlink-network-drive-errno-524",
                    "checkpoint-permission-error/symlink-unsupported",
                    ("'ep0-ba2-rank0.pt' -> '/network", "'/network"))


def test_htcondors_memory_hold_is_the_jobs_memory_limit() -> None:
    # CHTC's GPU Lab PyTorch example held: "Docker job has gone over memory limit of 1024 Mb"
    _named_not_near("b113a-chtc-htcondor-gpulab-pytorch-example-held-docker-job-over-memory-limit-1024mb",
                    "host-oom/oom-killer", ("has gone over memory limit of 1024 Mb", "has gone over its runtime"))


def test_an_unsized_bar_in_its_own_unit_still_at_zero_after_an_exception_is_no_progress() -> None:
    # diff-svc's trainer (tqdm, unit "batch"): the AssertionError, then the bar's closing render
    # "Epoch 1: : 0batch [00:16, ?batch/s]": its count, 0, is the step, not the epoch before it
    case = "b115a-diffsvc-cuda-visible-devices-unset-amp-gradscaler-cpu-loss-assert"
    d = _diagnose(case)
    assert d.verdict == "failure" and d.primary is not None
    assert d.primary.id == "unclassified-failure/uncaught-exception"
    # near miss: the same bar having counted batches after the assertion is a run that went on
    log = _case(case).log.replace(": 0batch [00:16, ?batch/s]", ": 57batch [00:16, 3.52batch/s]")
    _assert_healthy(log)


def test_a_watchdog_timeout_rewrapped_by_hand_still_reads_as_the_watchdogs() -> None:
    # OLMo-core's FSDP2 reduce-scatter: the report wrapped at the work's commas, "ran for 1800003
    # milliseconds before timing out." alone on its line
    _named_not_near("b115d-olmo-core-hybrid-7b-sft-fsdp2-reduce-scatter-stall-watchdog-timeout",
                    "nccl-timeout/watchdog-timeout", ("before timing out.", "before it was cancelled."))


def test_the_store_lost_after_the_run_said_it_finished_is_its_processes_exiting() -> None:
    # MLPerf BERT: run_stop with status success, then rank 12's heartbeat monitor finds rank 0's TCPStore
    # gone ("recvValue failed ... got 0 bytes", "Failed to check the \"should dump\" flag")
    case = "b93a-mlperf-dell-2node-b200-bert-tcpstore-recv-failed-should-dump-after-run-stop"
    d = _diagnose(case)
    assert d.verdict == "healthy", d.primary
    assert any("after the run said training finished" in n for n in d.notes)
    # near miss: the same lines after a run_stop that did not succeed are a failure
    log = _case(case).log.replace('"status": "success"', '"status": "aborted"')
    assert Diagnoser().diagnose(Named("output.log", log.encode())).verdict == "failure"


def test_a_crash_the_shell_reports_below_a_traceback_is_how_that_exception_ended_the_process() -> None:
    # diffusion-point-cloud: "RuntimeError: CUDA error: invalid device function", then the shell's
    # "Segmentation fault (core dumped)": the process crashed as it exited; the CUDA error is why
    case = "b118b-diffusion-point-cloud-train-ae-validate-emd-cd-invalid-device-function-rtx2080"
    d = _diagnose(case)
    assert d.primary is not None and d.primary.id == "cuda-driver-mismatch/unsupported-gpu-arch"
    assert all("Segmentation fault" not in ln.text for ln in d.primary.evidence)
    # near miss: the same crash with no exception above it is the segfault itself
    crash_only = "\n".join(ln for ln in _case(case).log.splitlines() if ln.startswith("Segmentation fault"))
    d = Diagnoser().diagnose(Named("output.log", (crash_only + "\n").encode()))
    assert d.primary is not None and d.primary.id == "native-crash/segfault"


def test_accelerates_refusal_of_several_rtx_40_cards_names_the_p2p_check() -> None:
    # be_great: the one line Accelerate's state set-up raises for RTX 40-series GPUs without
    # NCCL_P2P_DISABLE/NCCL_IB_DISABLE; nothing else in the log
    _named_not_near("b119e-be-great-accelerate-rtx4000-p2p-ib-notimplementederror-one-line",
                    "hf-trainer-failure/consumer-gpu-p2p-ib-unsupported", ("Using RTX", "# RTX"))


def test_the_oldest_gpu_matrix_product_size_mismatch_is_a_shape_mismatch() -> None:
    # MobilePose on a pre-0.4 torch: THC's "size mismatch at .../THCTensorMathBlas.cu:247", no shapes named
    _named_not_near("b119i-mobilepose-resnet-fc-thc-blas-size-mismatch-input-size",
                    "tensor-shape-mismatch/incompatible-shapes", ("size mismatch at", "invalid argument at"))


def test_nan_log_probabilities_of_a_preference_trainer_are_a_non_finite_forward() -> None:
    # Simple-Trl-Training: TRL's DPOTrainer runs all its steps, but every logged dict has
    # 'logps/chosen': nan ... 'logits/rejected': nan while 'loss' reads 0.0
    # near miss: the same dicts with finite log-probabilities and logits
    near = [(f"'{k}/{side}': nan", f"'{k}/{side}': -1.5") for k in ("logps", "logits") for side in ("chosen", "rejected")]
    _named_not_near("b119k-simple-trl-dpo-finished-with-nan-rewards-and-exploding-then-zero-loss",
                    "nan-loss/nonfinite-loss", *near)


def test_a_bar_still_at_zero_below_an_error_is_no_progress_after_it() -> None:
    # torchio: two "ERROR: Unexpected bus error encountered in worker" lines, then tqdm redraws its bar at
    # 0/67 a minute later. With no signature for them (the worker entry left out, as the leave-one-out
    # measure does) the error lines still end the run: the bar did not move past them
    from trainmedic.evaluate.unknown import without
    diagnoser = Diagnoser(without(load_library(), "dataloader-worker-failure"), parallel=False)
    log = _case("b79a-torchio-dmri-67-subjects-unexpected-bus-error").log
    d = diagnoser.diagnose(Named("output.log", log.encode()))
    assert d.verdict == "failure" and d.primary is not None
    assert d.primary.id == "unclassified-failure/error-lines"
    # near miss: the same bar having counted batches after the errors is a run that went on
    moved = log.replace("0/67 [01:11<?, ?it/s]", "12/67 [01:11<04:40, 5.10s/it]")
    assert diagnoser.diagnose(Named("output.log", moved.encode())).verdict == "healthy"
    # and a rank's own bar at 0 is its own: the other ranks' progress below its error does not cover it
    error = next(ln for ln in log.splitlines() if ln.startswith(" ERROR: Unexpected bus error"))
    ranked = ("[rank1]:  0%|          | 0/67 [00:00<?, ?it/s]\n"
              f"[rank1]:{error.strip()}\n"
              "[rank0]: 18%|█▊        | 12/67 [01:11<04:40,  5.10s/it]\n"
              "[rank0]: 19%|█▉        | 13/67 [01:16<04:35,  5.10s/it]\n")
    d = diagnoser.diagnose(Named("output.log", ranked.encode()))
    assert d.verdict == "failure" and d.primary is not None and d.primary.rank == 1


def test_the_epoch_row_of_a_yolo_trainer_is_progress_even_with_its_bar_cut() -> None:
    # Eagle-YOLO (YOLOv5): W&B's console copy cuts each row's bar ("1600: 100%|█|"); the rows
    # "0/199  18.6G ..." and "1/199  19.4G ..." still say two epochs ran after the warnings
    case = "b73h-healthy-eagle-yolo-visdrone-imgaug-missing-autoanchor-warnings"
    assert _diagnose(case).verdict == "healthy"
    # near miss: rows without the GPU memory column are not the trainer's; the warnings' error words then end it
    log = _case(case).log.replace("18.6G", "18.6 ").replace("19.4G", "19.4 ")
    assert Diagnoser().diagnose(Named("output.log", log.encode())).verdict == "failure"


def test_loss_data_index_zero_under_a_later_torch_is_the_0_4_api_change() -> None:
    # OpenNRE-PyTorch: "return loss.data[0]" then "IndexError: invalid index of a 0-dim tensor. Use
    # tensor.item() ..."; torch 0.4 itself only warned
    _named_not_near("b119m-opennre-pytorch-loss-data-0-index-0-dim-tensor-version",
                    "dependency-version-mismatch/api-changed",
                    ("IndexError: invalid index of a 0-dim tensor. Use", "UserWarning: invalid index of a 0-dim tensor. "
                     "This will be an error in PyTorch 0.5. Use"))


def test_apex_without_its_compiled_part_is_a_missing_module() -> None:
    # imaginaire on Windows: apex installed without --cuda_ext, "RuntimeError: apex.optimizers.FusedAdam
    # requires cuda extensions" when the optimizer is built
    _named_not_near("b119p-imaginaire-munit-windows-apex-fusedadam-requires-cuda-extensions",
                    "dependency-version-mismatch/module-missing", ("requires cuda extensions", "requires parameters"))


def test_th_index_out_of_range_of_an_embedding_lookup_is_an_index_out_of_range() -> None:
    # yanwii/seq2seq on a torch 0.4 build: nn.Embedding's lookup, "RuntimeError: index out of range at
    # .../aten/src/TH/generic/THTensorMath.cpp:352"
    _named_not_near("b119m-yanwii-seq2seq-embedding-size-hardcoded-index-out-of-range-th",
                    "cuda-device-side-assert/index-out-of-range", ("index out of range at", "IndexError: list index out of range; at"))


def test_an_old_cffi_extension_missing_thcs_state_was_built_for_another_torch() -> None:
    # PWC-Net_pytorch on Colab: "_correlation.so: undefined symbol: state", the THC global torch.utils.ffi
    # extensions linked against
    _named_not_near("b119o-pwcnet-pytorch-ffi-correlation-so-undefined-symbol-state",
                    "missing-cuda-libraries/extension-abi-mismatch", ("undefined symbol: state", "undefined symbol: "
                                                                       "_ZN5boost6system15system_categoryEv"))


def test_an_element_wise_op_of_torch_before_broadcasting_reports_sizes_that_do_not_match() -> None:
    # SkipNet on torch 0.2: "R = r + gamma * R", "RuntimeError: invalid argument 3: sizes do not match at
    # .../THCTensorMathPointwise.cu:217"
    _named_not_near("b119q-skipnet-rnn-gate-rl-reinforce-return-sizes-do-not-match-pytorch-0-2",
                    "tensor-shape-mismatch/incompatible-shapes", ("sizes do not match at", "out of memory at"))


def test_state_dict_key_lists_retyped_without_their_colon_are_still_a_key_mismatch() -> None:
    # pytorch-3dunet: the poster retyped the two lines, 'Missing key(s) in state_dict "module.encoders..."' and
    # 'Unexpected key(s) in state_dict "encoders..."', without load_state_dict's colon
    # near miss: the same words as prose, no key after them
    _named_not_near("b82c-3dunet-resume-dataparallel-prefix", "checkpoint-load-mismatch/state-dict-mismatch",
                    ('in state_dict "module.', "in state_dict (module."),
                    ('in state_dict "encoders.', "in state_dict (encoders."))


def test_atens_own_check_of_an_arguments_size_is_a_shape_mismatch() -> None:
    # captcha_break: ctc_loss's argument check, "Expected tensor to have size at least 6 at dimension 1, but got
    # size 64 for argument #2 'targets' (while checking arguments for ctc_loss_gpu)"
    _named_not_near("b119v-captcha-break-ctc-pytorch-targets-size-check-n-input-length-wrong",
                    "tensor-shape-mismatch/incompatible-shapes", ("to have size at least 6 at dimension 1, but got size 64",
                                                                  "to have scalar type Long; but got torch.cuda.IntTensor"))


def test_a_cuda_tensor_type_not_enabled_is_torch_0_4s_cpu_only_build() -> None:
    # "RuntimeError: torch.cuda.FloatTensor is not enabled." at model.cuda() is torch 0.4 built without CUDA.
    # SGC's sparse form under torch 0.4.1 (the maintainer: it needs torch >= 1.0) is the near miss
    case = "b119t-sgc-reddit-torch041-cuda-sparse-floattensor-not-enabled"
    d = _diagnose(case)
    assert d.primary is None or d.primary.id != "missing-cuda-libraries/cpu-only-build"
    assert _primary_if_changed(case, ("torch.cuda.sparse.FloatTensor", "torch.cuda.FloatTensor")) == (
        "missing-cuda-libraries/cpu-only-build")


def test_a_shell_in_another_locale_reports_the_same_crash() -> None:
    # MaskPLS: a zh_CN shell's "段错误 (核心已转储)" (Segmentation fault (core dumped)) glued to a validation bar
    # is the segfault, also with the native-crash entry left out (the fallback's crash words know it); the
    # same glyphs inside a sentence are not
    case = "b120e-maskpls-minkowskiengine-lightning-validate-segfault-chinese-locale"
    _named_not_near(case, "native-crash/segfault", ("段错误 (核心已转储)", " 段错误的常见原因"))
    log = _case(case).log
    less = Diagnoser(unknown.without(load_library(), "native-crash"))
    assert less.diagnose(Named("output.log", log.encode())).verdict == "failure"


def test_a_supervisors_negative_return_code_is_the_childs_signal() -> None:
    # PyTorch-BigGraph: "A subprocess exited unexpectedly with status -11" is a child's SIGSEGV; status 11
    # (an exit code, no signal) is not
    _named_not_near("b120h-kgtk-pytorch-biggraph-graph-embeddings-subprocess-exited-status-11",
                    "native-crash/segfault", ("with status -11", "with status 11"))


def test_dividing_by_an_empty_loaders_length_is_the_empty_dataset() -> None:
    # WaveGlow: ZeroDivisionError on `int(iteration / len(train_loader))` before the first step is a dataset
    # that came out empty; the same exception on a line that divides by something else is not
    _named_not_near("b120b-waveglow-epoch-offset-len-train-loader-zero-division",
                    "training-config-error/empty-dataset", ("len(train_loader)", "hparams.iters_per_epoch"))


def test_dividing_by_the_length_of_an_empty_sample_list_is_the_empty_dataset() -> None:
    # gpt-2's Sampler: `self.total_size // len(self.chunks)` with no chunk loaded; a divisor that is not a
    # length (a count from the config) is the near miss
    _named_not_near("more32s-gpt2-tf-finetune-windows-zero-chunks-zerodivision",
                    "training-config-error/empty-dataset", ("self.total_size // len(", "self.total_size // n_ctx("))


def test_a_c_extension_class_named_with_its_module_lost_an_attribute_across_versions() -> None:
    # tensorboardX written for torch 1.1+ on torch 1.0: "'torch._C.Value' object has no attribute 'debugName'";
    # a lower-case class with its module ('numpy.ndarray', the code's own mistake) is the near miss
    _named_not_near("b120k-sphereface-train-tensorboardx-add-graph-debugname-missing-torch-1-0",
                    "dependency-version-mismatch/api-changed", ("'torch._C.Value' object", "'numpy.ndarray' object"))


def test_a_keyerror_on_the_line_that_indexes_with_a_parsed_argument_is_the_command_line() -> None:
    # EfficientDet.Pytorch: --network effcientdet-d0 (a typo) reaches `EFFICIENTDET[args.network]`; the same
    # KeyError on a line that indexes with a local name is the code's own
    case = "b120m-efficientdet-pytorch-train-py-network-name-typo-keyerror-effcientdet-d0"
    _named_not_near(case, "cli-error/invalid-arguments", ("EFFICIENTDET[args.network]", "EFFICIENTDET[network]"))


@pytest.mark.parametrize("case", ["b121f-comprehensive-tacotron2-dataparallel-gather-input-tensor-invalid-shape-mel-length",
                                  "b121f-speech-transformer-dataparallel-gather-invalid-size-per-gpu-max-length-differs"])
def test_dataparallel_gathering_replicas_of_other_lengths_is_a_shape_mismatch(case: str) -> None:
    # torch 1.x "Gather got an input of invalid size: got [..], but expected [..]" and 2.x "Input tensor at index
    # 1 has invalid shape [..], but expected [..]"; scatter's check on its outputs is the near miss
    _named_not_near(case, "tensor-shape-mismatch/incompatible-shapes",
                    ("Input tensor at index 1 has invalid shape", "Output tensor at index 1 has invalid shape"),
                    ("Gather got an input of invalid size: got", "Scatter got an input of invalid size: got"))


def test_ddp_given_a_module_partly_on_the_cpu_is_a_device_mismatch() -> None:
    # PICK: DDP's check that the module sits on one device, its parameter set naming the CPU beside cuda:0;
    # two GPUs in the set (a model split across devices on purpose) is the near miss
    _named_not_near("b121f-pick-pytorch-ddp-sync-batchnorm-module-params-cuda-and-cpu-device-ids-assertion",
                    "device-mismatch/tensors-on-different-devices",
                    ("device(type='cpu')", "device(type='cuda', index=1)"))


def test_an_image_folder_that_found_no_image_is_the_empty_dataset() -> None:
    # torchvision's DatasetFolder (0.2-0.4): "Found 0 files in subfolders of: ROOT"; 0.10+'s one empty class
    # folder ("Found no valid file for the classes ...", often a stray folder) is the near miss
    _named_not_near("b122e-centernet-deep-sort-reid-train-imagefolder-found-0-files-in-subfolders",
                    "training-config-error/empty-dataset",
                    ("RuntimeError: Found 0 files in subfolders of:", "FileNotFoundError: Found no valid file for the classes"))


def test_an_unknown_cuda_error_at_cudas_first_call_is_the_driver() -> None:
    # re-id baseline: "cuda runtime error (30) : unknown error" (cudaErrorUnknown before CUDA 10.1) raised by
    # torch._C._cuda_init(), CUDA's lazy start; the same error raised by a training step is the near miss
    _named_not_near("b122f-reid-triplet-dataparallel-cuda-init-runtime-error-30-unknown",
                    "cuda-driver-mismatch/driver-library-mismatch", ("    torch._C._cuda_init()", "    loss.backward()"))


def test_a_launch_the_cuda_runtime_refused_is_an_invalid_launch_configuration() -> None:
    # libkge's backward: "CUDA error: invalid configuration argument" (cudaErrorInvalidConfiguration, an empty
    # or oversized grid); the same words about a config file's argument are the near miss
    _named_not_near("b124a-libkge-transe-kvsall-backward-cuda-invalid-configuration-argument",
                    "cuda-illegal-memory-access/invalid-launch-configuration",
                    ("CUDA error: invalid configuration argument", "ValueError: invalid configuration argument"))


def test_an_empty_tensor_viewed_with_minus_one_is_a_shape_mismatch() -> None:
    # iMolCLR's NT-Xent loss on an empty batch: ATen's infer_size "cannot reshape tensor of 0 elements into
    # shape [0, -1]"; a resize of a tensor that requires grad is the near miss
    _named_not_near("b124b-imolclr-brics-timeouts-then-nt-xent-reshape-zero-elements",
                    "tensor-shape-mismatch/incompatible-shapes",
                    ("cannot reshape tensor of 0 elements into shape [0, -1] because the unspecified dimension size -1 "
                     "can be any value and is ambiguous", "cannot resize variables that require grad"))


def test_a_cpp_bad_alloc_raised_to_python_is_a_host_allocation_failure() -> None:
    # JT-VAE under torch 0.3.1: "RuntimeError: std::bad_alloc"; thrust's GPU allocation failure carries CUDA's
    # error after it, and is the near miss
    _named_not_near("b124b-jtnn-molvae-pretrain-torch031-runtimeerror-std-bad-alloc",
                    "host-oom/cpu-allocation-failure",
                    ("RuntimeError: std::bad_alloc", "RuntimeError: std::bad_alloc: cudaErrorMemoryAllocation: out of memory"))


def test_a_random_generator_on_another_device_is_a_device_mismatch() -> None:
    # DSNeRF: the sampler's randperm under a CUDA default tensor type, "Expected a 'cuda' device type for
    # generator but found 'cpu'"; a sentence about the generator's device is the near miss
    _named_not_near("b124d-dsnerf-rays-dataloader-randperm-generator-cpu-default-cuda-tensor-type",
                    "device-mismatch/tensors-on-different-devices",
                    ("Expected a 'cuda' device type for generator but found 'cpu'",
                     "generator device type cuda, found 'cpu' checkpoint"))


def test_the_stack_protector_aborting_is_memory_corruption() -> None:
    # Gaussian-SLAM's mapping: "*** stack smashing detected ***: terminated" then the shell's "Aborted (core
    # dumped)"; a build flag's mention of stack smashing is the near miss (the abort alone stays an abort)
    _named_not_near("b124d-gaussian-slam-replica-room0-first-mapping-stack-smashing-detected-aborted",
                    "native-crash/heap-corruption",
                    ("*** stack smashing detected ***: terminated", "stack smashing detection enabled"))


def test_an_index_tensor_of_a_float_dtype_is_a_dtype_mismatch() -> None:
    # MTGNN: "IndexError: tensors used as indices must be long, byte or bool tensors" (1.2-1.x wording); too
    # many indices is a shape error and the near miss
    _named_not_near("b124e-mtgnn-train-single-step-index-tensor-not-long-indexerror",
                    "dtype-mismatch/incompatible-dtypes",
                    ("tensors used as indices must be long, byte or bool tensors", "too many indices for tensor of dimension 2"))


def test_a_module_linked_against_a_newer_libstdcxx_than_the_loader_found() -> None:
    # pandas' compiled module needing GLIBCXX_3.4.29 from the system's older libstdc++; a missing CUDA runtime
    # library is the near miss
    _named_not_near("b111b-fasterrcnn-pipeline-train-pandas-glibcxx-3-4-29-system-libstdcxx",
                    "dependency-version-mismatch/glibc-too-old",
                    ("version `GLIBCXX_3.4.29' not found", "libcudart.so.11.0: cannot open shared object file"))


def test_a_class_the_main_guard_defines_is_missing_in_a_spawned_worker() -> None:
    # VLCStoryGan on Windows: the worker re-imports the script as __mp_main__ and cannot find the transform
    # the main block defined; the same lookup on an importable module (a pickle's own class) is the near miss
    _named_not_near("b125a-vlcstorygan-windows-train-worker-cant-get-video-transform-on-mp-main",
                    "dataloader-worker-failure/spawn-unpicklable-object",
                    ("<module '__mp_main__'", "<module 'transforms'"))


def test_a_network_error_raised_making_the_store_is_an_unreachable_store() -> None:
    # CC-FPSE under torch 1.x: TCPStore's constructor raising "RuntimeError: Network is unreachable"; the port
    # being taken there is the near miss (another cause)
    _named_not_near("b125d-cc-fpse-mp-spawn-tcp-rendezvous-network-unreachable", "rendezvous-failure/store-unreachable",
                    ("RuntimeError: Network is unreachable", "RuntimeError: Address already in use"))


def test_the_masters_host_name_that_does_not_resolve_is_an_unreachable_store() -> None:
    # guided-diffusion's dist_util.setup_dist looking its own host name up on Windows: a headless traceback
    # ending "socket.gaierror: [Errno 11001] getaddrinfo failed" (a lower-case exception class, once read as
    # a host prefix, which turned the traceback into a stack dump and the run into a hang); the same error
    # from a download is the near miss
    case_id = "b125d-guided-diffusion-seg-windows-setup-dist-getfqdn-gaierror"
    d = _diagnose(case_id)
    assert d.primary is not None and d.primary.id == "rendezvous-failure/store-unreachable"
    assert _primary_if_changed(case_id, ("socket.gethostbyname(socket.getfqdn())", "requests.get(url)")) \
        == "unclassified-failure/uncaught-exception"


def test_a_matrix_product_whose_paste_lost_a_space_is_a_shape_mismatch() -> None:
    # TFace: "mat1 and mat2 shapes cannot be multiplied(128x32768 and 512x512)"; the sizes removed is the near miss
    _named_not_near("b125h-tface-mobilefacenet-input-size-224-mat1-mat2", "tensor-shape-mismatch/incompatible-shapes",
                    ("multiplied(128x32768 and 512x512)", "multiplied"))


def test_a_validation_interval_longer_than_the_epoch_is_a_lightning_misconfiguration() -> None:
    # casanovo: the fit loop's ValueError on an integer val_check_interval over the epoch's batch count; the
    # check on a float interval out of range is the near miss
    _named_not_near("b126g-casanovo-lightning-val-check-interval-29-one-train-batch",
                    "lightning-failure/misconfiguration",
                    ("`val_check_interval` (29) must be less than or equal to the number of the training batches (1)",
                     "`val_check_interval` should be an integer or a float in the range [0.0, 1.0], got 1.5"))


def test_spconv_names_the_cuda_error_by_its_number() -> None:
    # mmdet3d's vendored spconv (tensorview's TV_CHECK_CUDA_ERR): "cuda execution failed with error 9" is
    # cudaErrorInvalidConfiguration; another number (98, an invalid device function) is the near miss
    _named_not_near("b129c-mmdet3d-spconv-reordering-cuda-error-9",
                    "cuda-illegal-memory-access/invalid-launch-configuration",
                    ("failed with error 9", "failed with error 98"))


def test_a_checkpoint_saved_from_zero3_partitions_holds_empty_matrices() -> None:
    # a LoRA adapter saved under ZeRO-3 without gathering: every matrix comes back as torch.Size([0]); the
    # same lines with a real saved shape are an ordinary state_dict mismatch
    case_id = "b129d-chinese-llama2-lora-zero3-empty-adapter-merge"
    _named_not_near(case_id, "deepspeed-failure/zero3-params-not-gathered",
                    ("torch.Size([0]) from checkpoint", "torch.Size([32, 8192]) from checkpoint"))
    assert _primary_if_changed(case_id, ("torch.Size([0]) from checkpoint", "torch.Size([32, 8192]) from checkpoint")) \
        == "checkpoint-load-mismatch/state-dict-mismatch"


def test_no_attention_kernel_for_the_inputs_is_named() -> None:
    # xFormers' dispatcher found no backward operator for float32 inputs of head size 80 on an sm_86 GPU (a
    # paste without the exception's class); the operators' reasons alone are the near miss
    _named_not_near("b129e-diffusers-train-controlnet-xformers-0016-backward",
                    "attention-kernel-unsupported/xformers-no-operator",
                    ("No operator found for `memory_efficient_attention_backward` with inputs: ", ""))
    # scaled_dot_product_attention restricted to FlashAttention-2 with an attention mask; another
    # RuntimeError from the same call is the near miss
    _named_not_near("b109c-latentsync-sdpa-attn-mask-fa2-unsupported-platform-no-available-kernel",
                    "attention-kernel-unsupported/sdpa-no-available-kernel",
                    ("No available kernel. Aborting execution.", "Expected query, key and value to have the same dtype"))


def test_hifigans_progress_line_shows_the_nan() -> None:
    # HiFi-GAN's "Steps : 40, Gen Loss Total :  nan, Mel-Spec. Error : 2.021, ..." ({:4.3f} pads nan after
    # the spaced colon); the same lines with the numbers the run printed before is the near miss
    _named_not_near("b129a-hifigan-ljspeech-gen-loss-explodes-then-nan", "nan-loss/nonfinite-loss",
                    ("Gen Loss Total :  nan", "Gen Loss Total : 199.692"), ("Mel-Spec. Error :  nan", "Mel-Spec. Error : 2.021"))


def test_a_nan_loss_stays_the_failure_while_later_epochs_show_no_finite_loss() -> None:
    # nnU-Net v2: "train_loss nan" and "val_loss nan" in epoch 0, then "Epoch 1" and the log ends: the epochs
    # go on, each with its NaN (as a NaN run does), so the weak metric line is not cleared by that progress;
    # finite losses in two later epochs are the near miss (a skipped step, training then went on)
    case_id = "b130h-nnunetv2-png-dataset-nan-loss-from-epoch0"
    later = ("Current learning rate: 0.00999 ",
             "Current learning rate: 0.00999 \n2023-08-09 15:40:17.401215: train_loss 0.4121 \n"
             "2023-08-09 15:40:17.431002: Epoch 2 \n2023-08-09 16:02:40.118231: train_loss 0.5307 \n"
             "2023-08-09 16:02:40.150012: Epoch 3 \n2023-08-09 16:25:02.441781: train_loss 0.5522 ")
    _named_not_near(case_id, "nan-loss/nonfinite-loss", later)
    # GLPDepth: finite losses for ten epochs, then NaN from epoch 11 with the bars going on: the same
    d = _diagnose("b110d-glpdepth-nyu-depth-loss-goes-nan-in-epoch-11-tensorboard-nan-or-inf-warning-loudest-line")
    assert d.verdict == "failure" and d.primary is not None and d.primary.id == "nan-loss/nonfinite-loss"


def test_fewer_microbatches_than_pipeline_stages_is_a_parallel_layout_error() -> None:
    # nanotron's 1F1B engine asserts PP-1 micro-batches at least; its own count printed at start-up is the
    # near miss
    _named_not_near("b130a-nanotron-pp8-microbatches-below-pp-size", "megatron-failure/parallel-layout-invalid",
                    ("Number of microbatches (1) must be at least PP_SIZE-1=7 when using the",
                     "Number of microbatches: 1, PP_SIZE: 8, the"))


def test_numpy_loading_a_damaged_index_file_is_a_corrupt_cache() -> None:
    # Megatron's index cache read by np.load on another node while it was being written: "Failed to interpret
    # file '..._shuffle_idx.npy' as a pickle" (interleaved by two processes); a file read as JSON is the near miss
    _named_not_near("b130a-pai-megatron-multinode-index-cache-shuffle-idx-unpickle", "corrupt-sample/unpickle-error",
                    ("as a pickle", "as JSON"))


def test_a_dll_that_windows_cannot_load_at_import_is_a_missing_library() -> None:
    # torch 1.5 on Windows loads its DLLs with ctypes.CDLL in torch/__init__.py: OSError [WinError 127] from
    # ctypes' _dlopen, with no "Error loading" line; the same OSError with another Windows error (5, access
    # denied) is the near miss
    _named_not_near("b130e-train-ocr-import-torch-1-5-winerror-127-caffe2-detectron-ops-gpu",
                    "missing-cuda-libraries/library-not-found",
                    ("[WinError 127] The specified procedure could not be found", "[WinError 5] Access is denied"))


def test_a_resumed_optimizer_whose_state_is_for_other_parameters_is_a_checkpoint_mismatch() -> None:
    # jiant reloading a checkpoint into a model whose layer grew: Adam's `exp_avg.mul_(beta1)` raises "The
    # expanded size of the tensor (6144) must match the existing size (4096)"; the same error raised in the
    # model's own forward is the near miss (a shape bug in the code)
    _named_not_near("b131b-jiant-multitask-reload-checkpoint-adam-exp-avg-expanded-size",
                    "checkpoint-load-mismatch/state-dict-mismatch",
                    ("exp_avg.mul_(beta1).add_(1 - beta1, grad)", "hidden = hidden.expand(batch, 6144)"),
                    ("site-packages/torch/optim/adam.py", "site-packages/jiant/modules/encoder.py"))


def test_a_policy_std_that_turned_nan_is_a_non_finite_failure() -> None:
    # rsl_rl's PPO sampling its actions: torch.normal refuses the std ("normal expects all elements of std >=
    # 0.0"); log_normal_'s check of a zero std is the near miss
    _named_not_near("b131e-mjlab-custom-robot-multi-env-ppo-std-invalid", "nan-loss/nonfinite-loss",
                    ("normal expects all elements of std >= 0.0", "log_normal_ expects std > 0.0, but found std=0"))


def test_a_video_without_a_video_stream_is_an_undecodable_sample() -> None:
    # decord's "ERROR cannot find video stream with wanted index: -1" for a badly cut clip; another decord
    # check that failed is the near miss
    _named_not_near("b131a-decord-no-video-stream-badly-cut-clips", "corrupt-sample/undecodable-file",
                    ("ERROR cannot find video stream with wanted index: -1", "ERROR seek failed"))


def test_a_tar_shard_cut_short_is_a_truncated_sample() -> None:
    # webdataset re-raising tarfile's "unexpected end of data" with the shard and rank 18's node info; a
    # shard tarfile cannot open at all is the near miss
    _named_not_near("b131a-webdataset-tar-unexpected-end-of-data-rank18", "corrupt-sample/truncated-file",
                    ('"unexpected end of data @', '"file could not be opened successfully @'))


def test_a_data_parallel_module_off_its_first_device_is_a_device_mismatch() -> None:
    # nn.DataParallel's check of device_ids[0]; the message cut before its device names is the near miss
    _named_not_near("b131c-yolov3-multigpu-dataparallel-params-on-cuda1", "device-mismatch/tensors-on-different-devices",
                    ("(device_ids[0]) but found one of them on device: cuda:1", ""))


def test_ffmpegs_own_log_lines_are_no_failure() -> None:
    # LLaMA-VID's fine-tuning printed FFmpeg's "[h264 @ 0x7d53ee00] mmco: unref short failure" and trained on;
    # the same words without FFmpeg's av_log prefix are the near miss (a line of failure no entry knows)
    case_id = "b131d-llama-vid-finetune-h264-mmco-warning-healthy"
    assert _diagnose(case_id).verdict == "healthy"
    assert _primary_if_changed(case_id, ("[h264 @ 0x7d53ee00] ", "")) == "unclassified-failure/error-lines"


def test_webdataset_refusing_to_run_without_a_node_splitter_is_unsharded_data() -> None:
    # webdataset, several ranks and no nodesplitter: its ValueError names the mechanism; another ValueError
    # of the same pipeline is the near miss
    _named_not_near("b131a-webdataset-explicit-nodesplitter-multinode",
                    "iterable-dataset-duplication/not-sharded-per-rank",
                    ("you need to add an explicit nodesplitter to your input pipeline for multi-node training",
                     "you need to add a shuffle buffer to your input pipeline"))


def test_a_go_program_in_the_pipeline_at_the_process_limit_is_a_thread_limit() -> None:
    # a `pipe:` shard reader written in Go: "runtime: failed to create new OS thread (have 2 already;
    # errno=11)"; the same with errno=12 (no memory for the thread) is the near miss
    _named_not_near("b131a-webdataset-pipe-newosproc-errno11", "host-resource-limit/thread-creation-failed",
                    ("errno=11)", "errno=12)"))


def test_glibc_asserting_inside_malloc_is_heap_corruption() -> None:
    # deep-text-recognition-benchmark: "python3: malloc.c:4725: _int_memalign: Assertion ... failed."; a
    # program's own assertion in that form is the near miss
    _named_not_near("b131d-dtrb-train-malloc-memalign-assertion", "native-crash/heap-corruption",
                    ("malloc.c:4725: _int_memalign: Assertion", "train.c:4725: align_batch: Assertion"))


def test_dali_wrapping_bad_alloc_is_a_host_allocation_failure() -> None:
    # DALI: "RuntimeError: Critical error in pipeline: std::bad_alloc"; another critical error of the
    # pipeline (an operator failing) is the near miss
    _named_not_near("b131a-dali-pipeline-std-bad-alloc", "host-oom/cpu-allocation-failure",
                    ("std::bad_alloc", "Error when executing CPU operator readers__File"))


def test_a_rank_calling_mpi_abort_is_a_failure() -> None:
    # Open MPI's "MPI_ABORT was invoked on rank 2 in communicator ... with errorcode 1." ends a SageMaker MPI
    # job (called healthy before: nothing else in the paste); Open MPI's note on what MPI_ABORT does is the
    # near miss
    case_id = "b130b-hf-sagemaker-byo-summarizer-mpi-abort-rank2"
    d = _diagnose(case_id)
    assert d.verdict == "failure" and d.primary is not None and d.primary.id == "unclassified-failure/process-exited"
    assert _primary_if_changed(case_id, (" MPI_ABORT was invoked on rank 2 in communicator MPI COMMUNICATOR 5 DUP FROM 0",
                                         " MPI_COMM_WORLD was set up on rank 2")) is None


def test_batchgenerators_abort_event_is_a_worker_death() -> None:
    # nnU-Net v1's MultiThreadedAugmenter: "Abort event was set. So someone died and we should end this
    # madness." (its worker died, the error above it not in the paste); the near miss is the message cut to
    # its first words
    # (a worker's death whose reason the log does not give is answered by what resolved threads most often
    # found behind it: the message cannot tell them apart)
    from trainmedic.evaluate.score import answers

    case_id = "b130h-nnunetv1-docker-abort-event-epoch1"
    d = _diagnose(case_id)
    assert d.primary is not None and d.primary.id.startswith("dataloader-worker-failure/")
    assert answers("dataloader-worker-failure/worker-exited", d.primary.id, from_message=True)
    near = _primary_if_changed(case_id, ("Abort event was set. So someone died and we should end this madness.",
                                         "Abort event was set."))
    assert near is None or not near.startswith("dataloader-worker-failure/")


def test_bitsandbytes_without_a_binary_for_its_cuda_is_a_missing_library() -> None:
    # bitsandbytes 0.35-0.41: "CUDA SETUP: Required library version not found: libbitsandbytes_cuda117_nocublaslt.so"
    # then the CPU fallback (called healthy before); loading the binary it looked for is the near miss
    _named_not_near("b132b-bnb-nocublaslt-cc70-defaults-to-cpu", "missing-cuda-libraries/library-not-found",
                    ("CUDA SETUP: Required library version not found: libbitsandbytes_cuda117_nocublaslt.so. "
                     "Maybe you need to compile it from source?",
                     "CUDA SETUP: Loading binary /home/user/bitsandbytes/libbitsandbytes_cuda117_nocublaslt.so..."),
                    ("CUDA SETUP: Defaulting to libbitsandbytes_cpu.so...", "CUDA SETUP: Detected CUDA version 117"))


def test_bitsandbytes_cuda_detection_banner_is_a_missing_library() -> None:
    # the same module's "CUDA SETUP: CUDA detection failed! Possible reasons:" banner (with the binary it
    # could not find above it); its other setup lines are the near miss
    _named_not_near("b132b-bnb-cuda121-source-build-defaults-to-cpu-lib", "missing-cuda-libraries/library-not-found",
                    ("CUDA SETUP: CUDA detection failed! Possible reasons:", "CUDA SETUP: CUDA detection done. Notes:"),
                    ("CUDA SETUP: Required library version not found: libbitsandbytes_cuda121.so",
                     "CUDA SETUP: Loading binary libbitsandbytes_cuda121.so"))


def test_cuda_named_symbol_not_found_is_a_binary_without_this_gpus_kernels() -> None:
    # bitsandbytes' "Error named symbol not found at line 74 in file ...ops.cu" (cudaErrorSymbolNotFound: the
    # DLL holds no kernel for this GPU); "undefined symbol", a loader's complaint, is the near miss
    _named_not_near("b132b-bnb-windows-finetune-named-symbol-not-found", "cuda-driver-mismatch/unsupported-gpu-arch",
                    ("Error named symbol not found at line 74", "Error undefined symbol at line 74"))


def test_peft_target_modules_given_as_a_regex_are_not_found() -> None:
    # PEFT with target_modules as one string (a regex over module names) prints it bare: "Target modules
    # model.layers.[\d]+.(mlp|...)_proj not found in the base model"; "Target module ... is not supported" is
    # the near miss
    _named_not_near("b132b-axolotl-qwen2vl-example-regex-target-modules",
                    "hf-trainer-failure/lora-target-modules-not-found",
                    ("not found in the base model. Please check the target modules and try again.",
                     "is not supported."))


def test_opencv_insufficient_memory_is_a_host_allocation_failure() -> None:
    # YOLOv5 caching images in RAM: "cv2.error: ... error: (-4:Insufficient memory) Failed to allocate 4672512
    # bytes in function 'OutOfMemoryError'"; another OpenCV error (an assertion) is the near miss
    _named_not_near("b132c-yolov5-cache-opencv-insufficient-memory", "host-oom/cpu-allocation-failure",
                    ("(-4:Insufficient memory) Failed to allocate 4672512 bytes",
                     "(-215:Assertion failed) !ssize.empty()"))


def test_xrt_oom_hint_is_tpu_memory_exhausted() -> None:
    # torch_xla on XRT: the per-buffer "XLA label: ... Allocation type: scoped" listing and TF's "Hint: If you
    # want to see a list of allocated tensors when OOM happens" (the status line scrolled off); the near miss
    # is the hint without its OOM
    _named_not_near("b132e-hf-run-glue-tpu-xrtcompile-oom-scoped-allocation", "cuda-out-of-memory/xla-hbm-exhausted",
                    ("Hint: If you want to see a list of allocated tensors when OOM happens, add "
                     "report_tensor_allocations_upon_oom", "Hint: If you want to see a list of compiled programs, add "
                     "report_compilations"))


def test_habana_device_pool_allocation_failure_is_hpu_oom() -> None:
    # optimum-habana on 8 Gaudi cards: "[Rank:7] FATAL ERROR :: MODULE:PT_DEVMEM Allocation failed for
    # size::469762048 (448)MB", then a segmentation fault (the echo); another bridge module's fatal error is
    # the near miss
    _named_not_near("b132e-habana-llama70b-lora-model-to-hpu-devmem-allocation-failed",
                    "cuda-out-of-memory/hpu-device-oom",
                    ("MODULE:PT_DEVMEM Allocation failed for size::469762048 (448)MB",
                     "MODULE:PT_BRIDGE Lowering failed for op::469762048 (448)MB"))
    _named_not_near("b132e-habana-sdxl-finetune-validation-hpu-graph-workspace-oom",
                    "cuda-out-of-memory/hpu-device-oom",
                    ("MODULE:PT_SYNHELPER workspace Allocation of size ::6450192384 failed!",
                     "MODULE:PT_SYNHELPER graph compilation of recipe ::6450192384 failed!"))


def test_elastic_heartbeat_that_cannot_reach_the_store_is_the_store_lost() -> None:
    # torchrun on WSL: "has failed to send a keep-alive heartbeat to the rendezvous '123' due to an error of
    # type RendezvousConnectionError", then the agent's own "Connection reset by peer" from _call_store; a
    # heartbeat that timed out (a busy host) is the near miss
    _named_not_near("b132f-torchrun-wsl-keepalive-store-connection-reset", "peer-connection-lost/store-lost",
                    ("due to an error of type RendezvousConnectionError", "due to an error of type RendezvousTimeoutError"),
                    ("in _call_store", "in _call_agent"))


def test_fairseq_architectures_must_match_is_a_state_dict_mismatch() -> None:
    # fairseq's trainer: "Exception: Cannot load model parameters from checkpoint ./bart.base/model.pt; please
    # ensure that the architectures match." (the size mismatch it wraps not pasted); fairseq's unreadable
    # checkpoint is the near miss
    _named_not_near("b132d-fairseq-bart-base-cnndm-restore-arch-mismatch",
                    "checkpoint-load-mismatch/state-dict-mismatch",
                    ("Cannot load model parameters from checkpoint ./bart.base/model.pt; please ensure that the "
                     "architectures match.", "Cannot load checkpoint from ./bart.base/model.pt: file is not a zip archive"),
                    ('"please ensure that the architectures match.".format(filename)', '"cannot load".format(filename)'))


def test_trl_health_check_refused_is_the_vllm_server_not_running() -> None:
    # axolotl GRPO with TRL's vLLM client: "Max retries exceeded with url: /health/ (Caused by
    # NewConnectionError(... [Errno 111] Connection refused))"; a refused download from the Hub is the near miss
    _named_not_near("b132b-axolotl-grpo-modal-vllm-health-connection-refused",
                    "vllm-rollout-failure/server-not-running",
                    ("Max retries exceeded with url: /health/", "Max retries exceeded with url: /api/models/gpt2"))


def test_triton_kernel_out_of_shared_memory_is_its_own_failure() -> None:
    # Mamba's Triton kernel with head size 512: "triton.runtime.autotuner.OutOfResources: out of resource: shared
    # memory, Required: 663808, Hardware limit: 101376" (called healthy before: no traceback in the paste); the
    # same words from an allocator's OutOfMemoryError (inductor's "out of resource: <kernel name>") are the
    # near miss
    _named_not_near("b133d-mamba-mqar-headdim-512-triton-shared-memory-out-of-resources",
                    "triton-kernel-failure/out-of-resources",
                    ("triton.runtime.autotuner.OutOfResources: out of resource: shared memory, Required: 663808, "
                     "Hardware limit: 101376",
                     "OutOfMemoryError: out of resource: triton_per_fused_add_7 Required: 663808 Hardware limit:101376"))
    # and in IPython, where the class prints bare
    _named_not_near("b102c-contexto-champion-unsloth-grpo-vllm-rollout-rtx2070-triton-prefix-prefill-out-of-shared-memory",
                    "triton-kernel-failure/out-of-resources",
                    ("OutOfResources: out of resource: shared memory, Required: 98304, Hardware limit: 65536",
                     "OutOfResources: shared memory 98304 > 65536"))


def test_physx_kernels_that_no_longer_launch_are_read_as_an_illegal_access() -> None:
    # IsaacGymEnvs: "PxgTGSCudaSolverCore.cpp (1858) : internal error : GPU solveContactParallel fail to launch
    # kernel!!" for every PhysX kernel after the context broke; PhysX's own API misuse report is the near miss
    _named_not_near("b133f-isaacgymenvs-gjkepa-physx-kernels-fail-to-launch",
                    "cuda-illegal-memory-access/illegal-address",
                    (" fail to launch kernel!!", " called illegally!"))


def test_ddp_given_a_module_split_over_gpus_is_a_device_map_under_a_launcher() -> None:
    # ChatGLM fine-tuning: "DistributedDataParallel device_ids and output_device arguments only work with
    # single-device/multiple-device GPU modules or CPU modules, but got device_ids [1], output_device 1, and
    # module parameters {device(type='cuda', index=0), device(type='cuda', index=1)}" (a device_map='auto' load
    # under torchrun); the same refusal without device_ids (a CPU module given output_device) is the near miss
    _named_not_near("b134c-chatglm6b-multigpu-ddp-model-spread-over-two-gpus", "hf-trainer-failure/device-map-distributed",
                    ("but got device_ids [1], output_device 1, and module", "but got device_ids None, output_device 1, and module"))
    # and with the parameter set wrapped onto the next line, as pasted
    _named_not_near("b134c-zero-nlp-chatglm-ddp-module-on-three-gpus", "hf-trainer-failure/device-map-distributed",
                    ("but got device_ids [0], output_device 0, and module", "but got device_ids None, output_device 0, and module"))


def test_windows_extension_missing_a_torch_procedure_is_an_abi_mismatch() -> None:
    # diff_gaussian_rasterization on Windows: "ImportError: DLL load failed: Die angegebene Prozedur wurde nicht
    # gefunden." at the package's `from . import _C` (its _C.pyd built for another torch); a DLL that is not
    # there at all ("module could not be found") is the near miss
    _named_not_near("b135d-3dgs-windows-german-dll-procedure-not-found", "missing-cuda-libraries/extension-abi-mismatch",
                    ("Die angegebene Prozedur wurde nicht gefunden", "Das angegebene Modul wurde nicht gefunden"))
    # and in Japanese, where the import is the near miss: torch's own _C is not claimed
    _named_not_near("b135d-dreamgaussian-windows-after-pull-dll-procedure-not-found",
                    "missing-cuda-libraries/extension-abi-mismatch", ("from . import _C", "from torch._C import *"))


def test_pip_failing_to_build_an_extension_wheel_is_a_build_failure() -> None:
    # gaussian-opacity-fields: "ERROR: Failed building wheel for diff_gaussian_rasterization" and "ERROR: Could
    # not build wheels for diff_gaussian_rasterization, which is required to install pyproject.toml-based
    # projects" (the compiler wrapper missing above); the wheel built is the near miss
    _named_not_near("b135d-gof-diff-rast-build-conda-cxx-wrapper-missing", "jit-extension-build/build-failed",
                    ("ERROR: Failed building wheel for diff_gaussian_rasterization",
                     "Successfully built diff_gaussian_rasterization"),
                    ("ERROR: Could not build wheels for diff_gaussian_rasterization",
                     "Installing collected packages: diff_gaussian_rasterization"))


def test_a_thread_header_glued_to_a_progress_bar_still_marks_a_thread_traceback() -> None:
    # YOLOv9's plotting threads: "      0/39  12.2G ... 640:  Exception in thread Thread-5 (plot_images):" (the
    # bar left without its newline), then the thread's traceback, while the main loop trains 40 epochs to
    # "Results saved to": healthy. Without the thread header the same tracebacks end the run
    case_id = "b98b-yolov9-e-ec2-plot-images-thread-freetypefont-getsize-tracebacks-40-epochs-complete"
    assert _diagnose(case_id).verdict == "healthy"
    assert _primary_if_changed(case_id, ("Exception in thread ", "Exception in module ")) is not None
    # and at the start of its line with the rest of a bar after it ("Exception in thread Thread-5:      | loss =")
    assert _diagnose("more16b-ok-wandb-filestream-thread-traceback-training-continues").verdict == "healthy"


def test_a_loss_scale_halved_below_1e_10_is_the_scaler_at_its_end() -> None:
    # NVIDIA DeepLearningExamples BERT with LAMB in fp16: DLLogger's "PARAMETER loss_scale : 3.637978807091713e-12"
    # halving every step to 1e-44, then "average_loss : nan" (the NaN is the echo); the same lines at a scale
    # of 1e-05, a few halvings from the start, are the near miss
    _named_not_near("b109j-nvidia-dle-bert-pytorch-lamb-fp16-loss-scale-halves-to-1e-44-average-loss-nan",
                    "grad-scaler-overflow/min-loss-scale",
                    ("e-1", "e-0"), ("e-2", "e-0"), ("e-3", "e-0"), ("e-4", "e-0"))


def test_a_worker_death_the_sigchld_handler_raised_into_ignored_code_is_a_failure() -> None:
    # OpenPCDet: "Exception ignored in: <function _releaseLock ...>" over a traceback whose innermost frame is
    # the DataLoader's SIGCHLD handler (signal_handling.py, in handler) raising "DataLoader worker (pid 280265)
    # exited unexpectedly with exit code 1": Python ignored the exception, not the dead worker. The same
    # ignored traceback from another function (a destructor's noise) is the near miss
    from trainmedic.evaluate.score import answers

    case_id = "b136a-openpcdet-pvrcnn-worker-exited-code-1"
    d = _diagnose(case_id)
    assert d.verdict == "failure" and d.primary is not None
    assert answers("dataloader-worker-failure/worker-exited", d.primary.id, from_message=True)
    near = _primary_if_changed(case_id, ("line 66, in handler", "line 66, in __del__"))
    assert near is None or not near.startswith("dataloader-worker-failure/")


def test_spconv_warning_that_its_wheel_has_no_kernels_for_the_gpu() -> None:
    # MSMDFusion on an sm_89 card: spconv's "[Exception|implicit_gemm]" report under "[WARNING]your gpu arch (8, 9)
    # isn't compiled in prebuilt, may cause invalid device function"; the exception report alone is the near miss
    _named_not_near("b136a-msmdfusion-spconv2-sm89-not-prebuilt", "cuda-driver-mismatch/unsupported-gpu-arch",
                    ("[WARNING]your gpu arch (8, 9) isn't compiled in prebuilt, may cause invalid device function.",
                     "[WARNING]your input is large, may cause a slow first step."))


def test_horovod_built_without_gpu_operations_is_a_cpu_only_build() -> None:
    # once-for-all under mpirun: hvd.broadcast_parameters on a GPU tensor raises Horovod's "Internal error.
    # Requested ReadyEvent with GPU device but not compiled with CUDA."; the same words for a CPU device
    # (no GPU request) are the near miss
    _named_not_near("b120n-once-for-all-train-ofa-net-horovod-broadcast-readyevent-not-compiled-with-cuda",
                    "missing-cuda-libraries/cpu-only-build",
                    ("with GPU device but not compiled", "with CPU device and compiled"))


def test_an_mpi_library_a_container_lacks_is_a_library_not_found() -> None:
    # LUMI's TensorFlow/Horovod container without the host's Cray MPI bound in: "libmpi_cray.so.12: cannot open
    # shared object file"; a sound library missing the same way (libsndfile) is the near miss
    _named_not_near("more37d-lumi-container-horovod-tf-libmpi-cray-not-bound", "missing-cuda-libraries/library-not-found",
                    ("libmpi_cray.so.12", "libsndfile.so.1"))


def test_decord_giving_up_on_a_clips_last_frames_is_a_truncated_video() -> None:
    # TinyLLaVA-Video: decord's "[BytesIO]Unable to handle EOF because it takes too long to retrieve last few
    # frames and `DECORD_EOF_RETRY_MAX=10240`" on one training clip, which the maintainer called corrupted; the
    # same lines without the EOF report (only the project's "Corrupted video found") are the near miss
    _named_not_near("b131a-tinyllava-video-decord-eof-corrupted-video", "corrupt-sample/truncated-file",
                    ("Unable to handle EOF because it takes too long", "Unable to read"))


def test_arrow_failing_to_map_one_more_cache_file_is_the_mapping_cap() -> None:
    # HF datasets over ~70k Arrow files: pyarrow's "Memory mapping file failed: Cannot allocate memory" (each
    # cache file is a mapping, the per-process cap is vm.max_map_count); a plain ENOMEM is the near miss
    _named_not_near("b138d-datasets-pyarrow-mmap-cannot-allocate-70k-files", "dataloader-worker-failure/mmap-count-limit",
                    ("Memory mapping file failed: Cannot allocate memory", "[Errno 12] Cannot allocate memory"))


def test_a_dataset_emptied_of_its_columns_is_a_dataset_model_mismatch() -> None:
    # TRL SFT on Falcon: "IndexError: Invalid key: 28 is out of bounds for size 0", the Trainer having removed every
    # column the model's forward does not take; a dataset of real size (a sampler out of step) is the near miss
    _named_not_near("b138d-trl-falcon-sft-invalid-key-out-of-bounds-size-0", "hf-trainer-failure/dataset-model-mismatch",
                    ("out of bounds for size 0", "out of bounds for size 20"))


def test_a_compiled_kernel_module_never_imported_is_a_missing_module() -> None:
    # VMamba: "NameError: name 'selective_scan_cuda' is not defined", the kernels' import having failed in a
    # try/except; an undefined name of the user's own (not a compiled module) is the near miss
    _named_not_near("b137g-vmamba-csms6s-selective-scan-cuda-not-defined", "dependency-version-mismatch/module-missing",
                    ("name 'selective_scan_cuda' is not defined", "name 'selective_scan' is not defined"))


def test_a_failed_assert_that_predictions_are_finite_is_a_nonfinite_loss() -> None:
    # RAFT-Stereo on a custom dataset: a bare AssertionError from `assert not torch.isnan(flow_preds[i]).any() and
    # not torch.isinf(...)` in sequence_loss; the same bare assert on a shape (no finiteness check) is the near miss
    _named_not_near("b139d-raft-stereo-custom-dataset-nan-preds-assert", "nan-loss/nonfinite-loss",
                    ("assert not torch.isnan(flow_preds[i]).any() and not torch.isinf(flow_preds[i]).any()",
                     "assert flow_preds[i].shape == flow.shape"))


def test_gather_buffers_of_another_size_are_a_shape_mismatch() -> None:
    # arcface_torch's all_gather of embeddings into buffers of another size: "All tensor operands to scatter/gather
    # must have the same number of elements"; the device check beside it in c10d is the near miss
    _named_not_near("b139b-arcface-torch-allgather-emb256-numel-mismatch", "tensor-shape-mismatch/incompatible-shapes",
                    ("All tensor operands to scatter/gather must have the same number of elements",
                     "Corresponding input/output tensors to scatter/gather must all reside on the same device"))


def test_a_vits_loss_list_logged_as_nan_is_a_nonfinite_loss() -> None:
    # VITS (Chinese): "INFO:ljs_base:[nan, nan, nan, 83.04, 0.99, inf, 28400, 0.0002]" at every log step, the loss
    # list its train loop logs through logging's default format; the same lines with finite first terms are the
    # near miss
    _named_not_near("b129a-vits-chinese-loss-nan-inf-monotonic-align", "nan-loss/nonfinite-loss",
                    ("[nan, nan, nan,", "[2.47, 2.33, 7.11,"))


def test_a_jit_kernel_compile_missing_its_headers_is_a_build_failure() -> None:
    # Tutel's runtime JIT: NVRTC's 'catastrophic error: cannot open source file "cuda_runtime.h"', then the kernel
    # load's "(fp != nullptr)INTERNAL ASSERT FAILED at .../custom_kernel.cpp"; the assert from another file with
    # no compile error before it is the near miss
    _named_not_near("b140d-tutel-nvrtc-cuda-runtime-header-missing", "jit-extension-build/build-failed",
                    ('catastrophic error: cannot open source file "cuda_runtime.h"', "note: using cached source"),
                    ("custom_kernel.cpp", "loader.cpp"))


def test_layoutlm_boxes_outside_the_1000_grid_are_an_index_out_of_range() -> None:
    # LayoutLMv2 DocVQA rerun on the CPU: "IndexError: The `bbox` coordinate values should be within 0-1000 range.";
    # another IndexError in its place is the near miss
    _named_not_near("b140a-layoutlmv2-docvqa-cpu-rerun-bbox-range-indexerror", "cuda-device-side-assert/index-out-of-range",
                    ("The `bbox` coordinate values should be within 0-1000 range.", "list index out of range"))


def test_a_repositorys_kernels_never_built_are_a_missing_module() -> None:
    # CenterPoint in OpenPCDet: "ImportError: cannot import name 'iou3d_nms_cuda' from 'pcdet.ops.iou3d_nms" (unknown
    # location), the ops never compiled; and Megatron's C++ dataset helpers never made. A public name a release
    # dropped (no kernel suffix) is the near miss: a renamed API
    _named_not_near("b136a-centerpoint-kitti-iou3d-nms-cuda-not-built", "dependency-version-mismatch/module-missing",
                    ("iou3d_nms_cuda", "iou3d_nms_gpu"))
    _named_not_near("b91c-megatron-neuron-helpers-not-built", "dependency-version-mismatch/module-missing",
                    ("cannot import name 'helpers'", "cannot import name 'indexed_dataset'"))


def test_a_completion_only_mask_without_its_response_marker_is_a_template_mismatch() -> None:
    # Dolly-style collator: "RuntimeError: Could not find response key [396, 673, 29901] in token IDs tensor(...)";
    # Unsloth: "ZeroDivisionError: Unsloth: All labels in your dataset are -100". Another RuntimeError and another
    # ZeroDivisionError in their places are the near misses
    _named_not_near("b129d-trl-completion-collator-response-key-not-found",
                    "training-config-error/response-template-not-found",
                    ("Could not find response key", "Could not find a tensor"))
    _named_not_near("b137a-unsloth-gemma3-h100-responses-only-zero-division",
                    "training-config-error/response-template-not-found",
                    ("Unsloth: All labels in your dataset are -100", "division by zero"))


def test_physx_failing_its_device_allocation_is_a_cuda_runtime_oom() -> None:
    # IsaacGymEnvs: the log ends at PhysX's "PxgCudaDeviceMemoryAllocator fail to allocate memory 100663296 bytes!!
    # Result = 2" (cudaErrorMemoryAllocation); the simulator's start-up lines alone are the near miss
    _named_not_near("b125f-isaacgymenvs-physx-gpu-allocator-fail-result-2", "cuda-out-of-memory/cuda-runtime-oom",
                    ("PxgCudaDeviceMemoryAllocator fail to allocate memory 100663296 bytes!! Result = 2",
                     "Physics Device: cuda:0"))


def test_an_exception_that_says_the_loss_was_nan_is_the_nonfinite_loss() -> None:
    # neuralhydrology's trainer: "RuntimeError: Loss was NaN for 1 times in a row. Stopped training."
    _named_not_near("b141b-neuralhydrology-camels-gb-loss-nan-stopped", "nan-loss/nonfinite-loss",
                    ("Loss was NaN for", "Loss was logged for"))


def test_scaled_adam_giving_up_on_nonfinite_grads_is_the_nonfinite_loss() -> None:
    # icefall's ScaledAdam: "RuntimeError: Too many grads were not finite" from its clipping-scale estimate
    _named_not_near("b141h-icefall-zipformer-finetune-too-many-grads-not-finite", "nan-loss/nonfinite-loss",
                    ("grads were not finite", "grads were not found"))


def test_ignites_terminate_on_nan_ends_the_run_with_a_nonfinite_loss() -> None:
    # PyTorch-Ignite's TerminateOnNan logs a warning and terminates the engine: the run ended on a NaN output,
    # not a log that merely stops
    _named_not_near("b141d-ignite-cyclegan-terminate-on-nan", "nan-loss/nonfinite-loss",
                    ("contains NaN or Inf. Stop training", "contains NaN or Inf. Continuing"))


def test_nccl_failing_a_cuda_call_for_want_of_kernels_is_the_gpu_arch() -> None:
    # NCCL 2.4.8 (built for CUDA 10.1) on compute capability 8: "NCCL WARN Cuda failure 'invalid device
    # function'" names a build without kernels for the card, not a generic unhandled cuda error
    _named_not_near("b141c-beir-colbert-nccl-invalid-device-function-old-nccl",
                    "cuda-driver-mismatch/unsupported-gpu-arch",
                    ("Cuda failure 'invalid device function'", "Cuda failure 'invalid argument'"))


def test_a_tfrecord_reader_short_read_is_a_truncated_file() -> None:
    # the tfrecord package raises "Failed to read the record." when a record's bytes end before its framing
    # says they do; raised through the DataLoader's fetch, the file is the cause, not the dataset's code
    _named_not_near("b141e-tfrecord-failed-to-read-record-linux", "corrupt-sample/truncated-file",
                    ("RuntimeError: Failed to read the record.", "RuntimeError: Failed to parse the record."))


def test_nccl_unable_to_resolve_a_gpus_sysfs_path_is_a_system_error() -> None:
    # NCCL's topology detection on a host whose /sys hides the PCI tree: "Could not find real path of
    # /sys/class/pci_bus/..." then "-> 2" (ncclSystemError) up through init
    _named_not_near("b141g-humannerf-nccl-pci-bus-real-path-system-error", "nccl-error/system-error",
                    ("NCCL WARN Could not find real path of /sys/", "NCCL INFO Resolved real path of /sys/"))


def test_libtiff_reading_fewer_bytes_than_a_strip_holds_is_a_truncated_file() -> None:
    # GDAL through libtiff: "TIFFFillStrip:Read error at scanline N; got 0 bytes, expected 25709": the tile's
    # data ends before its directory says; a missing file (another error) is the near miss
    _named_not_near("b142a-paraformer-chesapeake-tiff-read-error-scanline", "corrupt-sample/truncated-file",
                    ("Read error at scanline 4294967295; got 0 bytes, expected 25709", "Cannot open TIFF file"))


def test_torch_04s_thd_nccl_error_without_a_comma_is_still_the_unhandled_cuda_error() -> None:
    # fairseq-py on torch 0.4: "NCCL error in: .../DataChannelNccl.cpp:322 unhandled cuda error"
    _named_not_near("b142c-fairseq-thd-nccl-unhandled-cuda-error-multi-gpu", "nccl-error/unhandled-cuda-error",
                    ("unhandled cuda error", "invalid argument"))


def test_opennmt_reports_with_nan_perplexity_are_a_nonfinite_loss() -> None:
    # OpenNMT-py's "Step N/M; acc:   0.19; ppl:   nan; xent:  nan;" from one report on: the loss went NaN
    _named_not_near("b142c-onmt-transformer-ppl-nan-after-step-5650", "nan-loss/nonfinite-loss",
                    ("ppl:   nan; xent:  nan", "ppl:  9.99; xent: 2.30"))


def test_nvdiffrasts_own_cuda_malloc_failing_is_a_runtime_oom() -> None:
    # nvdiffrast: "RuntimeError: Cuda error: 2[cudaMalloc(&m_gpuPtr, bytes);]", 2 = cudaErrorMemoryAllocation;
    # another CUDA error code in the same form is not an allocation failure
    _named_not_near("b143b-nvdiffrast-depth-peel-cudamalloc-error-2", "cuda-out-of-memory/cuda-runtime-oom",
                    ("Cuda error: 2[cudaMalloc", "Cuda error: 700[cudaMalloc"))


def test_basicsr_loss_terms_printed_as_nan_are_a_nonfinite_loss() -> None:
    # BasicSR-style training logs ("... l_pix: nan") from the first step after a resume, to the end of the log
    _named_not_near("b143d-efnet-event-deblur-resumed-l-pix-nan", "nan-loss/nonfinite-loss",
                    ("l_pix: nan", "l_pix: 2.4391e-02"))


@pytest.mark.parametrize(("case_id", "old", "new"), [
    # SynapseAI before 1.5 names Gaudi's pools without the PT_ prefix; another module's fatal error is not an OOM
    ("b146h-habana-facerec-backward-workspace-alloc", "MODULE:SYNHELPER workspace Allocation",
     "MODULE:SYNHELPER workspace compilation"),
    ("b146h-optimum-habana-gpt2-clm-devmem-alloc", "MODULE:DEVMEM Allocation failed", "MODULE:DEVMEM Release failed"),
])
def test_gaudi_pool_allocation_failures_without_the_pt_prefix_are_an_hpu_oom(case_id: str, old: str,
                                                                             new: str) -> None:
    _named_not_near(case_id, "cuda-out-of-memory/hpu-device-oom", (old, new))


def test_thcs_cublas_mapping_error_is_a_failed_cublas_call() -> None:
    # torch <= 1.4: "cublas runtime error : an access to GPU memory space failed at .../THCBlas.cu:21"
    _named_not_near("b147a-spade-spectral-norm-cublas-error", "cuda-illegal-memory-access/cublas-execution-failed",
                    ("an access to GPU memory space failed", "an unknown status was returned"))


def test_older_accelerates_notebook_launcher_wording_is_a_fork_after_cuda_init() -> None:
    _named_not_near("b147h-accelerate-notebook-launcher-cuda-initialized", "cuda-reinit-forked/fork-after-cuda-init",
                    ("CUDA has been initialized before notebook_launcher()", "CUDA was not found by notebook_launcher()"))


def test_a_c10d_op_with_no_kernel_for_the_tensors_device_is_a_collective_on_the_wrong_device() -> None:
    # "The operator 'c10d::broadcast_' is not currently implemented for the XPU device"; an aten op is not one
    _named_not_near("b146h-ultralytics-xpu-ddp-broadcast-not-implemented", "device-mismatch/collective-tensor-device",
                    ("'c10d::broadcast_'", "'aten::nanmedian'"))


def test_a_dim_taken_of_a_0_d_tensor_is_a_shape_error() -> None:
    _named_not_near("b146b-pytorch-forecasting-multi-gpu-tensor-no-dimensions",
                    "tensor-shape-mismatch/incompatible-shapes",
                    ("dimension specified as -1 but tensor has no dimensions", "tensor has no grad"))


def test_a_library_missing_a_cuda_api_entry_point_is_mixed_cuda_releases() -> None:
    # UCX's CUDA transport built for a newer CUDA: "undefined symbol: cuCtxSetFlags"; a cuRAND symbol is not it
    _named_not_near("b148f-megatron-ds-mpirun-hpcx-ucx-cuctxsetflags", "missing-cuda-libraries/symbol-mismatch",
                    ("undefined symbol: cuCtxSetFlags", "undefined symbol: curandCreateGenerator"))


def test_physx_naming_cuda_error_700_is_an_illegal_address() -> None:
    _named_not_near("b147d-isaaclab-physx-narrowphase-error-700", "cuda-illegal-memory-access/illegal-address",
                    ("failed! 700", "failed! 7001"), ("failed with error 700", "failed with error 7001"))


def test_c10s_windows_terminate_handler_is_an_uncaught_cpp_exception() -> None:
    _named_not_near("b148h-t2itrainer-flux-kontext-blockswap-abort-handler", "native-crash/cpp-terminate",
                    ("Unhandled exception caught in c10/util/AbortHandler.h", "Handler installed"))


def test_torchs_own_extension_missing_a_dependent_dll_is_a_library_not_found() -> None:
    # Windows, `from torch._C import *`: "DLL load failed: The specified module could not be found" (a DLL torch
    # depends on is missing); "The specified procedure could not be found" there is another version, not this
    _named_not_near("b148g-tacotron2-train-windows-torch-c-dll-load-failed", "missing-cuda-libraries/library-not-found",
                    ("The specified module could not be found", "The specified procedure could not be found"))


def test_pygs_words_for_its_gathers_device_assert_are_an_index_out_of_range() -> None:
    # "Encountered a CUDA error. Please ensure that all indices in 'edge_index' point to valid indices ..."
    _named_not_near("b149a-pyg-neighborloader-gae-edge-index-cuda-error", "cuda-device-side-assert/index-out-of-range",
                    ("Encountered a CUDA error. Please ensure", "Encountered a warning. Please ensure"))


def test_a_cutlass_kernel_built_without_its_arch_target_is_an_unsupported_gpu_arch() -> None:
    _named_not_near("b149f-torchao-float8-rowwise-b200-arch-mma-abort", "cuda-driver-mismatch/unsupported-gpu-arch",
                    ("used without targeting appropriate compute capability", "used with the appropriate compute capability"))


def test_autocasts_refusal_of_bf16_on_an_older_gpu_is_an_unsupported_precision() -> None:
    _named_not_near("b149f-nanogpt-autocast-bf16-unsupported-gpu", "hf-trainer-failure/mixed-precision-unsupported",
                    ("Current CUDA Device does not support bfloat16", "Current CUDA Device does not support float8"))


def test_repeat_given_fewer_sizes_than_the_tensors_dimensions_is_a_shape_error() -> None:
    _named_not_near("b149d-longlora-tinyllama-attention-mask-repeat-dims", "tensor-shape-mismatch/incompatible-shapes",
                    ("Number of dimensions of repeat dims can not be smaller", "Number of repeats can not be smaller"))


def test_a_quantized_model_split_over_gpus_in_a_distributed_run_is_a_device_map_refusal() -> None:
    # accelerate's prepare_model: "You can't train a model that has been loaded in 8-bit precision on multiple
    # devices in any distributed mode."; the same words about another device are the other check
    _named_not_near("b150d-starcoder-8bit-distributed-valueerror", "hf-trainer-failure/device-map-distributed",
                    ("on multiple devices in any distributed mode", "on multiple devices, which is slow"))


def test_tensorflows_crash_handler_in_a_torch_process_reports_the_signal() -> None:
    # "*** Received signal 7 ***" then "*** Received signal 11 ***" (TensorFlow's stacktrace handler): a native
    # crash, both signals named; without the handler's lines nothing ends the run
    d = _diagnose("b150b-vilbert-mt-signal7-mangled-stack-trace")
    assert d.verdict == "failure" and d.primary is not None
    assert {d.primary.id, *(a.id for a in d.alternatives)} >= {"native-crash/segfault", "native-crash/bus-error"}
    log = _case("b150b-vilbert-mt-signal7-mangled-stack-trace").log.replace("*** Received signal", "*** Handler for signal")
    _assert_healthy(log)


def test_open_mpis_refusal_to_launch_more_ranks_than_slots_is_a_failure() -> None:
    # torchpack dist-run -> mpirun: a help banner with no error word, and nothing after it; not a healthy run
    d = _diagnose("b148f-bevfusion-torchpack-mpirun-not-enough-slots")
    assert d.verdict == "failure" and d.primary is not None
    assert any("not enough slots available" in e.text for e in d.primary.evidence)
    log = _case("b148f-bevfusion-torchpack-mpirun-not-enough-slots").log.replace(
        "There are not enough slots available in the system to satisfy the 6", "There are 8 slots in the system for the 6")
    _assert_healthy(log)


def test_ffmpegs_concealed_macroblock_errors_alone_are_a_healthy_runs_warnings() -> None:
    # TimeSformer on Kinetics: "error while decoding MB 6 6, bytestream 224" every few iterations, training went on
    case = "b146d-timesformer-k400-h264-decode-errors-healthy"
    d = _diagnose(case)
    assert d.verdict == "healthy"
    assert any("corrupt-sample/undecodable-file" in n for n in d.notes)
    # near miss: the same log ending in a crash is still a failure
    d = Diagnoser().diagnose(Named("output.log", (_case(case).log + "Segmentation fault (core dumped)\n").encode()))
    assert d.verdict == "failure"


def test_an_extensions_own_launch_check_and_nvrtc_name_a_gpu_the_build_has_no_code_for() -> None:
    # FlowNet2's correlation layer prints cudaGetErrorString after its kernel; the cause is the build's arch list
    _named_not_near("b152a-vid2vid-flownet2-correlation-invalid-device-function",
                    "cuda-driver-mismatch/unsupported-gpu-arch", ("invalid device function", "out of memory"))
    # TorchScript's fuser compiling through NVRTC for a compute capability NVRTC does not know
    _named_not_near("b151g-earthparser-torchscript-nvrtc-arch", "cuda-driver-mismatch/unsupported-gpu-arch",
                    ("invalid value for --gpu-architecture (-arch)", "invalid value for --use_fast_math"))


def test_an_exception_printed_by_a_batchgenerators_background_worker_is_the_datasets() -> None:
    # nnU-Net v2's NonDetMultiThreadedAugmenter: a transform raised KeyError 'image' in worker 0
    _named_not_near("b153a-nnunetv2-dasegord0-keyerror-image-worker", "dataloader-worker-failure/getitem-exception",
                    ("Exception in background worker 0:", "Exception while exporting case 0:"))


def test_a_hungarian_matchers_refusal_of_its_cost_matrix_is_a_model_gone_nan() -> None:
    # DETR3D: scipy's linear_sum_assignment finds NaN in the costs of the predicted boxes
    _named_not_near("b153b-detr3d-lsap-invalid-numeric-entries", "nan-loss/nonfinite-loss",
                    ("matrix contains invalid numeric entries", "cost matrix is infeasible"))


def test_a_notebooks_traceback_header_naming_out_of_memory_is_an_oom() -> None:
    # mmdetection in a notebook: the paste ends at IPython's header, the class name all that is left
    _named_not_near("b153h-mmdet-centripetalnet-loss-explodes-eval-oom", "cuda-out-of-memory/allocator-oom",
                    ("OutOfMemoryError  ", "MemoryError  "))


def test_a_wrappers_exception_reporting_its_launcher_subprocess_is_an_echo_of_the_workers() -> None:
    # ultralytics' DDP trainer ran `python -m torch.distributed.run` with subprocess.run(check=True): its own
    # traceback ends in the launcher's CalledProcessError, which says only that the workers failed
    _named_not_near("b153b-ultralytics-rtdetr-ddp-subprocess-exit", "unclassified-failure/process-exited",
                    ("ultralyticsENV/bin/python', '-m'", "ultralyticsENV/bin/convert', '-m'"))


def test_thcs_scatter_gather_assertion_is_an_index_out_of_range() -> None:
    # torch 1.1 on Windows: a one-hot scatter of mask values past num_class fails THC's own index check
    _named_not_near("b153c-satellite-seg-scatter-gather-index-assert", "cuda-device-side-assert/index-out-of-range",
                    ("THCTensorScatterGather.cu", "THCTensorCopy.cu"), ("indexValue >= 0 && indexValue < tensor.sizes",
                                                                       "src != nullptr && dst != nullptr &&"))


def test_dalis_allocator_failure_is_a_gpu_out_of_memory() -> None:
    # DALI's Mixed ImageDecoder could not get device memory: "CUDA allocation failed" is all its allocator says
    _named_not_near("b154f-dali-mixed-decoder-cuda-allocation-failed", "cuda-out-of-memory/cuda-runtime-oom",
                    ("CUDA allocation failed", "CUDA stream creation failed"))


def test_an_apex_amp_guarded_as_none_is_apex_missing() -> None:
    # Swin's main.py: `try: from apex import amp` / `except ImportError: amp = None`, then amp.initialize(...)
    _named_not_near("b154b-swin-apex-missing-amp-none-initialize", "dependency-version-mismatch/module-missing",
                    ("object has no attribute 'initialize'", "object has no attribute 'opt_level'"))


def test_dalis_file_reader_finding_no_files_is_an_empty_dataset() -> None:
    # DeepLearningExamples' ResNet-50 with DALI: file_root held no class folders
    _named_not_near("b154c-resnet50-dali-filereader-no-files-found", "training-config-error/empty-dataset",
                    ("failed: No files found.", "failed: Cannot open: /data/train"))


def test_hydras_refused_command_line_override_is_an_invalid_argument() -> None:
    # TTRL on verl: `reward_model.reward_kwargs.n_samples_per_prompt=32` for a key the config does not have
    _named_not_near("b151b-ttrl-verl-hydra-override-key-not-in-struct", "cli-error/invalid-arguments",
                    ("Could not override 'reward_model.reward_kwargs.n_samples_per_prompt'.\n", ""),
                    ("To append to your config use +", "Append to your config: "))


def test_a_template_mismatch_with_a_loss_of_zero_is_the_failure_before_it_persists() -> None:
    # MoE-LLaVA on Qwen with the mpt template: two "tokenization mismatch" warnings and the loss at 0.0
    _named_not_near("b155b-moe-llava-qwen-mpt-template-loss-zero", "training-config-error/conversation-template-mismatch",
                    ("{'loss': 0.0,", "{'loss': 1.4375,"))


def test_mps_refusing_a_matrix_product_of_non_float_inputs_is_its_dtype_gap() -> None:
    # neuraloperator's FNO on an M1: the spectral conv's complex bmm on MPS
    _named_not_near("b141b-neuralop-fno-mps-bmm-complex-unsupported", "device-backend-unsupported/mps-dtype-unsupported",
                    ("MPS device does not support bmm for non-float inputs", "MPS device does not support bmm here"))


def test_torch_tensorboards_import_guard_is_tensorboard_missing() -> None:
    # bubbliiiing's efficientdet in Spyder: SummaryWriter imported with no tensorboard package installed
    _named_not_near("b120m-bubbliiiing-efficientdet-spyder-train-py-tensorboard-summary-writer-missing-importerror",
                    "dependency-version-mismatch/module-missing",
                    ("TensorBoard logging requires TensorBoard with Python summary writer installed",
                     "TensorBoard logging failed to write its summary"))


def test_an_apex_amp_left_unbound_by_its_import_guard_is_apex_missing() -> None:
    # cryoDRGN's train_vae with --amp: `try: from apex import amp` / `except ImportError: pass`
    _named_not_near("b119p-cryodrgn-train-vae-amp-flag-apex-not-installed-nameerror-amp",
                    "dependency-version-mismatch/module-missing", ("name 'amp' is not defined", "name 'optim' is not defined"))


def test_tiny_cuda_nns_check_macro_out_of_memory_is_a_runtime_oom() -> None:
    # instant-ngp on 86 images of 4000x3000: tcnn's gpu_memory.h cudaMalloc refused by the GPU
    _named_not_near("b156b-instant-ngp-cudamalloc-4k-images", "cuda-out-of-memory/cuda-runtime-oom",
                    ("failed with error out of memory", "failed with error invalid argument"))


def test_the_tpu_compilers_permanent_error_out_of_hbm_is_hbm_exhausted() -> None:
    # EasyDeL on a TPU v2: the train step's program needs 21.90G of 7.48G HBM
    _named_not_near("b157g-easydel-tpu-v2-compile-hbm-exhausted", "cuda-out-of-memory/xla-hbm-exhausted",
                    ("in memory space hbm", "in memory space vmem"))


def test_zshs_illegal_hardware_instruction_is_sigill() -> None:
    # a Conv2d on a Raspberry Pi 4, run from zsh
    _named_not_near("b158h-rpi4-conv2d-illegal-hardware-instruction", "native-crash/illegal-instruction",
                    ("illegal hardware instruction", "done"))


def test_miopens_unknown_status_is_the_cudnn_internal_error_of_rocm() -> None:
    # PyLaia's CTC training on an AMD GPU: batch_norm dispatched to MIOpen
    _named_not_near("b156g-pylaia-lightning-htr-batchnorm-miopen-unknown-error", "cudnn-error/internal-error",
                    ("RuntimeError: miopenStatusUnknownError", "RuntimeError: miopenStatusBadParm"))


def test_hips_shared_object_initialisation_failure_is_the_gpu_arch_missing_from_the_build() -> None:
    # an RX 7600 XT (gfx1102) on ROCm 5.7 without HSA_OVERRIDE_GFX_VERSION: the first kernel launch
    _named_not_near("b156g-rx7600-gfx1102-rocm57-shared-object-init-failed", "cuda-driver-mismatch/unsupported-gpu-arch",
                    ("HIP error: shared object initialization failed", "HIP error: invalid argument"))


def test_glogs_signal_report_is_the_signal() -> None:
    # wav2vec2 on a Kaggle TPU with xmp.MpModelWrapper: libtpu's handler reports SIGSEGV in ComputePostOrder
    _named_not_near("b157g-xla-kaggle-mpmodelwrapper-sigsegv-computepostorder", "native-crash/segfault",
                    ("*** SIGSEGV (@(nil)), see", "*** SIGTERM, see"))


def test_a_stack_standing_on_a_reraise_is_raising_not_waiting() -> None:
    # lerobot-train: the DataLoader hands on a worker's AssertionError at `data.reraise()` (the paste ends there)
    case = "b158c-lerobot-merged-dataset-timestamp-tolerance"
    d = _diagnose(case)
    assert d.primary is not None and d.primary.id != "dataloader-worker-failure/worker-hang"
    assert _primary_if_changed(case, ("data.reraise()", "idx, data = self._get_data()")) == "dataloader-worker-failure/worker-hang"


def test_a_worker_exception_that_cannot_be_recreated_on_reraise_is_the_workers() -> None:
    # MIL-NCE on HowTo100M: ffmpeg-python's Error(cmd, stdout, stderr) re-created as exc_type(msg) by old torch
    _named_not_near("b156f-milnce-howto100m-ffmpeg-error-reraise", "dataloader-worker-failure/getitem-exception",
                    ("raise self.exc_type(msg)", "self._check_args(msg)"))


def test_nccls_probe_for_infiniband_on_a_host_without_it_is_a_notice() -> None:
    # detectron2 across two nodes without InfiniBand: NCCL WARNs that libibverbs is absent and uses sockets
    case = "b159f-detectron2-multinode-nccl-warn-libibverbs-socket"
    assert _diagnose(case).verdict == "healthy"
    assert _primary_if_changed(case, ("NCCL WARN Failed to open libibverbs.so[.1]",
                                      "NCCL WARN Connect to 10.188.129.190<43210> failed : Connection refused")) is not None


def test_paddles_dataloader_losing_its_workers_is_a_worker_exit() -> None:
    # PaddleOCR's recognition training: paddle.io's watchdog finds a worker process gone
    _named_not_near("b157a-paddleocr-reader-thread-worker-exit", "dataloader-worker-failure/worker-exited",
                    ("workers exit unexpectedly, pids: 6581", "workers exit, reason unknown"))


def test_vs_codes_kernel_died_notice_is_a_process_that_exited() -> None:
    # MPS training in a VS Code notebook: the kernel dies with no Python error
    _named_not_near("b157h-vscode-jupyter-kernel-died-mps-training", "unclassified-failure/process-exited",
                    ("The kernel 'test (Python 3.10.11)' died.", "The kernel 'test (Python 3.10.11)' is busy."),
                    ("Disposing session as kernel process died", "Disposing session as kernel is idle"))


def test_scipys_wav_reader_finding_no_fmt_chunk_is_an_undecodable_file() -> None:
    # HiFi-GAN's meldataset: scipy.io.wavfile.read on a file with no RIFF 'fmt ' chunk
    _named_not_near("b156c-hifigan-wavfile-read-unboundlocal", "corrupt-sample/undecodable-file",
                    ("scipy/io/wavfile.py", "hifigan/meldataset.py"))
