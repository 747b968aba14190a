"""Datasets for tests/torch/test_isolate.py, each failing (or not) the way real ones do.

They are real torch Datasets, kept tiny so each `trainmedic isolate` run costs little more than importing torch; the
test names the conclusion each one must get.
"""

from __future__ import annotations

import ctypes
import os
import signal
import threading

import torch
from torch.utils.data import DataLoader, Dataset, get_worker_info

BAD_INDEX = 5
TENSORS_PER_SAMPLE = 100  # with file_descriptor sharing, each tensor of a batch costs one descriptor
MIB = 1 << 20


class Healthy(Dataset[torch.Tensor]):
    """Small tensors, nothing wrong."""

    def __len__(self) -> int:
        return 32

    def __getitem__(self, index: int) -> torch.Tensor:
        return torch.full((16,), float(index))


def healthy() -> Healthy:
    return Healthy()


class RaisesAtIndex(Dataset[torch.Tensor]):
    """A corrupt sample: __getitem__ raises on one index, with or without workers."""

    def __len__(self) -> int:
        return 32

    def __getitem__(self, index: int) -> torch.Tensor:
        if index == BAD_INDEX:
            raise ValueError(f"corrupt sample at index {index}")
        return torch.full((16,), float(index))


def raises_on_index() -> DataLoader[torch.Tensor]:
    return DataLoader(RaisesAtIndex(), batch_size=2)


class ManySmallTensors(Dataset[list[torch.Tensor]]):
    """Each sample is many tiny tensors, so each batch is many shared tensors: one descriptor each."""

    def __len__(self) -> int:
        return 32

    def __getitem__(self, index: int) -> list[torch.Tensor]:
        return [torch.full((4,), float(index)) for _ in range(TENSORS_PER_SAMPLE)]


def many_small_tensors() -> DataLoader[list[torch.Tensor]]:
    return DataLoader(ManySmallTensors(), batch_size=2)


class BigSamples(Dataset[torch.Tensor]):
    """1 MiB per sample: a batch of 8 needs 8 MiB of /dev/shm in a worker."""

    def __len__(self) -> int:
        return 32

    def __getitem__(self, index: int) -> torch.Tensor:
        return torch.zeros(MIB // 4)  # float32


def big_batches() -> DataLoader[torch.Tensor]:
    return DataLoader(BigSamples(), batch_size=8)


class ForkLocked(Dataset[torch.Tensor]):
    """A lock held by a background thread when the workers fork: they inherit it held, forever.

    The thread (warming a cache, say) releases it after 1.5 s, so num_workers=0 passes after a
    short wait; a worker forked meanwhile has a copy of the lock that nobody will release.
    """

    def __init__(self, warmup: float = 1.5) -> None:
        self.lock = threading.Lock()
        self.lock.acquire()
        timer = threading.Timer(warmup, self.lock.release)
        timer.daemon = True
        timer.start()

    def __len__(self) -> int:
        return 32

    def __getitem__(self, index: int) -> torch.Tensor:
        with self.lock:
            return torch.full((16,), float(index))


def fork_locked() -> ForkLocked:
    return ForkLocked()


def not_a_dataset() -> list[int]:
    return [1, 2, 3]


class DiesInWorker(Dataset[torch.Tensor]):
    """A worker dies of a signal on its first sample (a fork-unsafe native library, or the OOM killer);
    the main process, with num_workers=0, is spared so the contrast shows."""

    def __init__(self, sig: int) -> None:
        self.sig = sig

    def __len__(self) -> int:
        return 32

    def __getitem__(self, index: int) -> torch.Tensor:
        if get_worker_info() is not None:
            if self.sig == signal.SIGSEGV:
                ctypes.string_at(0)  # a real invalid read, as a crashing decoder does
            os.kill(os.getpid(), self.sig)
        return torch.full((16,), float(index))


def killed_worker() -> DiesInWorker:
    return DiesInWorker(signal.SIGKILL)


def segfaulting_worker() -> DiesInWorker:
    return DiesInWorker(signal.SIGSEGV)
