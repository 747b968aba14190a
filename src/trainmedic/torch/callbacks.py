"""The DataLoader guard as callbacks, for trainers that build and iterate the DataLoader themselves.

`LightningGuard` (PyTorch Lightning) and `HFTrainerGuard` (Hugging Face Trainer) run the guard's
checks from the trainer's hooks: the wait before each training batch (from the end of the previous
step, or the start of the epoch), the slow first batch of an epoch without persistent workers, the
workers' descriptors, /dev/shm, worker deaths where the trainer keeps the DataLoader's iterator,
and the SIGUSR1 stack dump. lightning and transformers are optional: each class is built on first
use, on top of that framework's callback base class when it is installed, so importing this module
never imports either.
"""

from __future__ import annotations

import functools
import time
from typing import Any, TextIO

from trainmedic.torch.guard import (
    FD_WARN,
    INTERVAL,
    SHM_WARN,
    SLOW_FIRST_BATCH,
    GuardCore,
    GuardStats,
    Monitor,
    WorkerState,
    install_stack_dump,
    iterator_workers,
    worker_children,
)


def _loader_facts(loader: Any) -> tuple[bool, int, Any]:
    """(persistent_workers, num_workers, iterator or None) of a DataLoader, or of the first one inside
    a wrapper (Lightning's CombinedLoader keeps them in `.flattened`)."""
    if loader is not None and not hasattr(loader, "num_workers"):
        for inner in getattr(loader, "flattened", None) or []:
            if hasattr(inner, "num_workers"):
                loader = inner
                break
    persistent = bool(getattr(loader, "persistent_workers", False))
    workers = int(getattr(loader, "num_workers", 0) or 0)
    return persistent, workers, getattr(loader, "_iterator", None)


class _HookGuard:
    """The hook-driven guard both callbacks share; framework-free, so it is tested with stand-ins."""

    def __init__(self, *, stream: TextIO | None = None, fd_warn: float = FD_WARN, shm_warn: float = SHM_WARN,
                 slow_first_batch: float = SLOW_FIRST_BATCH, interval: float = INTERVAL) -> None:
        self.core = GuardCore(stream=stream, fd_warn=fd_warn, shm_warn=shm_warn, slow_first_batch=slow_first_batch)
        self.interval = interval
        self._monitor: Monitor | None = None
        self._loader: Any = None
        self._asked: float | None = None

    @property
    def stats(self) -> GuardStats:
        return self.core.stats

    def _workers(self) -> tuple[list[WorkerState], bool]:
        _, _, iterator = _loader_facts(self._loader)
        if iterator is not None and getattr(iterator, "_workers", None):
            return iterator_workers(iterator)
        return worker_children(), False  # liveness unknown without the iterator: descriptors only

    def _start(self) -> None:
        install_stack_dump()
        if self._monitor is None:
            self._monitor = Monitor(self.core, self._workers, self.interval).start()

    def _stop(self) -> None:
        if self._monitor is not None:
            self._monitor.stop()
            self._monitor = None

    def _epoch_start(self, epoch: int, loader: Any, persistent: bool | None = None,
                     workers: int | None = None) -> None:
        self._loader = loader
        lp, lw, _ = _loader_facts(loader)
        self.core.epoch_start(epoch, persistent_workers=lp if persistent is None else persistent,
                              num_workers=lw if workers is None else workers)
        self._asked = time.monotonic()

    def _batch_start(self) -> None:
        if self._asked is not None:
            self.core.batch(time.monotonic() - self._asked)
            self._asked = None

    def _batch_end(self) -> None:
        self._asked = time.monotonic()


def _lightning_iterator(trainer: Any) -> Any:
    """The training DataLoader's live iterator: without persistent workers the DataLoader does not keep
    it, Lightning's CombinedLoader does (fit_loop._combined_loader._iterator.iterators)."""
    combined = getattr(getattr(trainer, "fit_loop", None), "_combined_loader", None)
    for iterator in getattr(getattr(combined, "_iterator", None), "iterators", None) or []:
        if getattr(iterator, "_workers", None):
            return iterator
    return None


