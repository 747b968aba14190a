"""The library is data: it must load, every fingerprint must have fixtures, and both matchers must compile it."""

from __future__ import annotations

import re
import textwrap
from pathlib import Path

import pytest

from trainmedic.catalog import LIBRARY_DIR, LibraryError, load_entry, load_library, newline_problem
from trainmedic.fixtures import check_fixtures, fixture_lines
from trainmedic.scan.database import STRUCTURE, build_scanner, hyperscan_available, library_patterns

REQUIRED = {
    "dataloader-worker-failure": {
        "shm-exhausted", "worker-oom", "worker-segfault", "getitem-exception", "fd-exhaustion",
        "shm-name-collision", "cuda-in-forked-worker", "worker-hang", "slow-worker-respawn",
    },
    "cuda-out-of-memory": set(),
    "nccl-timeout": set(),
    "nan-loss": set(),
    "checkpoint-load-mismatch": set(),
    "host-oom": set(),
}


def test_library_loads_with_required_entries_and_roles() -> None:
    lib = load_library()
    for entry_id, causes in REQUIRED.items():
        entry = lib.entry(entry_id)
        assert causes <= {c.id for c in entry.causes}, entry_id
    roles = {c.role for c in lib.causes()}
    assert roles == {"initiating", "cascade", "teardown"}


def test_every_built_in_entry_says_what_to_do_with_the_job() -> None:
    """The next action is library data: every entry names its owner, whether a restart can succeed and
    the safe checkpoint (a team's entry may leave it out; then the owner is unknown)."""
    import yaml

    for path in sorted(LIBRARY_DIR.glob("*/*.yaml")):
        data = yaml.safe_load(path.read_text())
        assert {"owner", "restart", "resume"} <= set(data.get("action") or {}), path.name
    lib = load_library()
    hardware = lib.cause("nvidia-xid/" + lib.entry("nvidia-xid").causes[0].id).action
    assert hardware.owner == "hardware" and hardware.restart
    assert lib.cause("nan-loss/nonfinite-loss").action.resume == "before-nonfinite"
    assert lib.cause("iterable-dataset-duplication/not-sharded-per-worker").action.resume == "none"
    # a cause's own answer overrides its entry's
    assert lib.cause("nccl-error/system-error").action.restart and not lib.cause("nccl-error/duplicate-gpu").action.restart


def test_every_fingerprint_has_a_match_and_every_cause_a_near_miss() -> None:
    assert check_fixtures(load_library()) == []


def test_fixture_lines_are_checked_for_real() -> None:
    # The checker itself must catch a broken fixture, or the test above proves nothing.
    lib = load_library()
    entry = lib.entry("dataloader-worker-failure")
    lines = fixture_lines(entry)
    assert any(fl.kind == "no-match" for fl in lines) and any(fl.kind == "match" for fl in lines)
    for fl in lines:
        cause = lib.cause(fl.cause)
        hit = any(re.search(f.regex, fl.text) for f in cause.fingerprints)
        assert hit == (fl.kind == "match"), (fl.path, fl.number)


@pytest.mark.parametrize("backend", ["python", "hyperscan"])
def test_both_matchers_compile_the_library(backend: str) -> None:
    if backend == "hyperscan" and not hyperscan_available():
        pytest.skip("hyperscan is not installed on this platform")
    build_scanner([*library_patterns(load_library()), *STRUCTURE], backend)


@pytest.mark.parametrize(
    ("regex", "problem"),
    [
        (r"foo\sbar", r"\s matches a newline"),
        (r"size [^)]* bytes", "negated class"),
        (r"^RuntimeError", "do not anchor"),
        (r"Killed(?=\.)", "lookarounds"),
        (r"a\nb", "remove the"),
    ],
)
def test_fingerprints_that_could_cross_a_line_are_refused(regex: str, problem: str) -> None:
    found = newline_problem(regex)
    assert found is not None and problem in found
    assert newline_problem(r"size [^)\n]* bytes[ \t]+ok") is None


