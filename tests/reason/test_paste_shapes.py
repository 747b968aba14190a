"""The same log reaches trainmedic in the shapes people and tools give it: with Windows line ends, inside
a markdown fence or indented as a code block, copied from a web page, double-spaced, quoted in a reply,
behind a log collector's, the journal's, kubectl's, docker compose's, srun's, pdsh's or a handler's prefix
or Ray's task prefix, after other output or before a teardown, with its error lines set in bold. The
answer must not change with the shape. Each case is a real log of the corpus's dev split whose answer
changed with one of these shapes before the reader learnt it."""

from __future__ import annotations

import re
from collections.abc import Callable
from pathlib import Path

import pytest

from trainmedic.api import Diagnoser, Named
from trainmedic.evaluate.corpus import load_case
from trainmedic.model import Match

REAL = Path(__file__).resolve().parents[2] / "corpus" / "real"


def _each_line(prefix: Callable[[int], str]) -> Callable[[str], str]:
    return lambda log: "\n".join(prefix(i) + line for i, line in enumerate(log.split("\n")))


_ERRORISH = re.compile(r"Error|Exception|Killed|fault|Abort|No module")


def _marked(mark: Callable[[str], str]) -> Callable[[str], str]:
    """Mark each line that reports an error, as a user emphasising it in a post does (never a frame)."""
    return lambda log: "\n".join(
        mark(line) if _ERRORISH.search(line) and not line.lstrip().startswith(("File ", "Traceback")) else line
        for line in log.split("\n"))


# What torch prints at exit when a DataLoader iterator's destructor runs after its workers are gone.
TEARDOWN = """Exception ignored in: <function _MultiProcessingDataLoaderIter.__del__ at 0x7f0a0c8e3d30>
Traceback (most recent call last):
  File "/usr/lib/python3/dist-packages/torch/utils/data/dataloader.py", line 1478, in __del__
    self._shutdown_workers()
  File "/usr/lib/python3/dist-packages/torch/utils/data/dataloader.py", line 1442, in _shutdown_workers
    w.join(timeout=_utils.MP_STATUS_CHECK_INTERVAL)
  File "/usr/lib/python3.10/multiprocessing/process.py", line 149, in join
    res = self._popen.wait(timeout)
AssertionError: can only test a child process
"""

SHAPES: dict[str, Callable[[str], str]] = {
    "crlf": lambda log: log.replace("\n", "\r\n"),
    # copied from a web page's prose: no-break spaces, curly quotes
    "web typography": lambda log: log.replace(" ", "\u00a0").replace("'", "\u2019"),
    "fenced": lambda log: "```\n" + log + "\n```",
    "quoted": _each_line(lambda i: "> "),
    "kubectl --timestamps": _each_line(lambda i: f"2024-05-05T21:53:{i % 60:02d}.022194123Z "),
    "ray task": _each_line(lambda i: "\x1b[36m(pid=4242)\x1b[0m "),
    "journalctl": _each_line(lambda i: f"May 05 21:53:{i % 60:02d} node1 python3[4242]: "),
    "indented code block": _each_line(lambda i: "    "),
    "kubectl logs --prefix": _each_line(lambda i: "[pod/train-worker-0/pytorch] "),
    "ts": _each_line(lambda i: f"[2024-05-05 21:53:{i % 60:02d}] "),
    "docker compose logs": _each_line(lambda i: "trainer-1  | "),
    # a launcher's own prefix on every line of one process: srun -l's task, pdsh's host (DeepSpeed's
    # launcher on many nodes)
    # a web page's copy that puts an empty line after every line
    "double-spaced": lambda log: log.replace("\n", "\n\n"),
    "srun -l": _each_line(lambda i: "0: "),
    "pdsh": _each_line(lambda i: "worker-1: "),
    # markdown around the paste as a whole: inline code, bold
    "inline code": lambda log: "`" + log.strip("\n") + "`\n",
    "bold": lambda log: "**" + log.strip("\n") + "**\n",
    # markdown around single lines: an error line set in bold, or closed by a backtick the paste opened
    # elsewhere (a fence glued to the last line)
    "bold error lines": _marked(lambda line: "**" + line.strip() + "**"),
    "backtick after error lines": _marked(lambda line: line.rstrip() + "`"),
    # (what the process printed on its way out, below the rest)
    "teardown at exit": lambda log: log.rstrip("\n") + "\n" + TEARDOWN,
    # (the same log after a stretch of training: an earlier epoch's bar above it)
    "after training": lambda log: "".join(f"Epoch 1:  {i}%|#   | {i * 10}/1000 [00:{i:02d}<01:30, 11.0it/s, loss=0.{90 - i}]\n"
                                          for i in range(1, 40, 4)) + log,
}

