"""Random bytes, random block splits and shuffled rank interleavings: nothing escapes, and the verdict
does not depend on how the input was cut into blocks or how ranks' lines interleave."""

from __future__ import annotations

import random

from hypothesis import HealthCheck, example, given, settings
from hypothesis import strategies as st

from tests.helpers import diagnose_with
from trainmedic.logs.sources import InputError

RANK_FAIL = [
    "Traceback (most recent call last):",
    '  File "/opt/train.py", line 88, in <module>',
    "    for batch in loader:",
    "RuntimeError: DataLoader worker (pid 4711) is killed by signal: Bus error. It is possible that dataloader's"
    " workers are out of shared memory. Please try to raise your shared memory limit.",
    "",
    "The above exception was the direct cause of the following exception:",
    "",
    "Traceback (most recent call last):",
    '  File "/opt/train.py", line 88, in <module>',
    "RuntimeError: DataLoader worker (pid(s) 4711) exited unexpectedly",
]
PEER = ("Watchdog caught collective operation timeout: WorkNCCL(SeqNum=77, OpType=ALLREDUCE, NumelIn=1, "
        "NumelOut=1, Timeout(ms)=600000) ran for 600032 milliseconds before timing out.")


def _rank_lines(rank: int, failing: int) -> list[str]:
    lines = [f"[rank{rank}]: step {s} loss 0.{s}" for s in range(5)]
    if rank == failing:
        lines += [f"[rank{rank}]: {t}" for t in RANK_FAIL]
    else:
        lines += [f"[rank{rank}]:[E1129 16:29:22.217000 {rank} ProcessGroupNCCL.cpp:616] [Rank {rank}] {PEER}"]
    return lines


def _interleave(per_rank: list[list[str]], rng: random.Random) -> str:
    queues = [list(q) for q in per_rank]
    out = []
    while any(queues):
        q = rng.choice([q for q in queues if q])
        out.append(q.pop(0))
    return "\n".join(out) + "\n"


@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.integers(0, 10_000), st.integers(1, 7))
def test_interleaving_does_not_change_the_verdict(seed: int, failing: int) -> None:
    rng = random.Random(seed)
    text = _interleave([_rank_lines(r, failing) for r in range(8)], rng)
    d = diagnose_with(text.encode())
    assert d["primary"]["id"] == "dataloader-worker-failure/shm-exhausted"
    assert d["primary"]["rank"] == failing
    assert {c["rank"] for c in d["collateral"]} == set(range(8)) - {failing}


@settings(max_examples=30, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.integers(0, 10_000), st.sampled_from([7, 64, 333, 4096]))
def test_block_size_does_not_change_the_answer(seed: int, block: int) -> None:
    rng = random.Random(seed)
    text = _interleave([_rank_lines(r, 3) for r in range(4)], rng).encode()
    assert diagnose_with(text, block_size=block) == diagnose_with(text)


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.binary(max_size=3000), st.sampled_from([16, 256, 4 << 20]))
def test_random_bytes_never_raise(data: bytes, block: int) -> None:
    try:
        d = diagnose_with(data, block_size=block)
    except InputError:
        return  # binary-looking input is refused with a message, which is the contract
    assert d["verdict"] in {"failure", "hang", "healthy"}
    assert d == diagnose_with(data)


@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.lists(st.text(max_size=80), max_size=60), st.sampled_from([8, 100, 4 << 20]))
# (found by this test: an input whose first line is empty and whose next ends in CRLF, cut so that the CRLF
# line starts a block; and a CRLF line that starts the second block only: one input, one line-end decision)
@example(["", "00\x80\x80\r"], 8)
@example(["aaaaaa", "b\r"], 8)
def test_random_text_lines_split_anywhere(lines: list[str], block: int) -> None:
    data = ("\n".join(lines) + "\n" + "\n".join(_rank_lines(2, 2))).encode("utf-8", "surrogatepass")
    try:
        d = diagnose_with(data, block_size=block)
    except InputError:
        return
    assert d == diagnose_with(data)