def _write(tmp_path: Path, body: str, name: str = "demo-entry", category: str = "memory") -> Path:
    folder = tmp_path / category
    folder.mkdir(parents=True, exist_ok=True)
    path = folder / f"{name}.yaml"
    path.write_text(textwrap.dedent(body))
    return path


GOOD = """
id: demo-entry
title: Demo entry
category: memory
summary: A demo entry used to test the schema.
tags: [demo]
affects: [everything]
symptoms: [{symptom: it breaks, why: because}]
confirm: [look at it]
scale: The same at every scale, for this demo.
code: {pytorch: "pass"}
references: [https://example.org/demo]
causes:
  - id: demo-cause
    title: Demo cause
    role: initiating
    mechanism: Something happens, and then something else happens because of it.
    fingerprints: [{id: demo-fp, regex: 'demo failure \\d+', weight: 0.5}]
    fix: [fix it]
    verify: [check it]
    prevention: [avoid it]
"""


def test_schema_accepts_a_good_entry(tmp_path: Path) -> None:
    entry = load_entry(_write(tmp_path, GOOD))
    assert entry.causes[0].full_id == "demo-entry/demo-cause"


@pytest.mark.parametrize(
    ("change", "message"),
    [
        (("role: initiating", "role: sometimes"), "causes.0.role"),
        (("weight: 0.5", "weight: 1.5"), "weight"),
        (("scale: The same at every scale, for this demo.\n", ""), "scale"),
        (("references: [https://example.org/demo]", "references: [example.org]"), "must be a URL"),
        (("id: demo-entry", "id: Demo_Entry"), "kebab-case"),
        (("code: {pytorch: \"pass\"}", "code: {tensorflow: \"pass\"}"), "unknown code keys"),
        (("    prevention: [avoid it]\n", "    prevention: [avoid it]\n    surprise: 1\n"), "surprise"),
    ],
)
def test_schema_refuses_bad_entries_saying_what_to_fix(tmp_path: Path, change: tuple[str, str], message: str) -> None:
    body = textwrap.dedent(GOOD).replace(*change)
    path = _write(tmp_path, body)
    with pytest.raises(LibraryError) as info:
        load_entry(path)
    assert message in str(info.value)
    assert str(info.value).startswith("demo-entry.yaml")


def test_file_name_and_folder_must_match_id_and_category(tmp_path: Path) -> None:
    with pytest.raises(LibraryError, match="must equal the file name"):
        load_entry(_write(tmp_path, GOOD, name="other-name"))
    with pytest.raises(LibraryError, match="must equal its folder"):
        load_entry(_write(tmp_path, GOOD, category="numerics"))


def test_not_yaml_is_refused(tmp_path: Path) -> None:
    with pytest.raises(LibraryError, match="not valid YAML"):
        load_entry(_write(tmp_path, "id: [unclosed\n"))


@pytest.mark.parametrize(("text", "says"), [
    ("causes:\n  nope/none: [1, 1]\n", "unknown cause"),
    ("causes:\n  host-oom/sigkill: [1, 2]\n", "right <= answers"),
    ("raw_map:\n  - [0.9, 0.9]\n  - [0.1, 0.2]\n", "sorted"),
    ("- not a mapping\n", "expected a mapping"),
    ("mistaken:\n  host-oom/sigkill: [3, {nope/none: 2}]\n", "mistaken: host-oom/sigkill"),
    ("mistaken:\n  host-oom/sigkill: [3, {host-oom/oom-killer: 4}]\n", "no more cases than answers"),
])
def test_a_malformed_calibration_file_is_refused_saying_why(tmp_path: Path, text: str, says: str) -> None:
    import shutil

    from trainmedic.catalog import LIBRARY_DIR

    lib = tmp_path / "library"
    shutil.copytree(LIBRARY_DIR, lib)
    (lib / "calibration.yaml").write_text(text)
    with pytest.raises(LibraryError, match=says):
        load_library(lib)


