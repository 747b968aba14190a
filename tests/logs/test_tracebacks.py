"""How a traceback's end says whether the process failed or was stopped by hand."""

from __future__ import annotations

import pytest

from tests.helpers import dev_case
from trainmedic.api import Diagnoser, Named
from trainmedic.logs.tracebacks import assemble_ipython_traceback, assemble_traceback, raising, under_exception

# torch/distributed/elastic/multiprocessing/api.py: the agent's signal handler raises SignalException
_AGENT = [
    b"Traceback (most recent call last):",
    b'  File "/usr/lib/python3.9/site-packages/torch/distributed/elastic/agent/server/api.py", line 864, in _invoke_run',
    b"    time.sleep(monitor_interval)",
    b'  File "/usr/lib/python3.9/site-packages/torch/distributed/elastic/multiprocessing/api.py", line 62, in '
    b"_terminate_process_handler",
    b'    raise SignalException(f"Process {os.getpid()} got signal: {sigval}", sigval=sigval)',
]


@pytest.mark.parametrize(("last", "interrupted"), [
    (b"KeyboardInterrupt", True),
    # Ctrl-C reaching torchrun's agent (SIGINT)
    (b"torch.distributed.elastic.multiprocessing.api.SignalException: Process 1066706 got signal: 2", True),
    # SIGTERM or SIGHUP from outside (a scheduler, a closed terminal) is a stop, not a hand on the keyboard
    (b"torch.distributed.elastic.multiprocessing.api.SignalException: Process 1066706 got signal: 15", False),
    (b"torch.distributed.elastic.multiprocessing.api.SignalException: Process 2920830 got signal: 1", False),
])
def test_ctrl_c_ends_a_traceback_as_an_interruption(last: bytes, interrupted: bool) -> None:
    tb = assemble_traceback([*_AGENT, last], "run.log", 1, None)
    assert tb is not None and tb.interrupted is interrupted


# Two threads of one process dying at once (threading's excepthook for each): both headers, a line of the
# main thread, then both tracebacks line by line into one stream; the second one's last source line and
# exception line come after the first's.
_TWINS = [
    b"Exception in thread Thread-1:",
    b"Exception in thread Thread-3:",
    b"End training....",
    b"Traceback (most recent call last):",
    b"Traceback (most recent call last):",
    b'  File "/usr/lib/python3.10/threading.py", line 1016, in _bootstrap_inner',
    b'  File "/usr/lib/python3.10/threading.py", line 1016, in _bootstrap_inner',
    b"    self.run()",
    b'  File "/env/lib/python3.10/site-packages/tensorboardX/event_file_writer.py", line 202, in run',
    b"    self.run()",
    b'  File "/env/lib/python3.10/site-packages/tensorboardX/event_file_writer.py", line 202, in run',
    b"    data = self._queue.get(True, queue_wait_duration)",
    b'  File "/usr/lib/python3.10/multiprocessing/connection.py", line 136, in _check_closed',
    b"    data = self._queue.get(True, queue_wait_duration)",
    b'  File "/usr/lib/python3.10/multiprocessing/connection.py", line 136, in _check_closed',
    b'    raise OSError("handle is closed")',
    b"OSError: handle is closed",
    b'    raise OSError("handle is closed")',
    b"OSError: handle is closed",
]


def test_twin_threads_interleaved_tracebacks_read_as_one_thread_death_that_ended_nothing() -> None:
    log = b"\n".join(_TWINS) + b"\n"
    [scan] = Diagnoser().scan(Named("train.out", log))
    [tb] = scan.tracebacks
    assert tb.thread and tb.last_line == len(_TWINS)  # the twin's tail is part of it
    # a TensorBoard writer's thread, dead at exit: no failure
    assert Diagnoser().diagnose(Named("train.out", log)).verdict == "healthy"
    # near miss: another exception after the source line is not the twin's tail
    other = [*_TWINS[:-1], b"ValueError: the main thread failed"]
    [tb] = Diagnoser().scan(Named("train.out", b"\n".join(other) + b"\n"))[0].tracebacks
    assert tb.last_line == len(_TWINS) - 2


def _corpus_log(case_id: str) -> list[bytes]:
    return dev_case(case_id).log.encode().split(b"\n")


