"""trainmedic's PyTorch side: the only package that imports torch, and only inside functions.

Importing `trainmedic.torch` stays cheap and works without torch installed; each helper
imports torch when it is called.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from trainmedic.torch.isolate import IsolateReport

__all__ = ["isolate"]


def isolate(*args: Any, **kwargs: Any) -> IsolateReport:
    """Run a dataset factory with 0, 1 and N workers in subprocesses; see `trainmedic.torch.isolate`."""
    from trainmedic.torch.isolate import isolate as _isolate

    return _isolate(*args, **kwargs)
