"""hyperscan and the pure-Python fallback find exactly the same lines, on real fixture lines and on noise."""

from __future__ import annotations

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from trainmedic.catalog import load_library
from trainmedic.fixtures import fixture_lines
from trainmedic.logs.reader import SAVES_BOUND, Reader
from trainmedic.scan.database import STRUCTURE, hyperscan_available, library_patterns

pytestmark = pytest.mark.skipif(not hyperscan_available(), reason="hyperscan not installed on this platform")


def _hits(backend: str, block: bytes) -> list[tuple[int, str]]:
    reader = Reader([*library_patterns(load_library()), *STRUCTURE], backend)
    out = set()
    for end, pid in reader.scanner.candidates(block):
        start = block.rfind(b"\n", 0, max(end - 1, 0)) + 1
        stop = block.find(b"\n", max(end - 1, start))
        line = block[start : stop if stop >= 0 else len(block)]
        if reader.compiled[pid].search(line):
            out.add((start, reader.patterns[pid].key))
    return sorted(out)


def _fixture_block() -> bytes:
    lib = load_library()
    return "\n".join(fl.text for e in lib for fl in fixture_lines(e)).encode() + b"\n"


def test_same_hits_on_every_fixture_line() -> None:
    block = _fixture_block()
    hs, py = _hits("hyperscan", block), _hits("python", block)
    assert hs == py
    assert len(hs) > 50  # the fixtures really exercise the patterns


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.lists(st.sampled_from(_fixture_block().split(b"\n")), max_size=40), st.binary(max_size=300))
def test_same_hits_on_shuffled_lines_and_noise(lines: list[bytes], noise: bytes) -> None:
    block = b"\n".join(lines) + noise + b"\n" + b"\n".join(reversed(lines))
    assert _hits("hyperscan", block) == _hits("python", block)


def test_a_repeated_last_line_without_its_newline_is_found_twice() -> None:
    # (hypothesis found it: hyperscan alone missed the second, unterminated line's word boundary)
    block = b"FAILED: multi_tensor_adam.cuda.o\nFAILED: multi_tensor_adam.cuda.o"
    assert _hits("hyperscan", block) == _hits("python", block)
    assert [start for start, _ in _hits("hyperscan", block)] == [0, 33]


def test_end_of_line_anchor_means_the_same_in_a_block() -> None:
    block = b"[rank1]: MemoryError\n[rank0]: step 3\n"
    assert any(key.startswith("host-oom/cpu-allocation-failure") for _, key in _hits("hyperscan", block))
    assert _hits("hyperscan", block) == _hits("python", block)


@pytest.mark.parametrize("saves", [SAVES_BOUND, SAVES_BOUND + 1])
def test_checkpoint_lines_are_reported_each_up_to_the_bound_then_once(saves: int) -> None:
    """A block's checkpoint lines come one by one up to SAVES_BOUND; past it (a run that logs a save every
    few lines) the block is scanned again with them once, and the reader searches its end. The other
    patterns' hits are the same either way."""
    from trainmedic.api import reader_patterns

    reader = Reader(reader_patterns(load_library()), "hyperscan")
    failure = "RuntimeError: DataLoader worker (pid 4242) is killed by signal: Bus error. "
    block = (failure + "\n" + "Saved checkpoint to ckpt/step.pt\nstep 3 loss 0.5\n" * saves + failure + "\n").encode()
    hits, every = reader.scanner.candidates_bounded(block)
    kinds = [reader.patterns[pid].kind for _, pid in hits]
    assert every == (saves <= SAVES_BOUND)
    assert kinds.count("checkpoint") == (saves if every else 1)
    others = sorted((end, pid) for end, pid in hits if reader.patterns[pid].kind != "checkpoint")
    assert others == sorted((end, pid) for end, pid in reader.scanner.candidates(block)
                            if reader.patterns[pid].kind != "checkpoint")
    starts = {block.rfind(b"\n", 0, max(end - 1, 0)) + 1 for end, _ in others}
    assert starts == {0, len(block) - len(failure) - 1}  # the failure, first and last line
    # After a flood the next blocks are scanned with them once from the start (a flood goes on)
    _, every_next = reader.scanner.candidates_bounded(b"Saved checkpoint to ckpt/step.pt\n")
    assert every_next == every
