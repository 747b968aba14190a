"""How a traceback's end says whether the process failed or was stopped by hand."""

from __future__ import annotations

import pytest

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
