"""Every failure the encyclopedia describes is recognised: each `#! match:` line, diagnosed alone, names its cause.

A line can legitimately match a more specific cause too (a kernel OOM record for `pt_data_worker` is also a
host OOM); the test then accepts the more specific one only when the fixture says so with a second directive.
"""

from __future__ import annotations

import pytest

from tests.helpers import diagnose_with
from trainmedic.catalog import load_library
from trainmedic.fixtures import fixture_lines
from trainmedic.reason.engine import SCALE_IN_TEXT
from trainmedic.scan.keywords import keywords

LIB = load_library()
CASES = [
    pytest.param(fl.cause, fl.text, id=f"{fl.cause}:{fl.number}")
    for e in LIB for fl in fixture_lines(e) if fl.kind == "match"
]
# Lines that, alone, are rightly explained by a more specific cause of another entry.
MORE_SPECIFIC = {
    ("host-oom/oom-killer", "dataloader-worker-failure/worker-oom"),
    ("launcher-teardown/failure-summary", "host-oom/sigkill"),  # "died with <Signals.SIGKILL: 9>"
    # Alone, the launcher's line that one rank failed on its own says which rank, not why.
    ("launcher-teardown/failure-summary", "unclassified-failure/process-exited"),
    ("launcher-teardown/failure-summary", "native-crash/abort"),  # "failed (exitcode: -6)": the signal says SIGABRT
    # The legacy launcher's CalledProcessError names its last worker's command, not the failed one's:
    # with no rank to blame it is the launcher's failure report.
    ("unclassified-failure/process-exited", "launcher-teardown/failure-summary"),
    # Alone, with no DataLoader in sight, CUDA re-initialised in a fork is the process-level cause.
    ("dataloader-worker-failure/cuda-in-forked-worker", "cuda-reinit-forked/fork-after-cuda-init"),
    # Alone, with neither torch 1.7's unpack nor a persistent reset in sight, the pin-memory thread died of
    # something its own traceback would name: an exception no fingerprint explains.
    ("dataloader-worker-failure/pin-memory-persistent-workers-resume", "unclassified-failure/uncaught-exception"),
    # Alone, with no NCCL frame or word in sight, UCX's report of a SIGBUS is a native bus error.
    ("nccl-error/shm-too-small", "native-crash/bus-error"),
}


def _precursor(cause: str, line: str) -> bool:
    import re

    return any(f.precursor and re.search(f.regex, line) for f in LIB.cause(cause).fingerprints)


def _handled(cause: str, line: str) -> bool:
    import re

    return any(f.handled and re.search(f.regex, line) for f in LIB.cause(cause).fingerprints)


def _at_exit(cause: str, line: str) -> bool:
    import re

    return any(f.at_exit and re.search(f.regex, line) for f in LIB.cause(cause).fingerprints)


def _warning(cause: str, line: str) -> bool:
    """A warning-level line that does not name a collapsed loss scale."""
    import re

    c = LIB.cause(cause)
    hits = [f for f in c.fingerprints if re.search(f.regex, line, re.I if f.ignore_case else 0)]
    if not hits or not all(f.warning for f in hits):
        return False
    scales = [float(m.group(1)) for m in SCALE_IN_TEXT.finditer(line)]
    return c.scale_floor is None or not scales or min(scales) > c.scale_floor


@pytest.mark.parametrize(("cause", "line"), CASES)
def test_match_line_alone_names_its_cause(cause: str, line: str) -> None:
    d = diagnose_with((line + "\n").encode())
    if _warning(cause, line):
        # A warning alone is not a failure: the run is healthy and the note says what was seen.
        assert d["verdict"] == "healthy" and any("a warning alone is not a failure" in n for n in d["notes"]), line
        return
    if _handled(cause, line):
        # The framework saying it caught the failure and went on: alone it ended nothing.
        assert d["verdict"] == "healthy", line
        return
    if _at_exit(cause, line):
        # A message only an exiting process prints: alone, after whatever work the run did, it ended none.
        assert d["verdict"] == "healthy", line
        return
    if _precursor(cause, line):
        # A warning before a failure: alone it fails nothing, and the report still shows it.
        assert d["verdict"] == "healthy" and any("warning before any failure" in n for n in d["notes"])
        return
    assert d["primary"] is not None, line
    got = d["primary"]["id"]
    if LIB.cause(cause).tail_only:
        # Words any failing line uses: a line a fingerprint knows is named by it instead.
        assert d["verdict"] == "failure", line
        return
    # A kill that names no sender reads as the sender real threads most often found (catalog.likeliest_reading),
    # with the kill itself as the first alternative.
    sender = LIB.likeliest_reading(cause)
    if sender is not None and got == sender[0]:
        assert d["alternatives"][0]["id"] == cause, line
        return
    for wider, narrower in MORE_SPECIFIC:
        if wider == cause and (narrower == got or (LIB.likeliest_reading(narrower) or ("",))[0] == got):
            return
    assert got == cause, f"{line!r} -> {got}"


def test_keyword_prefilter_keeps_every_match_line() -> None:
    words = [w for w in keywords(LIB) if w]
    assert "" not in keywords(LIB), "a fingerprint has no literal: the browser prefilter would have to keep every line"
    for e in LIB:
        for fl in fixture_lines(e):
            if fl.kind == "match" and not LIB.cause(fl.cause).tail_only:
                assert any(w in fl.text for w in words), (fl.path, fl.number)


def test_keyword_prefilter_keeps_no_line_of_a_healthy_run_s_steady_state() -> None:
    # The lines a run prints thousands of times must pass the browser's prefilter unread, or a large
    # file is sent whole: a fingerprint's literal is never a word of every step line ("loss", "code").
    # (HF Trainer's metric dicts do pass, a known cost: the literals of the NaN-in-a-dict fingerprints are
    # "': " and "'grad_norm': "; the slow browser test measures what a large file sends.)
    words = [w for w in keywords(LIB) if w]
    steady = [
        "step 1200 loss 2.3412 lr 3.0e-04 grad_norm 0.812 tokens/s 41233",
        "Epoch 3:  41%|████      | 412/1000 [02:13<03:10,  3.09it/s, loss=0.412, v_num=7, train_loss_step=0.398]",
        "[rank3]: 2026-12-01 11:40:00,000 INFO iteration 1200/50000 | consumed samples: 76800 | lm loss: 2.3e+00 |",
        "Train: [3][ 400/1000]  Time 0.214 (0.220)  Data 0.002 (0.003)  Loss 1.2345e+00 (1.3001e+00)  Acc@1 71.9",
    ]
    for line in steady:
        assert not [w for w in words if w in line], line
    # nor a context mark (the scan calls back on every one it meets): NCCL's INFO chatter names libnccl-net.so
    marks = {m for c in LIB.causes() for m in (*c.needs_context, *c.otherwise_context)}
    chatter = [*steady, "node1:1234:1234 [0] NCCL INFO NET/Plugin : No plugin found (libnccl-net.so), using internal "
               "implementation", "node1:1234:1250 [0] NCCL INFO comm 0x55d5c0a0 rank 0 nranks 8 cudaDev 0 - Init COMPLETE"]
    for line in chatter:
        assert not [m for m in marks if m in line], line
