"""Newlines counted with numpy (a big input) give what bytes.count gives, over any span."""

from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st

from trainmedic.logs import newlines


@pytest.fixture(params=[False, True], ids=["bytes", "numpy"])
def counter(request: pytest.FixtureRequest, monkeypatch: pytest.MonkeyPatch) -> None:
    if request.param:
        pytest.importorskip("numpy")
        assert newlines.use_numpy()
    else:
        monkeypatch.setattr(newlines, "_NUMPY", {})


@pytest.mark.usefixtures("counter")
@given(data=st.binary(max_size=300_000).map(lambda b: b.replace(b"\x0b", b"\n") * 3),
       a=st.integers(0, 1_000_000), b=st.integers(0, 1_000_000))
def test_a_span_counts_what_bytes_count_counts(data: bytes, a: int, b: int) -> None:
    start, end = min(a, b, len(data)), min(max(a, b), len(data))
    assert newlines.count(data, start, end) == data.count(b"\n", start, end)
    assert newlines.count(bytearray(data), start) == data.count(b"\n", start)


@pytest.mark.usefixtures("counter")
def test_a_long_span_is_counted_exactly() -> None:
    data = (b"x" * 99 + b"\n") * 5000 + b"tail without newline"
    assert newlines.count(data) == 5000
    edges = (b"x" * 1023 + b"\n") * 2048  # a newline on the last byte of every piece numpy compares
    assert newlines.count(edges) == 2048 and newlines.count(edges, 1, len(edges) - 1) == 2047
    assert newlines.count(data, 150, len(data) - 1000) == data.count(b"\n", 150, len(data) - 1000)
