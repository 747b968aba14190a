"""torch's multiprocessing settings: the start method and sharing strategy decide how workers fail.

torch is never imported by the core: this probe asks a fresh interpreter (with a time limit,
because a first `import torch` can take many seconds), unless torch is already imported in this
process, in which case it reads the live settings, including whether CUDA is initialised here.
"""

from __future__ import annotations

import importlib.util
import json
import multiprocessing
import re
import sys
from collections.abc import Mapping
from typing import Any

from trainmedic.probes.base import (
    Check,
    CommandTimeout,
    DataValue,
    ProbeContext,
    ProbeFact,
    run_command,
    stated,
    unknown,
)

IMPORT_TIMEOUT = 45.0

_SCRIPT = r"""
import importlib.util, json, multiprocessing, sys
if importlib.util.find_spec("torch") is None:
    print(json.dumps({"installed": False})); sys.exit(0)
import torch, torch.multiprocessing as tmp
print(json.dumps({
    "installed": True,
    "version": torch.__version__,
    "start_method": multiprocessing.get_start_method(allow_none=True)
        or multiprocessing.get_all_start_methods()[0],
    "sharing_strategy": tmp.get_sharing_strategy(),
    "cuda_available": bool(torch.cuda.is_available()),
    "cuda_version": torch.version.cuda,
    "cuda_initialized": bool(torch.cuda.is_initialized()),
}))
"""


def _in_process() -> dict[str, Any]:
    """Read the settings of the torch this process already imported (we never import it here)."""
    torch: Any = sys.modules["torch"]
    return {
        "installed": True,
        "version": str(torch.__version__),
        "start_method": multiprocessing.get_start_method(allow_none=True) or multiprocessing.get_all_start_methods()[0],
        "sharing_strategy": str(torch.multiprocessing.get_sharing_strategy()),
        "cuda_available": bool(torch.cuda.is_available()),
        "cuda_version": torch.version.cuda,
        "cuda_initialized": bool(torch.cuda.is_initialized()),
    }


def _yes(flag: object) -> str:
    return "yes" if flag else "no"


_LABELS = (("sharing_strategy", "sharing strategy"), ("start_method", "start method"))


class TorchProbe:
    id = "torch"
    time_limit = IMPORT_TIMEOUT + 10.0

    @staticmethod
    def facts(data: Mapping[str, DataValue]) -> tuple[ProbeFact, ...]:
        """The sharing strategy and start method: they decide how workers fail."""
        values = {key: data.get(key) for key, _ in _LABELS}
        return stated(*((f"torch.{key}", v if isinstance(v, str) else None) for key, v in values.items()))

    @staticmethod
    def data_from_value(value: str) -> dict[str, DataValue]:
        """`..., start method fork, sharing strategy file_descriptor, ...` back into names."""
        found = {key: re.search(rf"\b{label} ([A-Za-z_]+)", value) for key, label in _LABELS}
        return {key: m.group(1) if m else None for key, m in found.items()}

    def run(self, ctx: ProbeContext) -> Check:
        here = "torch" in sys.modules and ctx.python == sys.executable
        if here:
            info = _in_process()
        else:
            if not ctx.python:
                return unknown(self.id, "torch probe disabled (no interpreter given)")
            if ctx.python == sys.executable and importlib.util.find_spec("torch") is None:
                return unknown(self.id, f"torch is not importable by {ctx.python}")
            try:
                result = run_command([ctx.python, "-c", _SCRIPT], max(ctx.command_timeout, IMPORT_TIMEOUT))
            except CommandTimeout as exc:
                return unknown(self.id, f"import torch: {exc}")
            except OSError as exc:
                return unknown(self.id, f"cannot run {ctx.python}: {exc.strerror or exc}")
            lines = result.stdout.strip().splitlines()
            try:
                info = json.loads(lines[-1]) if lines else {}
            except json.JSONDecodeError:
                info = {}
            if result.returncode != 0 or not info:
                last = (result.stderr.strip().splitlines() or ["no output"])[-1]
                return unknown(self.id, f"import torch failed in {ctx.python}: {last}")
            if not info.get("installed"):
                return unknown(self.id, f"torch is not importable by {ctx.python}")

        initialised = _yes(info["cuda_initialized"]) if here else "n/a (fresh interpreter)"
        value = (
            f"torch {info['version']}, start method {info['start_method']}, "
            f"sharing strategy {info['sharing_strategy']}, CUDA available {_yes(info['cuda_available'])}, "
            f"CUDA initialised {initialised}"
        )
        data = {
            "version": info["version"],
            "start_method": info["start_method"],
            "sharing_strategy": info["sharing_strategy"],
            "cuda_available": bool(info["cuda_available"]),
            "cuda_version": info.get("cuda_version"),
            "cuda_initialized": bool(info["cuda_initialized"]) if here else None,
        }
        threshold = "no CUDA initialised in the parent when workers are forked"
        if here and info["start_method"] == "fork" and info["cuda_initialized"]:
            return Check(
                id=self.id,
                status="warn",
                value=value,
                threshold=threshold,
                why=(
                    "CUDA is initialised in this process and workers are forked: a worker touching CUDA "
                    "fails with 'Cannot re-initialize CUDA in forked subprocess'"
                ),
                fix=(
                    "keep CUDA out of Dataset.__getitem__ and collate_fn, or use "
                    "DataLoader(multiprocessing_context='spawn') / mp.set_start_method('spawn')"
                ),
                data=data,
                facts=self.facts(data),
            )
        return Check(
            id=self.id,
            status="ok",
            value=value,
            threshold=threshold,
            why=(
                f"workers start with {info['start_method']} and share tensors by "
                f"{info['sharing_strategy']}: file_descriptor needs a high `ulimit -n`, "
                "file_system leaves files in /dev/shm after a crash"
            ),
            fix="",
            data=data,
            facts=self.facts(data),
        )