CASES = [
    "ok-hang-val-loader-second-epoch",  # a traceback pasted without its header: the worker queue's wait
    "more5b-multirank-gcd-broadcast-timeout-rank0-silent",  # a traceback cut short, then the fence
    "more28a-lte-killed-after-config-loaded",  # the shell's bare "Killed" ends its line
    "more31e-sentiment-discovery-3gpu-after-epoch1-gloo-read-timeout-allreduce",  # exception lines at the margin
    "fw-ckpt-zip-central-dir-after-disk-full",  # a config's "min_Epoch: 20" below the error is no epoch reached
    "more26a-efficientteacher-store-barrier-worker-count-4-of-2",  # a store barrier the log ends waiting in
    "more31j-whisper-finetune-seq2seq-args-evaluation-strategy",  # a forum's curly quotes around the argument
    "more30j-stargan-vc-hifigan-mels-epoch43-nan-inf",  # a metrics table's rows read NaN
    "more4-pytorch-dataloaderiter-del-every-epoch",  # an ignored teardown traceback, training goes on
    "dlw-hang-interrupt-19258",  # Ctrl-C over a run stuck in the DataLoader
    "more34k-healthy-lsf-dtu-unet-cv-val-loss-jumps-completed",  # LSF's "Successfully completed." ends the run
    "more31g-dreambooth-colab-accelerate-launch-no-module-diffusers",  # "No module named 'x'" ends its line
    "more30b-mmdet-v0-train-segfault-ops-built-gcc48",  # the shell's bare "Segmentation fault" ends its line
    "more33c-jsws-30k-iters-shm-object-read-write",  # "... in read-write mode" ends its line
    "dist-hf-trainer-fsdp-peft-uniform-requires-grad",  # a message that ends in its own inline code
    "more46a-ok-yolov5-lr-scheduler-order-warning-gpu",  # a warning's echo ("  warnings.warn(") behind a prefix
    "more26a-ok-ml4h-tensor-generator-epoch-error-summary-skipped",  # a record's indented body behind a prefix
    "more4-ms-swift-megatron-dpo-stopiteration",  # torch's "[rank24]: " behind srun's or pdsh's prefix
    "more12b-ok-dataloader-del-exception-training-not-killed",  # "Exception ignored in:" above its traceback
    "more34e-c3-lr-scheduler-order-warning",  # a warning's message, its echo three lines below
]


def _answer(log: str) -> tuple[str, str | None]:
    d = Diagnoser().diagnose(Named("output.log", log.encode()))
    return d.verdict, d.primary.id if d.primary else None


@pytest.mark.parametrize("case_id", CASES)
@pytest.mark.parametrize("shape", list(SHAPES))
def test_the_answer_does_not_depend_on_the_paste_shape(case_id: str, shape: str) -> None:
    case = load_case(REAL / f"{case_id}.yaml")
    assert case.split == "dev"
    plain = _answer(case.log)
    assert plain[0] != "healthy" or case.label.verdict == "healthy", plain
    assert _answer(SHAPES[shape](case.log)) == plain


def test_an_elision_between_frames_is_not_the_exception() -> None:
    log = ('Traceback (most recent call last):\n  File "train.py", line 9, in <module>\n    main()\n...\n'
           '  File "/opt/torch/utils/data/dataloader.py", line 1310, in _try_get_data\n'
           "    data = self._data_queue.get(timeout=timeout)\n"
           "RuntimeError: DataLoader worker (pid 4242) is killed by signal: Killed.\n")
    d = Diagnoser().diagnose(log.encode())
    # (the kill names no sender: its likeliest one leads, the kill is the first alternative)
    assert d.primary is not None and d.primary.id == "dataloader-worker-failure/worker-oom"
    assert d.alternatives[0].id == "dataloader-worker-failure/worker-killed"
    tb = Diagnoser().scan(log.encode())[0].tracebacks[0]
    assert tb.exceptions[0].startswith("RuntimeError: DataLoader worker"), tb.exceptions


def test_only_an_indentation_every_line_shares_is_a_paste_s() -> None:
    from trainmedic.logs.reader import common_indent

    assert common_indent(b"    step 1\n      File x\n\n    KeyError: 'a'\n") == 4
    assert common_indent(b"step 1\n    File x\n") == 0  # a line at the margin: the log's own indentation
    assert common_indent(b"    only one line\n") == 0


