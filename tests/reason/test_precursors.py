"""The guard's warnings are evidence for a failure that follows, never a failure on their own."""

from __future__ import annotations

import dataclasses

from tests.helpers import diagnose_with
from trainmedic.api import Diagnoser
from trainmedic.catalog import load_library

FDS = "[rank1]: [trainmedic] guard: fds-near-limit pid=4711 process=main open=231 limit=256 percent=90 sharing_strategy=file_descriptor"
EXITED = "[rank1]: RuntimeError: DataLoader worker (pid(s) 4712) exited unexpectedly"


def test_warning_alone_is_healthy_but_reported() -> None:
    d = diagnose_with(f"[rank1]: step 1\n{FDS}\n[rank1]: step 2\nTraining completed.\n".encode())
    assert d["verdict"] == "healthy"
    assert any("fds-near-limit" in n for n in d["notes"])


def test_warning_before_an_ambiguous_death_lifts_the_cause_it_warned_about() -> None:
    # The evidence's own confidences (no calibration, no likeliest reading): a primary the corpus calibrates to near
    # certainty would leave the alternatives nothing to share either way.
    raw = dataclasses.replace(load_library(), calibration={}, raw_map=(), resolved={})
    plain = Diagnoser(raw, backend="python", parallel=False).diagnose(f"{EXITED}\n".encode()).to_json()
    warned = Diagnoser(raw, backend="python", parallel=False).diagnose(f"{FDS}\n{EXITED}\n".encode()).to_json()
    assert plain["primary"]["id"] == warned["primary"]["id"] == "dataloader-worker-failure/worker-exited"
    conf = {a["id"]: a["confidence"] for a in warned["alternatives"]}
    before = {a["id"]: a["confidence"] for a in plain["alternatives"]}
    assert conf["dataloader-worker-failure/fd-exhaustion"] > before["dataloader-worker-failure/fd-exhaustion"]
    assert "guard warned first" in next(a["why"] for a in warned["alternatives"]
                                        if a["id"] == "dataloader-worker-failure/fd-exhaustion")


def test_warning_before_the_same_failure_corroborates_it() -> None:
    emfile = "[rank1]: OSError: [Errno 24] Too many open files: '/data/shard-00042.tar'"
    plain = diagnose_with(f"{emfile}\n".encode())["primary"]
    warned = diagnose_with(f"{FDS}\n{emfile}\n".encode())["primary"]
    assert warned["id"] == plain["id"] == "dataloader-worker-failure/fd-exhaustion"
    assert warned["confidence"] > plain["confidence"]
    assert any("fds-near-limit" in e["text"] for e in warned["evidence"])