@pytest.mark.parametrize(("case_id", "exception", "frame"), [
    # IPython 8 (Jupyter): 'Cell In[6], line 28', 'File /path/module.py:1527, in Module._call_impl(self, ...)'
    ("b73l-selectiveft-llama2-7b-12-layer-adam-step-747-cuda-oom", "OutOfMemoryError: CUDA out of memory.",
     'in _call_impl'),
    # IPython 7 (Colab): '/usr/local/lib/python3.10/dist-packages/click/termui.py in prompt_func(text)'
    ("b73l-llama-workout-sfttrainer-wandb-api-key-prompt-abort-colab", "Abort:", "termui.py\", line 0, in prompt_func"),
])
def test_a_notebook_s_ipython_traceback_is_read_as_python_s(case_id: str, exception: str, frame: str) -> None:
    log = _corpus_log(case_id)
    at = next(i for i, ln in enumerate(log) if b"Traceback (most recent call last)" in ln)
    tb = assemble_ipython_traceback(iter(log[at:]), "cell.log", at + 1, None)
    assert tb is not None and tb.exceptions[-1].startswith(exception)
    assert any(frame in f for f in tb.frames) and not tb.truncated
    # (a line that only mentions the words, its first word no class name, is no header)
    assert assemble_ipython_traceback(iter([b"see the      Traceback (most recent call last)", *log[at + 1:]]),
                                      "cell.log", 1, None) is None


def test_an_exception_no_signature_knows_in_a_notebook_s_output_is_a_failure() -> None:
    """click's bare "Abort: " under IPython's header ended the cell: an uncaught exception, not a healthy run."""
    log = b"\n".join(_corpus_log("b73l-llama-workout-sfttrainer-wandb-api-key-prompt-abort-colab"))
    d = Diagnoser().diagnose(Named("cell.log", log))
    assert d.verdict == "failure" and d.primary is not None
    assert d.primary.id == "unclassified-failure/uncaught-exception"


# Frames without Python's header or an exception line: either a stack printer's sample of a live process
# (traceback.print_stack's format is a traceback's) or an exception's traceback cut at both ends by a paste.
_PRINTED = [
    b'  File "/opt/conda/lib/python3.11/site-packages/lightning/pytorch/trainer/trainer.py", line 529, in fit',
    b"    call._call_and_handle_interrupt(",
    b'  File "/opt/conda/lib/python3.11/site-packages/lightning/pytorch/trainer/call.py", line 44, in _call_and_handle_interrupt',
    b"    return trainer_fn(*args, **kwargs)",
]


@pytest.mark.parametrize(("tail", "sample"), [
    ([], True),
    # Python 3.11+ marks the code of a frame an exception passed through; print_stack never does
    ([b"           ^^^^^^^^^^^^^^^^^^^^^^^^^^^^^"], False),
    # a frame standing on a raise statement is an exception leaving it
    ([b'  File "/opt/conda/lib/python3.11/site-packages/hydra/core/utils.py", line 260, in return_value',
      b"    raise self._return_value"], False),
    # near miss: a frame whose code merely names raising is no raise statement
    ([b'  File "/opt/conda/lib/python3.11/site-packages/torch/_utils.py", line 694, in reraise',
      b"    raised = self.exc_type(msg)"], True),
    # a frame standing on an assert: its AssertionError leaving it (openpifpaf's loss, pasted without the error)
    ([b'  File "../openpifpaf/openpifpaf/network/losses.py", line 228, in forward',
      b"    assert len(x) == 1 + 2 * self.n_vectors + self.n_scales"], False),
])
def test_headless_frames_are_a_live_sample_unless_an_exception_marks_them(tail: list[bytes], sample: bool) -> None:
    tb = assemble_traceback(_PRINTED + tail, "train.log", 10, None, headless=True)
    assert tb is not None and not tb.exceptions
    assert tb.dump is sample


def test_the_ipython_patterns_are_compiled_only_when_an_ipython_traceback_comes() -> None:
    """RE2 unrolls their bounded repeats into programs over a MiB each: a process that reads no notebook
    traceback (and each worker it forks) should not hold them."""
    import subprocess
    import sys

    probe = ("import trainmedic.logs.tracebacks as t, trainmedic.api; "
             "print(t._IPY_FILE._compiled is None, t._IPY_OLD._compiled is None); "
             "t._IPY_FILE.match('File /x/y.py:3, in f'); print(t._IPY_FILE._compiled is None)")
    out = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True, check=True).stdout.split()
    assert out == ["True", "True", "False"]