def test_a_line_no_exception_class_starts_is_not_a_traceback_s_exception() -> None:
    cut = ('Traceback (most recent call last):\n  File "train.py", line 9, in <module>\n    main()\n'
           '  File "/opt/torch/utils/data/dataloader.py", line 1310, in _try_get_data\n'
           "    data = self._data_queue.get(timeout=timeout)\n")
    # a logger's lines below a traceback cut before its exception: the traceback stays cut
    [tb] = Diagnoser().scan((cut + "wandb: Waiting for W&B process to finish... (success).\n"
                             "wandb: Synced 5 W&B file(s), 0 media file(s)\n").encode())[0].tracebacks
    assert tb.truncated and not tb.exceptions
    # one worker's print among the frames is skipped, and the exception below it is read
    [tb] = Diagnoser().scan((cut.replace("    main()\n", "    main()\n<_io.BufferedReader name='x.gw'>\n")
                             + "KeyError: 'labels'\n").encode())[0].tracebacks
    assert tb.exceptions == ("KeyError: 'labels'",)


def test_python_3_11_s_caret_lines_are_no_frames() -> None:
    # a traceback cut under a frame's caret line: its last frame is the code the carets point at
    cut = ('Traceback (most recent call last):\n  File "train.py", line 9, in <module>\n    main()\n    ^^^^^^\n'
           '  File "/opt/torch/functional.py", line 386, in einsum\n'
           "    return _VF.einsum(equation, operands)\n           ^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^\n")
    [tb] = Diagnoser().scan(cut.encode())[0].tracebacks
    assert tb.truncated and tb.frames[-1] == "return _VF.einsum(equation, operands)"
    assert not any(frame.startswith("^") for frame in tb.frames)
    # a line the carets do not fill alone stays a frame's ("~~~^~~~" is a marker too; "^C" is not)
    [tb] = Diagnoser().scan(cut.replace("    ^^^^^^\n", "    ~~~^~~\n^C\n", 1).encode())[0].tracebacks
    assert "^C" in tb.frames and "~~~^~~" not in tb.frames


def test_a_stack_cut_by_another_process_s_lines_is_part_of_the_traceback_below_it() -> None:
    # two workers' prints split the main process's traceback; its exception comes after them
    case = load_case(REAL / "more18a-data-dewarping-worker-unpickling-gw-sample-truncated.yaml")
    assert case.split == "dev"
    assert _answer(case.log) == ("failure", "corrupt-sample/unpickle-error")


def test_a_paste_a_terminal_hard_wrapped_is_read_as_the_program_printed_it() -> None:
    # srun's output copied from a 120-column terminal: the heartbeat monitor's one line is six pieces
    case = load_case(REAL / "more32b-atmorep-srun-task6-nccl-heartbeat-watchdog-stuck.yaml")
    assert case.split == "dev"
    assert _answer(case.log) == ("failure", "nccl-timeout/heartbeat-timeout")
    # the width counts what the program printed: copied from a web page, a no-break space is one column
    assert _answer(SHAPES["web typography"](case.log)) == ("failure", "nccl-timeout/heartbeat-timeout")
    # and the same for logs pasted whole, wrapped here at the widths terminals have
    from trainmedic.logs.reader import wrap_width

    for case_id in ("more13a-hf-accelerate-validation-broadcast-watchdog",
                    "more11a-slurm-llm-training-allreduce-numel1-watchdog-resources-held"):
        case = load_case(REAL / f"{case_id}.yaml")
        assert case.split == "dev"
        for width in (100, 120, 160):
            wrapped = "\n".join(line[i:i + width] for line in case.log.split("\n")
                                for i in range(0, max(len(line), 1), width))
            assert wrap_width(wrapped.encode()) == width
            assert _answer(wrapped) == _answer(case.log)


