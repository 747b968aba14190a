"""The language server over stdio: diagnostics, hover, code actions and commands on a 4-rank log."""

from __future__ import annotations

import time
from collections.abc import AsyncIterator
from pathlib import Path

import pytest

pytest.importorskip("pytest_lsp", reason="the LSP tests need pytest-lsp: pip install 'trainmedic[lsp,test]'")

import pytest_asyncio
import pytest_lsp
from lsprotocol import types as t
from pytest_lsp import ClientServerConfig, LanguageClient

from tests.lsp import logs
from tests.lsp.client import (
    CAPABILITIES,
    SERVER,
    diagnostics,
    execute,
    fix_code_action_parsing,
    open_doc,
    wait_for,
)

pytestmark = pytest.mark.asyncio(loop_scope="module")


@pytest_lsp.fixture(scope="module", config=ClientServerConfig(server_command=SERVER))  # type: ignore[untyped-decorator]
async def client(lsp_client: LanguageClient) -> AsyncIterator[None]:
    fix_code_action_parsing(lsp_client)
    await lsp_client.initialize_session(t.InitializeParams(
        capabilities=CAPABILITIES, initialization_options={"debounceMs": 50}))
    yield
    await lsp_client.shutdown_session()


@pytest.fixture(scope="module")
def log_file(tmp_path_factory: pytest.TempPathFactory) -> Path:
    path = tmp_path_factory.mktemp("lsp") / "ddp-4ranks.log"
    path.write_text(logs.TEXT, encoding="utf-8")
    return path


@pytest_asyncio.fixture(scope="module", loop_scope="module")
async def opened(client: LanguageClient, log_file: Path) -> str:
    uri = log_file.as_uri()
    open_doc(client, uri, logs.TEXT)
    await diagnostics(client, uri)
    return uri