def test_a_traceback_pasted_on_one_line_ends_in_its_exception() -> None:
    """An issue body that lost its line breaks: Retinaface_Ghost's train.py called next() on an exhausted
    DataLoader iterator, and the whole traceback, StopIteration last, is one line. An uncaught exception."""
    line = dev_case("b109c-retinaface-ghost-next-batch-iterator-drop-last-stopiteration").log.splitlines()[0]
    tb = assemble_traceback([line.encode()], "issue.log", 1, None)
    assert tb is not None and tb.final == "StopIteration" and not tb.interrupted
    assert tb.frames[-1].endswith("in _next_data raise StopIteration")
    assert Diagnoser().diagnose(Named("issue.log", line.encode())).verdict == "failure"
    # near misses: the header alone on its line is read line by line as before; frames that no exception
    # class ends are not taken for one
    header = [b"Traceback (most recent call last):", b'  File "t.py", line 3, in <module>', b"    f()", b"ValueError: x"]
    whole = assemble_traceback(header, "t.log", 1, None)
    assert whole is not None and whole.final == "ValueError: x"
    cut = line.replace(" raise StopIteration StopIteration", " raise StopIteration here")
    assert assemble_traceback([cut.encode()], "issue.log", 1, None) is None


@pytest.mark.parametrize("crash", [b"Segmentation fault (core dumped)", b"Aborted (core dumped)", b"Bus error"])
def test_the_shells_crash_report_ends_an_exceptions_message(crash: bytes) -> None:
    # the shell prints how the process died once it is gone: never more of the exception's message,
    # which may run on (NCCL's "Last error:" detail) on lines of its own
    lines = [*_AGENT[:3], b"RuntimeError: NCCL error: unhandled system error", b"Last error:", crash]
    tb = assemble_traceback(lines, "run.log", 1, None)
    assert tb is not None and tb.last_line == 5
    assert tb.final == "RuntimeError: NCCL error: unhandled system error Last error:"


def test_a_frame_whose_function_name_markdown_dropped_keeps_its_source_line() -> None:
    # GitHub renders a traceback posted outside a code block without indentation and drops "<module>" as an
    # unknown HTML tag: 'File "train.py", line 171, in' then the source line. The source line is the frame's
    # (the dataset that came out empty divides by len(train_loader) there), not an exception line.
    lines = [b"Traceback (most recent call last):", b'File "train.py", line 171, in ',
             b"train(num_gpus, args.rank, args.group_name, **train_config)", b'File "train.py", line 106, in train',
             b"epoch_offset = max(0, int(iteration / len(train_loader)))", b"ZeroDivisionError: division by zero"]
    tb = assemble_traceback(lines, "run.log", 1, None)
    assert tb is not None and tb.final == "ZeroDivisionError: division by zero"
    assert tb.frames[1] == "train(num_gpus, args.rank, args.group_name, **train_config)"
    # an exception right under such a frame (its source line not printed) is still the exception
    cut = assemble_traceback([*lines[:2], b"KeyError: 'lr'"], "run.log", 1, None)
    assert cut is not None and cut.final == "KeyError: 'lr'"


def test_a_raise_line_that_lost_its_indentation_is_still_a_frame_of_the_traceback() -> None:
    # two processes on one stream: the raising frame's source at the line's start, then glued exception text
    lines = [*_PRINTED,
             b'      File "/opt/venv/lib/site-packages/torch/distributed/distributed_c10d.py", line 1013, in _new_process_group_helper',
             b"raise RuntimeError(\"Distributed package doesn't have NCCL \" \"built in\")",
             b"raise RuntimeError(\"Distributed package doesn't have NCCL \" \"built in\")RuntimeError",
             b": RuntimeErrorDistributed package doesn't have NCCL built in:",
             b"Distributed package doesn't have NCCL built in"]
    tb = assemble_traceback(lines, "train.log", 1, None, headless=True)
    assert tb is not None and tb.frames[-1].startswith("raise RuntimeError(") and not tb.dump
    # near miss: a line that is not a raise statement is another process's print, and the frames are a sample
    tb = assemble_traceback([*lines[:5], b"rank 1 ready", b"rank 0 ready"], "train.log", 1, None, headless=True)
    assert tb is not None and tb.dump


def test_the_interleaved_nccl_not_built_in_is_named_not_read_as_a_wait_in_init_process_group() -> None:
    # kohya_ss through accelerate on Windows: both ranks' init_process_group raise; their frames interleave
    d = Diagnoser().diagnose(Named("output.log", dev_case("b148g-kohya-accelerate-windows-nccl-not-built-in").log.encode()))
    assert d.primary is not None and d.primary.id == "missing-cuda-libraries/cpu-only-build"


