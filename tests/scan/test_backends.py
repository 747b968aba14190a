"""hyperscan and the pure-Python fallback find exactly the same lines, on real fixture lines and on noise."""

from __future__ import annotations

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from trainmedic.catalog import load_library
from trainmedic.fixtures import fixture_lines
from trainmedic.logs.reader import Reader
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


def test_end_of_line_anchor_means_the_same_in_a_block() -> None:
    block = b"[rank1]: MemoryError\n[rank0]: step 3\n"
    assert any(key.startswith("host-oom/cpu-allocation-failure") for _, key in _hits("hyperscan", block))
    assert _hits("hyperscan", block) == _hits("python", block)
