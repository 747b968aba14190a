"""Line documents take incremental edits exactly as pygls's own documents do, at the cost of the edit."""

from __future__ import annotations

import random

import pytest

pytest.importorskip("pygls", reason="the LSP tests need pygls: pip install 'trainmedic[lsp,test]'")

from lsprotocol import types as t
from pygls.workspace import PositionCodec
from pygls.workspace.text_document import TextDocument

from trainmedic.lsp.document import LineDocument

ALPHABET = ["a", "b", " ", "\n", "\r\n", "\r", "é", "😋", "x\n", "[rank1]: "]


def _random_text(rng: random.Random, n: int) -> str:
    return "".join(rng.choice(ALPHABET) for _ in range(n))


def _random_position(rng: random.Random, lines: int) -> t.Position:
    return t.Position(line=rng.randint(0, lines + 1), character=rng.randint(0, 12))


@pytest.mark.parametrize("encoding", [t.PositionEncodingKind.Utf16, t.PositionEncodingKind.Utf8,
                                      t.PositionEncodingKind.Utf32])
def test_random_edits_give_the_same_text_as_pygls(encoding: t.PositionEncodingKind) -> None:
    rng = random.Random(f"edits-{encoding}")
    for _ in range(150):
        start = _random_text(rng, rng.randint(0, 30))
        codec = PositionCodec(encoding=encoding)
        ours = LineDocument("file:///x.log", source=start, position_codec=codec)
        theirs = TextDocument("file:///x.log", source=start, position_codec=PositionCodec(encoding=encoding))
        for _ in range(12):
            n = len(theirs.lines)
            a, b = _random_position(rng, n), _random_position(rng, n)
            if (a.line, a.character) > (b.line, b.character):
                a, b = b, a
            text = _random_text(rng, rng.randint(0, 4))
            before = theirs.source
            theirs.apply_change(t.TextDocumentContentChangePartial(
                range=t.Range(t.Position(a.line, a.character), t.Position(b.line, b.character)), text=text))
            ours.apply_change(t.TextDocumentContentChangePartial(
                range=t.Range(t.Position(a.line, a.character), t.Position(b.line, b.character)), text=text))
            assert ours.source == theirs.source, (before, a, b, text)
            assert list(ours.lines) == list(theirs.lines), (before, a, b, text)
            assert list(ours.lines) == list(theirs.lines)


def test_a_full_change_replaces_the_text() -> None:
    doc = LineDocument("file:///x.log", source="a\nb\n")
    doc.apply_change(t.TextDocumentContentChangePartial(range=t.Range(t.Position(1, 0), t.Position(1, 1)), text="c"))
    doc.apply_change(t.TextDocumentContentChangeWholeDocument(text="whole\n"))
    assert doc.source == "whole\n"
    assert list(doc.lines) == ["whole\n"]


def test_an_edit_touches_only_its_lines() -> None:
    """The cost of an edit: the lines list is edited in place and the text is not joined again."""
    lines = [f"step {i} loss 1.0\n" for i in range(200_000)]
    doc = LineDocument("file:///x.log", source="".join(lines))
    stored = doc.lines
    for i in range(500):
        doc.apply_change(t.TextDocumentContentChangePartial(
            range=t.Range(t.Position(1000 + i, 0), t.Position(1000 + i, 4)), text="STEP"))
    assert doc.lines is stored  # the same list, edited in place: no per-edit rebuild of 200,000 lines
    assert doc._source is not None and doc._source.count("STEP") == 0  # not joined per edit
    assert doc.source.count("STEP") == 500
    assert doc.lines[1499] == "STEP 1499 loss 1.0\n"
