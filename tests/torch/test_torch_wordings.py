"""Errors as the installed torch words them, raised for real (in-process, on the CPU, in milliseconds),
must each be read as their cause: shape mismatches first, then dtypes, out-of-range values and a CPU-only build.
The library's fixture lines copy these formats from torch's sources; this checks them against what torch itself
prints today."""

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
    "a sum over a dim a 1-d tensor lacks": lambda: torch.zeros(3).sum(dim=1),
    "two indices into a 1-d tensor": lambda: torch.zeros(3)[0, 1],
    "permute to another rank": lambda: torch.zeros(2, 3).permute(0, 1, 2),
    "einsum of sizes that do not meet": lambda: torch.einsum("ij,jk->ik", torch.zeros(2, 3), torch.zeros(4, 5)),
    "dot of two lengths": lambda: torch.matmul(torch.zeros(3), torch.zeros(4)),
    "interpolate to another rank": lambda: F.interpolate(torch.zeros(1, 3, 4), size=(8, 8)),
    "reflect padding wider than the input": lambda: F.pad(torch.zeros(1, 1, 2, 2), (3, 3, 3, 3), mode="reflect"),
    "attention of another width": lambda: nn.TransformerEncoderLayer(8, 2)(torch.zeros(4, 2, 6)),
    "expand to fewer dimensions": lambda: torch.zeros(1, 1, 30, 25).expand(15, 30, 30),
    "gather with an index of another rank": lambda: torch.zeros(2, 3).gather(1, torch.zeros(2, dtype=torch.long)),
    "assignment of another shape": lambda: torch.zeros(3, 3).__setitem__((torch.tensor([0]), torch.tensor([1])),
                                                                          torch.zeros(5)),
    "split sizes that do not add up": lambda: torch.zeros(2, 64).split([32, 16, 32, 16], dim=1),
    "unflatten sizes that do not multiply up": lambda: torch.zeros(2, 20).unflatten(1, (4, 6)),
    "segmentation target of another size": lambda: F.cross_entropy(torch.zeros(2, 3, 4, 4), torch.zeros(2, 5, 5).long()),
    "gradient of another shape": lambda: torch.autograd.grad(torch.zeros(8, requires_grad=True) * 2,
                                                             [torch.zeros(8, requires_grad=True)],
                                                             grad_outputs=torch.zeros(())),
    "matmul of a 0-d tensor": lambda: torch.matmul(torch.tensor(1.0), torch.zeros(2, 2)),
}

# Other mistakes torch raises on the CPU in its own words, and the cause each is (the CUDA kernels assert instead).
OTHERS: dict[str, tuple[Callable[[], Any], str]] = {
    "a float64 batch into a float32 layer": (lambda: nn.Linear(3, 3)(torch.zeros(2, 3, dtype=torch.float64)),
                                             "dtype-mismatch/incompatible-dtypes"),
    "float targets to cross entropy": (lambda: F.cross_entropy(torch.zeros(2, 3), torch.tensor([0.0, 1.0])),
                                       "dtype-mismatch/incompatible-dtypes"),
    "gather of an index past the end": (lambda: torch.zeros(2, 3).gather(1, torch.tensor([[5]])),
                                        "cuda-device-side-assert/index-out-of-range"),
    "one_hot of a class past num_classes": (lambda: F.one_hot(torch.tensor([5]), 3),
                                            "cuda-device-side-assert/target-out-of-range"),
    "a half tensor times a float one": (lambda: torch.zeros(2, 2, dtype=torch.half) @ torch.zeros(2, 2),
                                        "dtype-mismatch/incompatible-dtypes"),
    "layer norm of integers": (lambda: F.layer_norm(torch.zeros(2, 3, dtype=torch.int64), (3,)),
                               "dtype-mismatch/incompatible-dtypes"),
    "softmax of integers": (lambda: F.softmax(torch.zeros(3, dtype=torch.long), 0), "dtype-mismatch/incompatible-dtypes"),
    "a None sample to the default collate": (lambda: torch.utils.data.default_collate([None, None]),
                                             "dataloader-worker-failure/getitem-exception"),
    "BCE on logits": (lambda: F.binary_cross_entropy(torch.full((2,), 2.0), torch.zeros(2)),
                      "cuda-device-side-assert/bce-input-out-of-range"),
    "BCE on 0/255 masks": (lambda: F.binary_cross_entropy(torch.full((2,), 0.5), torch.full((2,), 255.0)),
                           "cuda-device-side-assert/bce-input-out-of-range"),
}


def _diagnosed(name: str, raiser: Callable[[], Any]) -> tuple[str, str | None]:
    try:
        raiser()
    except Exception:  # whatever torch raised: the log is its traceback, as a run would print it
        log = "epoch 1 step 10 loss 2.31\n" + traceback.format_exc()
    else:
        pytest.fail(f"{name}: torch raised nothing")
    d = Diagnoser().diagnose(Named("train.log", log.encode()))
    return log.splitlines()[-1], d.primary.id if d.primary is not None else None


@pytest.mark.parametrize("name", sorted(RAISERS))
def test_a_shape_error_torch_raises_is_read_as_a_shape_mismatch(name: str) -> None:
    last, got = _diagnosed(name, RAISERS[name])
    assert got == SHAPES, (name, last, got)


def test_set_device_on_a_cpu_only_build_is_read_as_that_build() -> None:
    if torch.cuda.is_available():
        pytest.skip("this torch has CUDA: set_device would not fail")
    _, got = _diagnosed("set_device", lambda: torch.cuda.set_device(1))
    assert got == "missing-cuda-libraries/cpu-only-build"


@pytest.mark.parametrize("name", sorted(OTHERS))
def test_a_mistake_torch_raises_on_the_cpu_is_read_as_its_cause(name: str) -> None:
    raiser, cause = OTHERS[name]
    last, got = _diagnosed(name, raiser)
    assert got == cause, (name, last, got)
