"""trainmedic's PyTorch side: the only package that imports torch, and only inside functions.

Importing `trainmedic.torch` stays cheap and works without torch installed; each helper
imports torch when it is called.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from trainmedic.torch.guard import GuardedLoader
    from trainmedic.torch.isolate import IsolateReport

__all__ = ["GuardedDataLoader", "guard", "isolate"]


def isolate(*args: Any, **kwargs: Any) -> IsolateReport:
    """Run a dataset factory with 0, 1 and N workers in subprocesses; see `trainmedic.torch.isolate`."""
    from trainmedic.torch.isolate import isolate as _isolate

    return _isolate(*args, **kwargs)


def guard(loader: Any, **options: Any) -> GuardedLoader:
    """Iterate `loader` with the DataLoader guard (waits, worker deaths, fds, /dev/shm); see trainmedic.torch.guard."""
    from trainmedic.torch.guard import guard as _guard

    return _guard(loader, **options)


def __getattr__(name: str) -> Any:
    # GuardedDataLoader is a class: imported on first use, so `import trainmedic.torch` stays cheap.
    if name == "GuardedDataLoader":
        from trainmedic.torch.guard import GuardedDataLoader

        return GuardedDataLoader
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
