"""The framework programs' dataset: deterministic regression samples, and a worker that can be killed.

Imported by the programs beside it (a script's own directory is first on sys.path, under every launcher).
"""

from __future__ import annotations

import argparse
import os
import signal
import time
from datetime import timedelta

import torch
from torch.utils.data import Dataset, get_worker_info


class Regression(Dataset[tuple[torch.Tensor, torch.Tensor]]):
    """`kill_at`: the worker's read on which it SIGKILLs itself, as the OOM killer would (None: never).
    Counted in reads, not by index, so a shuffling sampler cannot skip it."""

    def __init__(self, kill_at: int | None = None) -> None:
        self.kill_at, self.reads = kill_at, 0

    def __len__(self) -> int:
        return 1024

    def __getitem__(self, index: int) -> tuple[torch.Tensor, torch.Tensor]:
        self.reads += 1
        if self.kill_at is not None and get_worker_info() is not None and self.reads == self.kill_at:
            time.sleep(1.0)  # the main process takes this worker's earlier batches first
            os.kill(os.getpid(), signal.SIGKILL)
        gen = torch.Generator().manual_seed(index)
        return torch.randn(8, generator=gen), torch.randn(1, generator=gen)


def failure_parser(doc: str | None, failures: list[str]) -> argparse.ArgumentParser:
    """The options every framework program takes: which failure (or none), on which rank, at which step,
    how many steps, and the process group's timeout (short, so a hang ends within a capture)."""
    parser = argparse.ArgumentParser(description=doc)
    parser.add_argument("--failure", choices=["none", *failures], default="none")
    parser.add_argument("--fail-rank", type=int, default=1)
    parser.add_argument("--fail-step", type=int, default=3)
    parser.add_argument("--steps", type=int, default=8)
    parser.add_argument("--timeout", type=float, default=None,
                        help="process-group timeout, seconds (default: 15 for --failure hang, else 300)")
    return parser


def group_timeout(args: argparse.Namespace) -> timedelta:
    """The process group's timeout. It bounds the rendezvous too, where rank 0 waits for the others to
    start: on a loaded machine, ranks that import Lightning or DeepSpeed took over 16 s to join. Only a
    hang needs it short, so that the others give up within the capture; every other run gets minutes."""
    if args.timeout is not None:
        return timedelta(seconds=args.timeout)
    return timedelta(seconds=15.0 if args.failure == "hang" else 300.0)