def test_a_cause_read_after_the_finish_and_the_stops_that_name_it_agree() -> None:
    """training-hang/exit-hang has no line of its own: the scheduler's stops name it (finished_as). One
    without the other is refused, so neither can silently stop being read."""
    import dataclasses

    from trainmedic.catalog import _check_links

    lib = load_library()
    hang = lib.cause("training-hang/exit-hang")
    assert hang.after_finish and not hang.fingerprints and hang.lineless
    assert lib.cause("scheduler-termination/time-limit").finished_as == hang.full_id
    entries = list(lib.entries)
    sched = next(e for e in entries if e.id == "scheduler-termination")
    cut = dataclasses.replace(sched, causes=tuple(dataclasses.replace(c, finished_as=None) for c in sched.causes))
    with pytest.raises(LibraryError, match="no cause names it"):
        _check_links([cut if e is sched else e for e in entries])


def test_a_silent_worker_death_and_the_teardown_that_names_it_agree() -> None:
    """launcher-teardown/silent-worker-death has no line of its own: the survivors' teardown names it
    (silent_exit_as) and reads it from its worker_exit lines. One without the other is refused."""
    import dataclasses

    from trainmedic.catalog import _check_links

    lib = load_library()
    silent = lib.cause("launcher-teardown/silent-worker-death")
    survivor = lib.cause("launcher-teardown/sigterm-survivor")
    assert silent.silent_exit and silent.lineless and survivor.silent_exit_as == silent.full_id
    assert any(f.worker_exit for f in survivor.fingerprints)
    entries = list(lib.entries)
    teardown = next(e for e in entries if e.id == "launcher-teardown")
    for cause_id, change, says in (("sigterm-survivor", {"silent_exit_as": None}, "no cause names it"),
                                   ("silent-worker-death", {"silent_exit": False}, "needs silent_exit")):
        cut = dataclasses.replace(teardown, causes=tuple(dataclasses.replace(c, **change) if c.id == cause_id else c
                                                         for c in teardown.causes))
        with pytest.raises(LibraryError, match=says):
            _check_links([cut if e is teardown else e for e in entries])


def test_a_page_says_what_a_cause_without_a_fingerprint_is_read_from() -> None:
    from trainmedic.report.entry import cause_markdown

    lib = load_library()
    for cid, words in (("training-hang/exit-hang", "after the log said training finished"),
                       ("unclassified-failure/metric-anomaly", "turns NaN or Inf")):
        entry, cause = lib.resolve(cid)
        assert cause is not None
        assert words in cause_markdown(entry, cause)
    entry, cause = lib.resolve("host-oom/oom-killer")
    assert cause is not None and "Read without a line" not in cause_markdown(entry, cause)


def test_a_cause_read_inside_another_framework_names_that_cause_and_its_marks_together() -> None:
    """jit-extension-build/build-failed is DeepSpeed's op build where a DeepSpeed op is in sight: the marks
    without the cause they lead to, or a cause that is not in the library, is refused; an entry removed
    (leave one out) takes the link with it."""
    import dataclasses

    from trainmedic.catalog import _check_links
    from trainmedic.evaluate.unknown import without

    lib = load_library()
    build = lib.cause("jit-extension-build/build-failed")
    assert build.inside_as == "deepspeed-failure/op-build-failure" and build.inside_marks
    entries = list(lib.entries)
    jit = next(e for e in entries if e.id == "jit-extension-build")
    for change, says in (({"inside_as": None}, "go together"),
                         ({"inside_as": "deepspeed-failure/no-such-cause"}, "names unknown cause")):
        cut = dataclasses.replace(jit, causes=tuple(dataclasses.replace(c, **change) for c in jit.causes))
        with pytest.raises(LibraryError, match=says):
            _check_links([cut if e is jit else e for e in entries])
    assert without(lib, "deepspeed-failure").cause("jit-extension-build/build-failed").inside_as is None
