"""Helpers for driving `python -m trainmedic lsp` over stdio with a real client (pytest-lsp).

Test modules import this after `pytest.importorskip("pytest_lsp")`, so a checkout without the
test extras skips them with the reason instead of failing to collect.
"""

from __future__ import annotations

import asyncio
import os
import sys
import time
from collections.abc import Callable, Sequence
from typing import Any, TypeVar, Union, cast

from lsprotocol import types as t
from pytest_lsp import LanguageClient

T = TypeVar("T")

SERVER = [sys.executable, "-m", "trainmedic", "lsp"]

CAPABILITIES = t.ClientCapabilities(
    window=t.WindowClientCapabilities(
        work_done_progress=True,
        show_document=t.ShowDocumentClientCapabilities(support=True),
    ),
    workspace=t.WorkspaceClientCapabilities(configuration=True),
    text_document=t.TextDocumentClientCapabilities(
        hover=t.HoverClientCapabilities(content_format=[t.MarkupKind.Markdown]),
        publish_diagnostics=t.PublishDiagnosticsClientCapabilities(related_information=True),
        code_action=t.CodeActionClientCapabilities(code_action_literal_support=t.ClientCodeActionLiteralOptions(
            code_action_kind=t.ClientCodeActionKindOptions(value_set=[t.CodeActionKind.QuickFix]))),
    ),
)


def fix_code_action_parsing(client: LanguageClient) -> None:
    """lsprotocol's client side reads any code action that carries a `command` as a bare Command, which
    drops a CodeAction's kind and diagnostics; tell them apart by the type of `command` instead."""
    converter = client.protocol._converter

    def hook(obj: Any, _: type) -> t.Command | t.CodeAction:
        kind = t.Command if isinstance(obj.get("command"), str) else t.CodeAction
        return cast("t.Command | t.CodeAction", converter.structure(obj, kind))

    converter.register_structure_hook(Union[t.Command, t.CodeAction], hook)  # noqa: UP007  # the registered key


def server_env(**extra: str) -> dict[str, str]:
    return {**os.environ, **extra}


async def wait_for(probe: Callable[[], T | None], timeout: float, what: str) -> T:
    """Poll `probe` until it returns something; the client records notifications as they come."""
    deadline = time.monotonic() + timeout
    while True:
        value = probe()
        if value is not None:
            return value
        if time.monotonic() > deadline:
            raise AssertionError(f"timed out after {timeout}s waiting for {what}")
        await asyncio.sleep(0.02)


async def diagnostics(client: LanguageClient, uri: str, timeout: float = 20.0,
                      check: Callable[[Sequence[t.Diagnostic]], bool] | None = None) -> Sequence[t.Diagnostic]:
    def probe() -> Sequence[t.Diagnostic] | None:
        found = client.diagnostics.get(uri)
        if found is None or (check is not None and not check(found)):
            return None
        return found

    return await wait_for(probe, timeout, f"diagnostics for {uri}")


def open_doc(client: LanguageClient, uri: str, text: str, language_id: str = "log", version: int = 1) -> None:
    client.text_document_did_open(t.DidOpenTextDocumentParams(
        t.TextDocumentItem(uri=uri, language_id=language_id, version=version, text=text)))


async def execute(client: LanguageClient, command: str, *args: Any) -> Any:
    return await client.workspace_execute_command_async(t.ExecuteCommandParams(command=command, arguments=list(args)))


def progress_values(client: LanguageClient, needle: str) -> list[Any] | None:
    """The progress reports of the diagnosis whose begin message mentions `needle`."""
    # pytest-lsp stores the structured begin/report/end values, whatever its annotation says
    for values in client.progress_reports.values():
        found: list[Any] = list(values)
        if found and isinstance(found[0], t.WorkDoneProgressBegin) and needle in (found[0].message or ""):
            return found
    return None