def test_only_pieces_of_one_width_that_split_words_are_a_hard_wrap() -> None:
    from trainmedic.logs.reader import wrap_width

    text = ("RuntimeError: DataLoader worker (pid 4242) is killed by signal: Killed. Details are lost due to "
            "multiprocessing. Rerunning with num_workers=0 may give better error trace. Then the watchdog "
            "caught collective operation timeout: WorkNCCL(SeqNum=4, OpType=BROADCAST) ran for 1800010 ms")
    wrapped = "\n".join(text[i:i + 90] for i in range(0, len(text), 90)) + "\nKilled\n"
    assert wrap_width(wrapped.encode()) == 90
    # near misses: records of one format and width (per-step dicts, one warning per rank, a table's rules)
    steps = "".join(f"{{'loss': 0.69{i}1, 'learning_rate': 1.3e-05, 'rewards/chosen': -0.00{i}2, 'epoch': 0.{i}8}}\n"
                    for i in range(1, 6))
    assert wrap_width(steps.encode()) == 0
    ranks = "".join(f"[rank{r}]:[W ProcessGroupNCCL.cpp:1200] Warning: TORCH_NCCL_AVOID_RECORD_STREAMS is the default "
                    f"now, this environment variable is ignored\n" for r in range(4))
    assert wrap_width(ranks.encode()) == 0
    table = ("|" + "=" * 80 + "|\n|  PyTorch CUDA memory summary, device ID 0" + " " * 39 + "|\n") * 3
    assert wrap_width(table.encode()) == 0


def test_markdown_closes_a_paste_only_where_it_opened_it() -> None:
    def last_text(log: bytes) -> str:
        [scan] = Diagnoser().scan(log)
        return max(scan.matches, key=lambda m: m.line.number).line.text

    # opened and closed around the paste: neither is the program's
    assert last_text(b"`RuntimeError: CUDA error: an illegal memory access was encountered`\n").endswith("encountered")
    assert last_text(b"**Killed**\n") == "Killed"
    # near miss: torch's own message ends in a backtick, and nothing opened the paste
    assert last_text(b"step 3\nRuntimeError: Must flatten tensors when `use_orig_params=False`\n").endswith("False`")


def test_only_markdown_a_line_does_not_open_itself_is_dropped() -> None:
    from trainmedic.logs.reader import unmark

    assert unmark(b"**Killed**\n") == b"Killed\n"
    assert unmark(b"`RuntimeError: boom`\n") == b"RuntimeError: boom\n"
    assert unmark(b"ModuleNotFoundError: No module named 'apex'```\n") == b"ModuleNotFoundError: No module named 'apex'\n"
    # Near misses: a message's own inline code, a fence alone on its line, a rule of asterisks.
    own = b"ValueError: FSDP requires uniform `requires_grad`\n"
    assert unmark(own) == own
    assert unmark(b"```\n") == b"```\n"
    assert unmark(b"**********\n") == b"**********\n"


def test_a_paste_is_double_spaced_only_when_no_two_lines_of_content_meet() -> None:
    from trainmedic.logs.reader import double_spaced

    assert double_spaced(b"Traceback (most recent call last):\n\n  File \"x.py\", line 1\n\nKeyError: 'a'\n\n")
    # Near misses: a traceback as Python prints it (its chained-exception blank lines included), a short paste.
    assert not double_spaced(b"KeyError: 'a'\n\nDuring handling of the above exception, another exception occurred:\n\n"
                             b"Traceback (most recent call last):\n  File \"x.py\", line 1\nValueError: b\n")
    assert not double_spaced(b"Killed\n\n")


ILLEGAL = b"**RuntimeError: CUDA error: an illegal memory access was encountered**\n"


def _illegal_line(matches: tuple[Match, ...]) -> str:
    return next(m.line.text for m in matches if "illegal memory access" in m.line.text)


def test_a_program_s_own_file_past_a_paste_s_size_is_read_as_printed() -> None:
    from trainmedic.logs.reader import PASTE_BYTES

    # A web page's comment holds far less than PASTE_BYTES: the bold is a paste's in the first bytes ...
    filler = b"UserWarning: this DataLoader will create 16 worker processes; lower `num_workers`\n"
    [early] = Diagnoser().scan(ILLEGAL + filler * 10)
    assert _illegal_line(early.matches) == "RuntimeError: CUDA error: an illegal memory access was encountered"
    # ... and past them the file is a program's, whose lines are as printed (and its blocks cost no pass
    # looking for markdown: a big log's inline code is on nearly every block).
    big = filler * (PASTE_BYTES // len(filler) + 2 * (1 << 20) // len(filler))
    [late] = Diagnoser().scan(big + ILLEGAL)
    assert _illegal_line(late.matches).startswith("**RuntimeError")


def test_a_live_stream_is_read_as_the_program_prints_it() -> None:
    state = Diagnoser().stream("rank0.log")
    state.feed(b"step 1 loss 2.0\n" * 4 + ILLEGAL)
    state.flush()  # (the stream went quiet)
    assert _illegal_line(state.snapshot().matches).startswith("**RuntimeError")
