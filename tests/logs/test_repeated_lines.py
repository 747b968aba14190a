"""A verbose run repeats the same warning on every rank every step: the reader works each distinct line out once,
and what it remembers stays bounded whatever the log holds."""

from __future__ import annotations

from pathlib import Path

from trainmedic.api import Diagnoser
from trainmedic.catalog import load_library
from trainmedic.logs.reader import MAX_HITS_PER_PATTERN, MEMO_LINES, Reader
from trainmedic.logs.sources import Source

# a fingerprint's line as every rank of a verbose run prints it (NCCL's topology warning, NCCL_DEBUG=INFO)
_REPEATED = ("[rank{r}]:node-1:{pid}:4791 [{r}] NCCL WARN Could not find real path of "
             "/sys/class/pci_bus/0000:00/../../0000:00:04.0\n")


def _scan(path: Path) -> tuple[Reader, object]:
    base = Diagnoser(load_library()).reader
    reader = Reader(base.given, base.backend)
    return reader, reader.scan(Source(str(path), path, path.stat().st_size))


def test_every_rank_still_counts_as_a_reporter_past_the_evidence_cap(tmp_path: Path) -> None:
    path = tmp_path / "train.log"
    with path.open("w") as f:
        for step in range(MAX_HITS_PER_PATTERN * 2):
            for r in range(8):
                if r == 5 and step < MAX_HITS_PER_PATTERN:
                    continue  # rank 5 says it only past the cap: a remembered line must not hide it
                f.write(_REPEATED.format(r=r, pid=4000 + r))
            f.write(f"[rank0]: step {step} loss 0.5\n")
    reader, result = _scan(path)
    seen = {r for ranks in result.seen_ranks.values() for r in ranks}  # type: ignore[attr-defined]
    assert seen == set(range(8))
    assert 0 < reader._confirm.cache_info().currsize <= 16 and 0 < reader._reporter.cache_info().currsize <= 8


def test_what_the_reader_remembers_is_bounded(tmp_path: Path) -> None:
    path = tmp_path / "train.log"
    with path.open("w") as f:
        for i in range(MEMO_LINES * 3):  # distinct lines, each a hit: the memo never grows past its bound
            f.write(_REPEATED.format(r=i % 8, pid=10_000 + i))
    reader, _ = _scan(path)
    assert reader._confirm.cache_info().currsize <= MEMO_LINES
    assert reader._reporter.cache_info().currsize <= MEMO_LINES
    long = tmp_path / "long.log"
    long.write_text("x" * 5000 + " " + _REPEATED.format(r=1, pid=1))  # a long line is not remembered at all
    reader, result = _scan(long)
    assert result.matches and reader._confirm.cache_info().currsize == 0  # type: ignore[attr-defined]