def _line_range(line: int) -> t.Range:
    """trainmedic's 1-based line -> the LSP range covering that line's text (UTF-16 units)."""
    text = logs.LINES[line - 1]
    return t.Range(t.Position(line - 1, 0), t.Position(line - 1, len(text.encode("utf-16-le")) // 2))


async def test_publishes_initiating_and_collateral(client: LanguageClient, opened: str) -> None:
    diags = client.diagnostics[opened]
    errors = [d for d in diags if d.severity == t.DiagnosticSeverity.Error]
    infos = [d for d in diags if d.severity == t.DiagnosticSeverity.Information]
    assert [d.range for d in errors] == [_line_range(n) for n in (logs.BUS_ERROR, logs.KILLED_BY_SIGNAL, logs.EXITED)]
    for d in errors:
        assert d.source == "trainmedic"
        assert d.code == logs.PRIMARY
        assert d.message.startswith(f"{logs.PRIMARY} (rank 2): DataLoader worker failure: /dev/shm too small")
        assert " — fix: " in d.message
    assert [d.range for d in infos] == [_line_range(n) for n in logs.WATCHDOGS.values()]
    for (rank, _), d in zip(logs.WATCHDOGS.items(), infos, strict=True):
        assert d.message == (f"nccl-timeout/watchdog-timeout (rank {rank}): explained by rank 2, "
                             f"line {logs.BUS_ERROR} ({logs.PRIMARY})")
        assert d.related_information is not None
        assert d.related_information[0].location.range == _line_range(logs.BUS_ERROR)
    assert len(diags) == len(errors) + len(infos)  # no missing facts for a confirmed cause


async def test_hover_on_evidence_and_collateral(client: LanguageClient, opened: str) -> None:
    hover = await client.text_document_hover_async(t.HoverParams(
        t.TextDocumentIdentifier(opened), t.Position(logs.BUS_ERROR - 1, 5)))
    assert hover is not None
    assert isinstance(hover.contents, t.MarkupContent)
    assert hover.contents.kind == t.MarkupKind.Markdown
    md = hover.contents.value
    for part in ("/dev/shm too small", "**Mechanism.**", "**Fix**", "**Verify**", "df -h /dev/shm", "rank 2"):
        assert part in md, part
    assert hover.range == _line_range(logs.BUS_ERROR)

    collateral = await client.text_document_hover_async(t.HoverParams(
        t.TextDocumentIdentifier(opened), t.Position(logs.WATCHDOGS[3] - 1, 0)))
    assert collateral is not None
    assert isinstance(collateral.contents, t.MarkupContent)
    assert "Explained by" in collateral.contents.value
    assert f"rank 2, line {logs.BUS_ERROR}" in collateral.contents.value

    nothing = await client.text_document_hover_async(t.HoverParams(
        t.TextDocumentIdentifier(opened), t.Position(0, 0)))
    assert nothing is None


async def test_code_actions_copy_verify_and_open_page(client: LanguageClient, opened: str) -> None:
    diags = [d for d in client.diagnostics[opened] if d.range.start.line == logs.BUS_ERROR - 1]
    actions = await client.text_document_code_action_async(t.CodeActionParams(
        text_document=t.TextDocumentIdentifier(opened),
        range=t.Range(t.Position(logs.BUS_ERROR - 1, 0), t.Position(logs.BUS_ERROR - 1, 0)),
        context=t.CodeActionContext(diagnostics=diags)))
    assert actions
    by_command: dict[str, list[t.CodeAction]] = {}
    for action in actions:
        assert isinstance(action, t.CodeAction)
        assert action.command is not None
        by_command.setdefault(action.command.command, []).append(action)
    copies = by_command["trainmedic.copyVerify"]
    assert copies[0].command is not None
    assert list(copies[0].command.arguments or []) == ["df -h /dev/shm"]
    assert copies[0].kind == t.CodeActionKind.QuickFix
    assert list(copies[0].diagnostics or []) == list(diags)
    pages = by_command["trainmedic.openEncyclopedia"]
    assert [list(a.command.arguments or []) for a in pages if a.command] == [[logs.PRIMARY]]

    # A client that does not run the command itself sends it back: the server shows the text to copy.
    assert await execute(client, "trainmedic.copyVerify", "df -h /dev/shm") == "df -h /dev/shm"
    await wait_for(lambda: next((m for m in client.messages if "df -h /dev/shm" in m.message), None), 5, "message")


async def test_open_page_explains_locally_or_links_the_site(client: LanguageClient, opened: str,
                                                           tmp_path: Path) -> None:
    quiet = await execute(client, "trainmedic.openEncyclopedia", logs.PRIMARY, {"show": False})
    assert quiet["url"] is None  # no site configured: nothing remote is assumed
    assert "/dev/shm" in quiet["text"]
    assert not client.shown_documents

    shown = await execute(client, "trainmedic.openEncyclopedia", logs.PRIMARY)
    assert client.shown_documents[-1].uri == Path(shown["file"]).as_uri()
    assert Path(shown["file"]).read_text(encoding="utf-8") == quiet["text"]

    client.workspace_did_change_configuration(t.DidChangeConfigurationParams(
        settings={"trainmedic": {"siteUrl": str(tmp_path)}}))
    page = f"{tmp_path.as_uri()}/dataloader-worker-failure/index.html#shm-exhausted"
    linked = await execute(client, "trainmedic.openEncyclopedia", logs.PRIMARY)
    assert linked["url"] == page
    assert client.shown_documents[-1].uri == page
    assert client.shown_documents[-1].external
    # diagnostics are republished with the page as the code's link
    diags = await diagnostics(client, opened, check=lambda ds: ds[0].code_description is not None)
    assert diags[0].code_description == t.CodeDescription(href=page)
    client.workspace_did_change_configuration(t.DidChangeConfigurationParams(settings={"trainmedic": {"siteUrl": ""}}))


async def test_diagnose_text_command(client: LanguageClient) -> None:
    selection = "\n".join(logs.RANK2.splitlines()[:9])  # the worker's bus error and its traceback
    result = await execute(client, "trainmedic.diagnoseText", selection)
    assert result["schema"] == "trainmedic.diagnosis/v1"
    assert result["verdict"] == "failure"
    assert result["primary"]["id"] == logs.PRIMARY
    assert result["primary"]["evidence"][0] == {
        "path": "<selection>", "line": 1, "rank": None, "text": logs.RANK2.splitlines()[0]}
    named = await execute(client, "trainmedic.diagnoseText", selection, "rank3.log")
    assert named["primary"]["rank"] == 3  # the name attributes the rank, as a per-rank file would


async def test_edits_are_debounced_and_diagnosed_again(client: LanguageClient, tmp_path: Path) -> None:
    uri = (tmp_path / "edited.log").as_uri()
    open_doc(client, uri, logs.TEXT)
    await diagnostics(client, uri)
    start = time.monotonic()
    for version in range(2, 7):  # five quick edits: one diagnosis after the last
        client.text_document_did_change(t.DidChangeTextDocumentParams(
            t.VersionedTextDocumentIdentifier(uri=uri, version=version),
            [t.TextDocumentContentChangePartial(
                range=t.Range(t.Position(0, 0), t.Position(0, 0)), text=f"[rank0]: note {version}\n")]))
    diags = await diagnostics(client, uri, check=lambda ds: ds[0].range.start.line == logs.BUS_ERROR - 1 + 5)
    assert time.monotonic() - start < 10
    assert {d.range.start.line for d in diags if d.severity == t.DiagnosticSeverity.Error} == {
        n - 1 + 5 for n in (logs.BUS_ERROR, logs.KILLED_BY_SIGNAL, logs.EXITED)}

    client.text_document_did_close(t.DidCloseTextDocumentParams(t.TextDocumentIdentifier(uri)))
    await diagnostics(client, uri, check=lambda ds: len(ds) == 0)


async def test_other_documents_only_when_asked(client: LanguageClient, tmp_path: Path) -> None:
    path = tmp_path / "job-1234.stdout"
    path.write_text(logs.TEXT, encoding="utf-8")
    uri = path.as_uri()
    open_doc(client, uri, logs.TEXT, language_id="plaintext")
    hover = await client.text_document_hover_async(t.HoverParams(
        t.TextDocumentIdentifier(uri), t.Position(logs.BUS_ERROR - 1, 0)))
    assert hover is None
    assert uri not in client.diagnostics
    result = await execute(client, "trainmedic.diagnoseFile", uri)
    assert result["primary"]["id"] == logs.PRIMARY
    diags = await diagnostics(client, uri)
    assert diags[0].range.start.line == logs.BUS_ERROR - 1

    closed = tmp_path / "rank2.log"  # not open: read from disk
    closed.write_text(logs.RANK2 + "\n", encoding="utf-8")
    from_disk = await execute(client, "trainmedic.diagnoseFile", str(closed))
    assert from_disk["primary"]["rank"] == 2
    assert from_disk["inputs"][0]["path"] == str(closed)


async def test_diagnose_file_refuses_a_fifo_instead_of_blocking(client: LanguageClient, tmp_path: Path) -> None:
    """Reading a FIFO would block the server's only worker for good; it is not a log file."""
    import asyncio
    import os

    fifo = tmp_path / "pipe.log"
    os.mkfifo(fifo)
    with pytest.raises(Exception, match="not a regular file"):
        await asyncio.wait_for(execute(client, "trainmedic.diagnoseFile", str(fifo)), timeout=20)
    ok = tmp_path / "rank2.log"  # the server still answers
    ok.write_text(logs.RANK2 + "\n", encoding="utf-8")
    assert (await execute(client, "trainmedic.diagnoseFile", str(ok)))["primary"]["rank"] == 2