class LightningGuardLogic(_HookGuard):
    """PyTorch Lightning hooks (lightning.pytorch.Callback signatures)."""

    _trainer: Any = None

    def _workers(self) -> tuple[list[WorkerState], bool]:
        iterator = _lightning_iterator(self._trainer)
        if iterator is not None:
            return iterator_workers(iterator)
        return super()._workers()

    def setup(self, trainer: Any, pl_module: Any, stage: str) -> None:
        self._trainer = trainer
        if stage == "fit":
            self._start()

    def on_train_epoch_start(self, trainer: Any, pl_module: Any) -> None:
        self._start()
        self._epoch_start(int(getattr(trainer, "current_epoch", 0) or 0), getattr(trainer, "train_dataloader", None))

    def on_train_batch_start(self, trainer: Any, pl_module: Any, batch: Any, batch_idx: int) -> None:
        self._batch_start()

    def on_train_batch_end(self, trainer: Any, pl_module: Any, outputs: Any, batch: Any, batch_idx: int) -> None:
        self._batch_end()

    def on_train_epoch_end(self, trainer: Any, pl_module: Any) -> None:
        self._asked = None
        if self._monitor is not None:
            self._monitor.tick()

    def on_exception(self, trainer: Any, pl_module: Any, exception: BaseException) -> None:
        if self._monitor is not None:
            self._monitor.tick()  # a worker death behind the exception gets its line
        self._stop()

    def teardown(self, trainer: Any, pl_module: Any, stage: str) -> None:
        self._stop()


class HFTrainerGuardLogic(_HookGuard):
    """Hugging Face Trainer hooks (transformers.TrainerCallback signatures)."""

    def on_train_begin(self, args: Any, state: Any, control: Any, **kwargs: Any) -> None:
        self._start()

    def on_epoch_begin(self, args: Any, state: Any, control: Any, **kwargs: Any) -> None:
        self._start()
        loader = kwargs.get("train_dataloader")
        self._epoch_start(int(getattr(state, "epoch", 0) or 0), loader,
                          persistent=bool(getattr(args, "dataloader_persistent_workers", False)),
                          workers=int(getattr(args, "dataloader_num_workers", 0) or 0))

    def on_step_begin(self, args: Any, state: Any, control: Any, **kwargs: Any) -> None:
        self._batch_start()

    def on_step_end(self, args: Any, state: Any, control: Any, **kwargs: Any) -> None:
        self._batch_end()

    def on_epoch_end(self, args: Any, state: Any, control: Any, **kwargs: Any) -> None:
        self._asked = None
        if self._monitor is not None:
            self._monitor.tick()

    def on_train_end(self, args: Any, state: Any, control: Any, **kwargs: Any) -> None:
        self._stop()


def _base(*candidates: tuple[str, str]) -> type:
    import importlib

    for module, name in candidates:
        try:
            return getattr(importlib.import_module(module), name)  # type: ignore[no-any-return]
        except (ImportError, AttributeError):
            continue
    return object


@functools.cache
def _lightning_class() -> type:
    base = _base(("lightning.pytorch", "Callback"), ("pytorch_lightning", "Callback"))
    return type("LightningGuard", (LightningGuardLogic, base), {"__module__": __name__,
                                                                "__doc__": LightningGuardLogic.__doc__})


@functools.cache
def _hf_class() -> type:
    base = _base(("transformers", "TrainerCallback"))
    return type("HFTrainerGuard", (HFTrainerGuardLogic, base), {"__module__": __name__,
                                                                "__doc__": HFTrainerGuardLogic.__doc__})


def __getattr__(name: str) -> Any:
    # Built on first use: the base class is the framework's, when it is installed.
    if name == "LightningGuard":
        return _lightning_class()
    if name == "HFTrainerGuard":
        return _hf_class()
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
