"""trainmedic: finds out why a PyTorch training run failed, and what to do about it."""

from __future__ import annotations

from trainmedic.catalog import Library, load_library
from trainmedic.model import Diagnosis, ExitCode

__all__ = ["Diagnosis", "ExitCode", "Library", "diagnose", "load_library"]
__version__ = "0.1.0"


def __getattr__(name: str) -> object:
    # diagnose() pulls in the reader and matcher; keep `import trainmedic` cheap.
    if name == "diagnose":
        from trainmedic.api import diagnose

        return diagnose
    raise AttributeError(name)
