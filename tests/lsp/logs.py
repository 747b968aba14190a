"""A 4-rank DDP log: rank 2's DataLoader worker dies of a bus error (shm), the others time out in NCCL.

Message formats are torch's own (torch/utils/data/_utils/signal_handling.py, dataloader.py,
ProcessGroupNCCL.cpp); line numbers below are 1-based, as trainmedic reports them.
"""

from __future__ import annotations

WATCHDOG = (
    "[rank{r}]:[E1129 16:39:2{r}.217000 47{r} ProcessGroupNCCL.cpp:632] [Rank {r}] Watchdog caught collective "
    "operation timeout: WorkNCCL(SeqNum=1201, OpType=ALLREDUCE, NumelIn=1, NumelOut=1, Timeout(ms)=600000) "
    "ran for 600080 milliseconds before timing out."
)

RANK2 = """\
ERROR: Unexpected bus error encountered in worker. This might be caused by insufficient shared memory (shm).
Traceback (most recent call last):
  File "/opt/venv/lib/python3.11/site-packages/torch/utils/data/dataloader.py", line 1291, in _try_get_data
    data = self._data_queue.get(timeout=timeout)
  File "/usr/lib/python3.11/multiprocessing/queues.py", line 113, in get
    if not self._poll(timeout):
  File "/opt/venv/lib/python3.11/site-packages/torch/utils/data/_utils/signal_handling.py", line 73, in handler
    _error_if_any_worker_fails()
RuntimeError: DataLoader worker (pid 16165) is killed by signal: Bus error. It is possible that dataloader's workers are out of shared memory. Please try to raise your shared memory limit.

The above exception was the direct cause of the following exception:

Traceback (most recent call last):
  File "/home/me/train.py", line 86, in main
    for step, (x, y) in enumerate(loader):
  File "/opt/venv/lib/python3.11/site-packages/torch/utils/data/dataloader.py", line 1304, in _try_get_data
    raise RuntimeError(
RuntimeError: DataLoader worker (pid(s) 16165) exited unexpectedly"""


def multi_rank_log() -> str:
    lines = [f"[rank{r}]: step {s} loss 1.{s}{r} lr 3.0e-4" for s in range(3) for r in range(4)]
    lines += [f"[rank2]:{' ' if line else ''}{line}" for line in RANK2.splitlines()]
    lines += [WATCHDOG.format(r=r) for r in (0, 1, 3)]
    return "\n".join(lines) + "\n"


TEXT = multi_rank_log()
LINES = TEXT.splitlines()
# 1-based lines, as trainmedic numbers them
BUS_ERROR = 13
KILLED_BY_SIGNAL = 21
EXITED = 30
WATCHDOGS = {0: 31, 1: 32, 3: 33}
PRIMARY = "dataloader-worker-failure/shm-exhausted"
