"""A run stuck on torch's JIT extension build lock: read from where the process waits, not from where the log ends."""

from __future__ import annotations

from pathlib import Path

from trainmedic.api import Diagnoser, Named
from trainmedic.evaluate.corpus import load_case

REAL = Path(__file__).resolve().parents[2] / "corpus" / "real"
ROOT = b"Using /home/user/.cache/torch_extensions/py310_cu121 as PyTorch extensions root...\n"
# What Python prints when the stuck run is stopped with Ctrl-C (frames as torch 2.x's cpp_extension calls them).
INTERRUPTED = (
    b"^CTraceback (most recent call last):\n"
    b'  File "train.py", line 88, in <module>\n'
    b"    engine, optimizer, _, _ = deepspeed.initialize(model=model, config=cfg)\n"
    b'  File "/opt/conda/lib/python3.10/site-packages/deepspeed/ops/op_builder/builder.py", line 480, in jit_load\n'
    b"    op_module = load(name=self.name, sources=self.strip_empty_entries(sources),\n"
    b'  File "/opt/conda/lib/python3.10/site-packages/torch/utils/cpp_extension.py", line 1308, in load\n'
    b"    return _jit_compile(\n"
    b'  File "/opt/conda/lib/python3.10/site-packages/torch/utils/cpp_extension.py", line 1736, in _jit_compile\n'
    b"    baton.wait()\n"
    b'  File "/opt/conda/lib/python3.10/site-packages/torch/utils/file_baton.py", line 42, in wait\n'
    b"    time.sleep(self.wait_seconds)\n"
    b"KeyboardInterrupt\n"
)


def test_a_py_spy_dump_waiting_on_the_build_lock_is_that_hang() -> None:
    case = load_case(REAL / "more41b-hang-dschat-step1-pyspy-file-baton-wait.yaml")
    d = Diagnoser().diagnose(Named("output.log", case.log.encode()))
    assert d.verdict == "hang"
    assert d.primary is not None and d.primary.id == "training-hang/extension-build-lock"


def test_a_ctrl_c_while_waiting_on_the_build_lock_is_that_hang() -> None:
    d = Diagnoser().diagnose(Named("output.log", ROOT * 4 + INTERRUPTED))
    assert d.verdict == "hang"
    assert d.primary is not None and d.primary.id == "training-hang/extension-build-lock"


def test_an_error_raised_while_taking_the_lock_is_not_that_hang() -> None:
    # near miss: the build directory is not writable, the lock is never waited on
    failed = (INTERRUPTED.replace(b"line 42, in wait\n    time.sleep(self.wait_seconds)\nKeyboardInterrupt\n",
                                  b"line 29, in try_acquire\n    self.fd = os.open(self.lock_file_path, os.O_CREAT | os.O_EXCL)\n"
                                  b"PermissionError: [Errno 13] Permission denied: "
                                  b"'/home/user/.cache/torch_extensions/py310_cu121/fused_adam/lock'\n")
              .replace(b"baton.wait()", b"if baton.try_acquire():").replace(b"^C", b""))
    d = Diagnoser().diagnose(Named("output.log", ROOT + failed))
    assert d.verdict == "failure"
    assert d.primary is not None and d.primary.id != "training-hang/extension-build-lock"
