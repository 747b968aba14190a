"""`trainmedic library draft`: an entry drafted from a failure no signature knew, checked like any other."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.conftest import FIXTURES, run_cli
from trainmedic.api import Diagnoser, Named
from trainmedic.catalog import load_library
from trainmedic.draft import fingerprint, message_of, slug
from trainmedic.util import linear

BAD = FIXTURES / "lab" / "ddp-unknown-exception" / "output.log"
GOOD = FIXTURES / "lab" / "ddp-healthy" / "output.log"


def test_the_fingerprint_is_written_from_the_template_not_the_literal_line() -> None:
    line = "[rank3]:[E1130 10:00:00.123456 4711 frob.py:12] frob failed at /data/shard_3.bin (0x7f12): 'bad header'"
    assert message_of(line) == "frob failed at /data/shard_3.bin (0x7f12): 'bad header'"
    rx = fingerprint(line)
    assert rx == r"frob failed at [^ \n]+ \(0x[0-9a-fA-F]+\): '[^'\n]*'"
    assert linear.compile_text(rx).search("frob failed at /ckpt/shard_9.bin (0xdead): 'short read'")
    assert not linear.compile_text(rx).search("frob succeeded at /data/shard_3.bin")
    assert slug("[rank1]: LeaseExpired: shard 3 has had no owner") == "lease-expired"
    assert slug("RuntimeError: Frobnicator lost sync") == "frobnicator-lost-sync"  # a builtin name says nothing


def test_a_drafted_entry_passes_the_library_check_and_names_the_failure_next_time(tmp_path: Path) -> None:
    team = tmp_path / "team-library"
    res = run_cli("library", "draft", "--from-log", str(BAD), "--baseline", str(GOOD), "--into", str(team))
    assert res.code == 0, res.out + res.err
    assert "started as a copy of the bundled library" in res.out and "library check" in res.out
    yaml_text = (team / "general" / "lease-expired.yaml").read_text()
    assert "TODO: the exact fix" in yaml_text
    log = (team / "general" / "lease-expired.log").read_text().splitlines()
    assert log[-4:-2] == ["#! match: lease-expired/drafted", "[rank1]: LeaseExpired: shard 3 has had no owner for 3 heartbeats"]
    assert log[-2] == "#! no-match: lease-expired/drafted" and "lost its lease" in log[-1]
    assert run_cli("library", "check", "--library", str(team)).code == 0
    d = Diagnoser(load_library(team)).diagnose(Named(BAD.name, BAD.read_bytes()))
    assert d.primary is not None and d.primary.id == "lease-expired/drafted" and d.primary.rank == 1
    # a second draft of the same failure does not overwrite the first
    again = run_cli("library", "draft", "--from-log", str(BAD), "--into", str(team))
    assert again.code == 2 and "already has an entry" in again.err


def test_a_saved_diagnosis_drafts_too(tmp_path: Path) -> None:
    saved = tmp_path / "d.json"
    res = run_cli("diagnose", str(BAD), "--json")
    saved.write_text(res.out)
    out = run_cli("library", "draft", str(saved), "--into", str(tmp_path / "lib"))
    assert out.code == 0, out.err
    assert (tmp_path / "lib" / "general" / "lease-expired.yaml").is_file()


@pytest.mark.parametrize("argv", [
    ("library", "draft", str(BAD)),  # not a diagnosis, and no library to write into
    ("library", "draft", "--from-log", str(BAD)),  # no library to write into
    ("library", "draft", str(BAD), "--into", "/nonexistent-team-lib"),  # a log is no saved diagnosis
])
def test_bad_requests_are_one_line_and_exit_2(argv: tuple[str, ...], monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("TRAINMEDIC_LIBRARY", raising=False)
    res = run_cli(*argv)
    assert res.code == 2 and len(res.err.strip().splitlines()) == 1
