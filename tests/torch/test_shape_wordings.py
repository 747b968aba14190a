"""Shape errors as the installed torch words them, raised for real (in-process, on the CPU, in milliseconds),
must each be read as a shape mismatch: the library's fixture lines copy these formats from torch's sources,
this checks them against what torch itself prints today."""

from __future__ import annotations

import traceback
from collections.abc import Callable
from typing import Any

import pytest

from trainmedic.api import Diagnoser, Named

torch = pytest.importorskip("torch")
nn, F = torch.nn, torch.nn.functional

SHAPES = "tensor-shape-mismatch/incompatible-shapes"

RAISERS: dict[str, Callable[[], Any]] = {
    "max pool on a 1x1 map": lambda: F.max_pool2d(torch.zeros(1, 512, 1, 1), 2),
    "3-d max pool, one frame": lambda: F.max_pool3d(torch.zeros(1, 64, 1, 7, 7), 2),
    "conv kernel over a 2x2 input": lambda: nn.Conv2d(3, 8, 3)(torch.zeros(1, 3, 2, 2)),
    "conv1d kernel over a short sequence": lambda: nn.Conv1d(3, 8, 5)(torch.zeros(1, 3, 2)),
    "in-place op that would broadcast": lambda: torch.zeros(1, 4, 4).sub_(torch.zeros(3, 4, 4)),
    "LSTM state of another batch": lambda: nn.LSTM(10, 20, 2)(
        torch.zeros(5, 3, 10), (torch.zeros(2, 4, 20), torch.zeros(2, 4, 20))),
    "GRU state of another batch": lambda: nn.GRU(10, 20, 2)(torch.zeros(5, 3, 10), torch.zeros(2, 4, 20)),
    "LSTM given 4-d input": lambda: nn.LSTM(10, 20)(torch.zeros(5, 3, 10, 1)),
    "RNN given 4-d input": lambda: nn.RNN(10, 20)(torch.zeros(5, 3, 10, 1)),
}


@pytest.mark.parametrize("name", sorted(RAISERS))
def test_a_shape_error_torch_raises_is_read_as_a_shape_mismatch(name: str) -> None:
    try:
        RAISERS[name]()
    except (RuntimeError, ValueError):
        log = "epoch 1 step 10 loss 2.31\n" + traceback.format_exc()
    else:
        pytest.fail(f"{name}: torch raised nothing")
    d = Diagnoser().diagnose(Named("train.log", log.encode()))
    assert d.primary is not None and d.primary.id == SHAPES, (name, log.splitlines()[-1], d.primary)