_RAY = [b"Traceback (most recent call last):",
        b'  File "/opt/conda/lib/python3.8/site-packages/ray/worker.py", line 1621, in get',
        b"    raise value.as_instanceof_cause()",
        b"ray.exceptions.RayTaskError(ValueError): ray::PPO.train() (pid=22781, ip=10.0.0.1, repr=PPO)",
        b'  File "/opt/conda/lib/python3.8/site-packages/ray/rllib/agents/ppo/ppo_torch_policy.py", line 46, in ppo_surrogate_loss',
        b"    curr_action_dist = dist_class(logits, model)"]


def test_rays_task_error_names_the_remote_exception_and_its_frames_follow() -> None:
    tb = assemble_traceback([*_RAY, b"ValueError: The parameter logits has invalid values"], "train.log", 1, None)
    assert tb is not None and tb.final == "ValueError: The parameter logits has invalid values"
    assert tb.frames[-1] == "curr_action_dist = dist_class(logits, model)"
    # cut before the remote exception: the wrapper's line is the exception, not a stall in ray.get()
    tb = assemble_traceback(_RAY, "train.log", 1, None)
    assert tb is not None and tb.final.startswith("ray.exceptions.RayTaskError(ValueError): ") and not tb.truncated


@pytest.mark.parametrize("case_id", [
    "b147d-rllib-ppo-torch-logits-invalid-tune",  # the wrapper's line ends a traceback the log cuts
    "b148e-ray-lightningtrainer-pbt-checkpoint-architecture-mismatch",  # the log starts at it, remote frames under
])
def test_a_ray_task_error_cut_before_its_remote_exception_is_a_failure_not_a_hang(case_id: str) -> None:
    d = Diagnoser().diagnose(Named("output.log", dev_case(case_id).log.encode()))
    assert d.verdict == "failure" and d.primary is not None
    assert d.primary.id == "unclassified-failure/uncaught-exception"
    assert any("RayTaskError(" in e.text for e in d.primary.evidence)


def test_headless_frames_right_under_an_exception_line_are_its_stack() -> None:
    tb = assemble_traceback(_PRINTED, "train.log", 10, None, headless=True)
    assert tb is not None and tb.dump
    under = under_exception(tb, b"ray.exceptions.RayTaskError(RuntimeError): ray::_RayTrainWorker__execute.get_next()")
    assert under.exceptions and not under.dump and under.first_line == 9
    # near miss: under a log record the frames stay a live process's sample
    assert under_exception(tb, b"INFO: saving the stack of every worker").dump


def test_a_stack_printed_under_an_error_line_is_that_errors_stack() -> None:
    # FSDP's _assert_state prints "ERROR: <msg>", then traceback.print_stack(), then raises ValueError(msg)
    tb = assemble_traceback(_PRINTED, "train.log", 10, None, headless=True)
    assert tb is not None
    under = under_exception(tb, b"ERROR: expected to be in states [<TrainingState_.IDLE: 1>] but current state is "
                                b"TrainingState_.BACKWARD_PRE")
    assert under.exceptions and not under.dump
    # near miss: a line that merely mentions errors is no error's own line
    assert under_exception(tb, b"INFO: no ERROR: lines in the last epoch").dump


def test_fsdps_state_assertion_with_its_printed_stack_is_a_failure_not_a_stall() -> None:
    d = Diagnoser().diagnose(Named(
        "output.log", dev_case("b147e-llmfoundry-composer-close-checkpoint-fsdp-backward-pre-state").log.encode()))
    assert d.verdict == "failure" and d.primary is not None
    assert any("expected to be in states" in e.text for e in d.primary.evidence)


@pytest.mark.parametrize(("last", "expected"), [
    (b"    raise", True),  # a bare re-raise
    (b"    raise self._return_value", True),
    (b"    raised = self.exc_type(msg)", False),  # near miss: a name that starts with raise
    (b"    assert len(x) == 1 + 2 * self.n_vectors + self.n_scales", True),  # a failed assert raises there
    (b"    assertions = self.checks(x)", False),  # near miss: a name that starts with assert
])
def test_a_stack_standing_on_a_raise_statement_is_raising(last: bytes, expected: bool) -> None:
    tb = assemble_traceback([b"Traceback (most recent call last):", *_PRINTED[:2],
                             b'  File "/opt/conda/lib/python3.11/site-packages/hydra/core/utils.py", line 260, in f',
                             last], "train.log", 1, None)
    assert tb is not None and tb.truncated and raising(tb) is expected
