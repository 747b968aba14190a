"""How a traceback's end says whether the process failed or was stopped by hand."""

from __future__ import annotations

import pytest

from trainmedic.api import Diagnoser, Named
from trainmedic.logs.tracebacks import assemble_traceback

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
