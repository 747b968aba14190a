"""A 100 MB log must not freeze the editor: hovers answer while the diagnosis runs, stale work stops."""

from __future__ import annotations

import time
from collections.abc import AsyncIterator
from pathlib import Path

import pytest

pytest.importorskip("pytest_lsp", reason="the LSP tests need pytest-lsp: pip install 'trainmedic[lsp,test]'")

import pytest_lsp
from lsprotocol import types as t
from pytest_lsp import ClientServerConfig, LanguageClient

from tests.lsp import logs
from tests.lsp.client import CAPABILITIES, SERVER, diagnostics, open_doc, progress_values, server_env, wait_for

pytestmark = [pytest.mark.asyncio(loop_scope="module"), pytest.mark.slow]

FILLER = "[rank{r}]: step {s} loss 1.2345 lr 3.0e-4 grad_norm 0.873 tokens/s 182734 mem 71.2GiB\n"
SIZE = 100 << 20


@pytest.fixture(scope="module")
def big_log(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, str, int]:
    """~100 MB of healthy steps, then the 4-rank failure; returns (path, text, line of the bus error)."""
    path = tmp_path_factory.mktemp("big") / "big-run.log"
    step = "".join(FILLER.format(r=r, s="{s}") for r in range(4))
    n = SIZE // len(step.format(s=100000))
    head = "".join(step.format(s=s) for s in range(n))
    text = head + logs.TEXT
    path.write_text(text, encoding="utf-8")
    return path, text, 4 * n + logs.BUS_ERROR


async def _hover_time(client: LanguageClient, uri: str, line: int) -> tuple[float, t.Hover | None]:
    start = time.monotonic()
    hover = await client.text_document_hover_async(t.HoverParams(t.TextDocumentIdentifier(uri), t.Position(line, 0)))
    return time.monotonic() - start, hover


@pytest_lsp.fixture(scope="module", config=ClientServerConfig(server_command=SERVER))  # type: ignore[untyped-decorator]
async def fast(lsp_client: LanguageClient) -> AsyncIterator[None]:
    await lsp_client.initialize_session(t.InitializeParams(capabilities=CAPABILITIES))
    yield
    await lsp_client.shutdown_session()


# The pure-Python matcher takes ~20 s for 100 MB: long enough to see the server stay responsive.
@pytest_lsp.fixture(scope="module", config=ClientServerConfig(  # type: ignore[untyped-decorator]
    server_command=SERVER, server_env=server_env(TRAINMEDIC_SCANNER="python")))
async def slow(lsp_client: LanguageClient) -> AsyncIterator[None]:
    await lsp_client.initialize_session(t.InitializeParams(capabilities=CAPABILITIES))
    yield
    await lsp_client.shutdown_session()


async def test_hover_answers_while_a_big_log_is_diagnosed(fast: LanguageClient,
                                                          big_log: tuple[Path, str, int]) -> None:
    path, text, bus_error = big_log
    uri = path.as_uri()
    open_doc(fast, uri, text)
    await wait_for(lambda: progress_values(fast, path.name), 20, "the diagnosis to start")
    elapsed, _ = await _hover_time(fast, uri, bus_error - 1)
    assert elapsed < 1.0
    diags = await diagnostics(fast, uri, timeout=40)
    errors = [d for d in diags if d.severity == t.DiagnosticSeverity.Error]
    assert errors[0].range.start.line == bus_error - 1
    assert errors[0].range.end.character == len(logs.LINES[logs.BUS_ERROR - 1])
    elapsed, hover = await _hover_time(fast, uri, bus_error - 1)
    assert hover is not None
    assert isinstance(hover.contents, t.MarkupContent)
    assert "/dev/shm" in hover.contents.value
    values = progress_values(fast, path.name) or []
    assert values[0].message == f"diagnosing {path.name} from disk"  # not the 100 MB copy sent by the client
    assert isinstance(values[-1], t.WorkDoneProgressEnd)
    assert values[-1].message == f"{logs.PRIMARY} (rank 2)"


async def test_stale_diagnosis_is_cancelled_and_hovers_stay_fast(slow: LanguageClient,
                                                                 big_log: tuple[Path, str, int]) -> None:
    path, text, _ = big_log
    uri = path.as_uri()
    open_doc(slow, uri, text)
    await wait_for(lambda: progress_values(slow, path.name), 20, "the diagnosis to start")
    worst = 0.0
    for line in (0, 1000, 50_000):
        elapsed, hover = await _hover_time(slow, uri, line)
        worst = max(worst, elapsed)
        assert hover is not None
        assert isinstance(hover.contents, t.MarkupContent)
        assert hover.contents.value == "trainmedic: diagnosing…"
    assert worst < 1.0
    slow.text_document_did_close(t.DidCloseTextDocumentParams(t.TextDocumentIdentifier(uri)))
    values = await wait_for(
        lambda: ((v := progress_values(slow, path.name)) and isinstance(v[-1], t.WorkDoneProgressEnd) and v) or None,
        10, "the stale diagnosis to stop")
    assert values[-1].message == "cancelled"
    await diagnostics(slow, uri, check=lambda ds: len(ds) == 0)


async def test_an_edit_storm_on_a_big_log_leaves_the_server_answering(fast: LanguageClient,
                                                                      big_log: tuple[Path, str, int]) -> None:
    """500 keystrokes in a 100 MB document: each must cost the edit, not the document (pygls rebuilt
    the whole text per edit on the event loop, ~0.6 s each, and nothing was answered for minutes)."""
    path, text, bus_error = big_log
    uri = f"untitled:storm-{path.name}"  # not on disk: the editor's copy is what gets diagnosed
    open_doc(fast, uri, text)
    for version in range(2, 502):
        line = 10 + version
        fast.text_document_did_change(t.DidChangeTextDocumentParams(
            text_document=t.VersionedTextDocumentIdentifier(uri=uri, version=version),
            content_changes=[t.TextDocumentContentChangePartial(
                range=t.Range(t.Position(line, 0), t.Position(line, 7)), text="[RANKx]")]))
    elapsed, _ = await _hover_time(fast, uri, bus_error - 1)
    assert elapsed < 10.0  # the 500 edits are applied in well under a second
    diags = await diagnostics(fast, uri, timeout=60,
                              check=lambda ds: any(d.severity == t.DiagnosticSeverity.Error for d in ds))
    errors = [d for d in diags if d.severity == t.DiagnosticSeverity.Error]
    assert errors[0].range.start.line == bus_error - 1
