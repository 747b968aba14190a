"""The JSON API and the pages, in-process with FastAPI's TestClient."""

from __future__ import annotations

import gzip
import io
import json
import re
import xml.etree.ElementTree as ET
from pathlib import Path
from typing import Any

import pytest
import zstandard

from tests.conftest import FIXTURES
from tests.web.conftest import match_line

LAB = FIXTURES / "lab"
SCHEMA = "trainmedic.diagnosis/v1"


def lab_files(case: str) -> list[tuple[str, bytes]]:
    manifest = {c["case"]: c for c in json.loads((LAB / "manifest.json").read_text())}
    return [(rel.split("/", 1)[1], (LAB / rel).read_bytes()) for rel in manifest[case]["files"]]


def test_diagnose_pasted_text_returns_the_cli_schema_and_stores_it(client: Any, library: Any) -> None:
    from trainmedic.api import diagnose

    line = match_line(library, "dataloader-worker-failure/shm-exhausted")
    r = client.post("/api/diagnose", json={"text": f"epoch 1 step 10\n{line}\n"})
    assert r.status_code == 200, r.text
    body = r.json()
    d = body["diagnosis"]
    assert d["schema"] == SCHEMA
    assert d["primary"]["id"] == "dataloader-worker-failure/shm-exhausted"
    assert d["primary"]["evidence"][0]["line"] == 2
    # the same verdict as the core API on the same text
    assert diagnose(f"epoch 1 step 10\n{line}\n").to_json()["primary"]["id"] == d["primary"]["id"]
    assert body["url"] == f"/d/{body['id']}"
    stored = client.get(f"/api/diagnoses/{body['id']}").json()
    assert stored["diagnosis"] == d
    assert stored["id"] == body["id"]


def test_plain_text_body_and_store_false(client: Any, library: Any) -> None:
    line = match_line(library, "cuda-out-of-memory/allocator-oom")
    r = client.post("/api/diagnose?store=false", content=line.encode(), headers={"content-type": "text/plain"})
    assert r.status_code == 200, r.text
    assert r.json()["id"] is None
    assert r.json()["diagnosis"]["primary"]["id"] == "cuda-out-of-memory/allocator-oom"
    assert client.get("/api/diagnoses").json()["items"] == []


def test_multi_file_upload_with_gzip_and_zstd_attributes_ranks(client: Any) -> None:
    """torchrun --log-dir files, some compressed: the failing rank comes from the file path."""
    files = lab_files("ddp-worker-crash-logdir")
    parts = []
    for i, (name, data) in enumerate(files):
        if name.endswith("2/stderr.log"):
            parts.append(("files", (name + ".gz", gzip.compress(data), "application/gzip")))
        elif i % 3 == 1:
            parts.append(("files", (name, zstandard.ZstdCompressor().compress(data), "application/zstd")))
        else:
            parts.append(("files", (name, data, "text/plain")))
    r = client.post("/api/diagnose", files=parts)
    assert r.status_code == 200, r.text
    d = r.json()["diagnosis"]
    assert d["primary"]["id"] == "dataloader-worker-failure/worker-oom"
    assert d["primary"]["rank"] == 2
    assert d["primary"]["evidence"][0]["path"].endswith("/2/stderr.log.gz")
    assert {c["rank"] for c in d["collateral"]} >= {1, 3}
    assert len(d["inputs"]) == len(files)


def test_reduced_lines_keep_their_original_line_numbers(client: Any, library: Any) -> None:
    oom = match_line(library, "cuda-out-of-memory/allocator-oom")
    lines = [[1, "[rank0]: step 1 loss 0.5"], [2, "[rank1]: step 1 loss 0.5"],
             [81230, "[rank1]: Traceback (most recent call last):"],
             [81231, '[rank1]:   File "train.py", line 3, in <module>'],
             [81232, f"[rank1]: {oom}"], [2_000_000, "[rank0]: step 99 loss 0.1"]]
    r = client.post("/api/diagnose", json={"files": [{"name": "train.log", "lines": lines, "total_lines": 2_000_000,
                                                      "bytes": 200_000_000}]})
    assert r.status_code == 200, r.text
    d = r.json()["diagnosis"]
    assert d["primary"]["id"] == "cuda-out-of-memory/allocator-oom"
    assert d["primary"]["rank"] == 1
    assert d["primary"]["evidence"][0]["line"] == 81232
    assert d["inputs"][0]["lines"] == 2_000_000
    assert any("reduced in the browser" in n for n in d["notes"])
    page = client.get(r.json()["url"]).text
    assert "81232" in page and "rank 1 failed first" in page.lower()


@pytest.mark.parametrize("lines, message", [
    ([[3, "a"], [2, "b"]], "increasing"),
    ([[0, "a"]], "positive"),
    ([[1, "a\nb"]], "newline"),
])
def test_bad_reduced_lines_are_refused_with_a_clear_message(client: Any, lines: Any, message: str) -> None:
    r = client.post("/api/diagnose", json={"files": [{"name": "x.log", "lines": lines}]})
    assert r.status_code == 422
    assert message in r.json()["detail"]


def test_a_file_needs_exactly_one_body(client: Any) -> None:
    r = client.post("/api/diagnose", json={"files": [{"name": "x.log", "text": "a", "lines": [[1, "a"]]}]})
    assert r.status_code == 422
    assert "exactly one" in r.json()["detail"]


def test_empty_and_binary_inputs_are_400(client: Any) -> None:
    assert client.post("/api/diagnose", json={"text": "  \n"}).status_code == 400
    r = client.post("/api/diagnose", files=[("files", ("model.pt", bytes(range(256)) * 400, "application/octet-stream"))])
    assert r.status_code == 400
    assert "binary" in r.json()["detail"]


def test_upload_cap_is_a_clear_413(app_factory: Any) -> None:
    from fastapi.testclient import TestClient

    with TestClient(app_factory(max_upload_bytes=64 * 1024)) as c:
        big = b"x" * (65 * 1024)
        r = c.post("/api/diagnose", files=[("files", ("big.log", big, "text/plain"))])
        assert r.status_code == 413
        assert "upload too large" in r.json()["detail"]
        assert "--max-upload-mb" in r.json()["detail"]

        def chunks() -> Any:  # no content-length: the cap is counted as the body streams in
            for _ in range(20):
                yield b"y" * 8192

        r = c.post("/api/diagnose", content=chunks(), headers={"content-type": "text/plain"})
        assert r.status_code == 413
        # below the cap still works
        assert c.post("/api/diagnose", content=b"step 1\n", headers={"content-type": "text/plain"}).status_code == 200


def test_a_compression_bomb_is_refused(app_factory: Any) -> None:
    from fastapi.testclient import TestClient

    bomb = gzip.compress(b"step 1 loss 0.5\n" * (1 << 20))  # 16 MiB of text in a few KB
    with TestClient(app_factory(max_upload_bytes=1 << 20)) as c:  # decoded cap: 10 MiB
        r = c.post("/api/diagnose", files=[("files", ("bomb.log.gz", bomb, "application/gzip"))])
    assert r.status_code == 413
    assert "decode to more than" in r.json()["detail"]


def test_script_in_a_log_is_escaped_everywhere(client: Any, library: Any) -> None:
    evil = '<script>window.__pwned = 1</script><img src=x onerror="alert(1)">'
    line = match_line(library, "dataloader-worker-failure/shm-exhausted")
    r = client.post("/api/diagnose", json={"files": [
        {"name": '<script>alert("name")</script>.log', "text": f"{evil}\n{line} {evil}\n"}]})
    assert r.status_code == 200, r.text
    rid = r.json()["id"]
    html = client.get(f"/d/{rid}").text
    assert "<script>window.__pwned" not in html
    assert "&lt;script&gt;window.__pwned" in html
    assert '<script>alert("name")' not in html
    assert '<img src=x' not in html
    svg = client.get(f"/d/{rid}/timeline.svg").text
    assert "<script" not in svg
    ET.fromstring(svg)  # well-formed XML whatever the log held
    history = client.get("/history", params={"q": "script"}).text
    assert "<script>alert" not in history
    md = client.get(f"/d/{rid}/report.md").text
    assert "window.__pwned" in md  # markdown is text/markdown, served as text


def test_pages_send_a_strict_content_security_policy(client: Any) -> None:
    r = client.get("/")
    csp = r.headers["content-security-policy"]
    assert "script-src 'self'" in csp and "unsafe-inline" not in csp and "default-src 'none'" in csp
    assert r.headers["x-content-type-options"] == "nosniff"
    assert "<script src=\"/static/app.js\"" in r.text
    assert "http://" not in r.text.replace("http://HOST", "") and "https://" not in r.text  # no external assets


def test_history_search_by_id_finding_verdict_and_date(client: Any, library: Any) -> None:
    oom = match_line(library, "cuda-out-of-memory/allocator-oom")
    shm = match_line(library, "dataloader-worker-failure/shm-exhausted")
    a = client.post("/api/diagnose", json={"files": [{"name": "rank3.log", "text": oom}]}).json()["id"]
    b = client.post("/api/diagnose", json={"files": [{"name": "worker.log", "text": shm}]}).json()["id"]
    c = client.post("/api/diagnose", json={"text": "epoch 1 step 1 loss 0.3\nTraining completed\n"}).json()["id"]

    def ids(**params: str) -> list[str]:
        r = client.get("/api/diagnoses", params=params)
        assert r.status_code == 200, r.text
        return [i["id"] for i in r.json()["items"]]

    assert set(ids()) == {a, b, c}
    assert ids(q="cuda-out-of-memory") == [a]
    assert ids(q="rank3.log") == [a]
    assert ids(q=b[:6]) == [b]
    assert ids(verdict="healthy") == [c]
    assert set(ids(verdict="failure")) == {a, b}
    assert set(ids(since="2000-01-01")) == {a, b, c}
    assert ids(since="2999-01-01") == []
    assert ids(q="100%_") == []  # LIKE wildcards are literal
    assert client.get("/api/diagnoses", params={"since": "yesterday"}).status_code == 422
    assert client.get("/api/diagnoses", params={"verdict": "exploded"}).status_code == 422
    page = client.get("/history", params={"q": "rank3"}).text
    assert f"/d/{a}" in page and f"/d/{b}" not in page


def test_unknown_record_is_404(client: Any) -> None:
    assert client.get("/api/diagnoses/0123456789ab").status_code == 404
    assert client.get("/api/diagnoses/../../etc/passwd").status_code == 404
    r = client.get("/d/nope")
    assert r.status_code == 404 and "No diagnosis" in r.text


def test_library_endpoint_serves_entries_and_the_prefilter(client: Any, library: Any) -> None:
    from trainmedic.scan.keywords import keywords

    data = client.get("/api/library").json()
    words = keywords(library)
    assert data["keywords"] == [w for w in words if w]
    assert data["keep_every_line"] is ("" in words)
    assert {e["id"] for e in data["entries"]} == {e.id for e in library}
    causes = {c["id"]: c for e in data["entries"] for c in e["causes"]}
    assert causes["launcher-teardown/sigterm-survivor"]["role"] == "teardown"
    assert data["progress"]
    # every fixture match line contains a keyword: the prefilter never drops evidence
    from trainmedic.fixtures import fixture_lines

    if not data["keep_every_line"]:
        for e in library:
            for fl in fixture_lines(e):
                if fl.kind == "match" and not library.cause(fl.cause).tail_only:  # tail words: see keywords()
                    assert any(w in fl.text for w in data["keywords"]), (fl.cause, fl.text)


def test_library_endpoint_hands_the_page_the_rank_prefixes_of_the_reader(client: Any) -> None:
    """The reducer in the browser keeps no copy of its own: the prefixes are logs/attribution.py's."""
    import re

    from trainmedic.logs import attribution

    prefixes = client.get("/api/library").json()["prefixes"]
    for rx in (attribution._HOST_PREFIX, *attribution._RANK_PREFIXES):
        assert rx.pattern in prefixes["line"]
    assert prefixes["rank_in_text"] == attribution._RANK_IN_TEXT.pattern
    line, host = re.compile(prefixes["line"]), re.compile(prefixes["host"])
    not_host = re.compile(prefixes["not_host"])
    for text, key in [("node-1: [rank3]: Traceback", "node-1: [rank3]:"), ("[1,4]<stderr>: x", "[1,4]<stderr>:"),
                      ("[rank: 2] x", "[rank: 2]"), ("  12: x", "12:"), ("plain line", "")]:
        m = line.match(text)
        assert m is not None and m.group(0).strip() == key, text
        assert attribution.split_prefix(text).rest == text[m.end():], text  # what the reader strips
    m = host.match("gpu-node-7: [rank0]: x")
    assert m is not None and m.group(1) == attribution.split_prefix("gpu-node-7: x").host == "gpu-node-7"
    assert not_host.match("rank3") and not not_host.match("node3")


def test_samples_are_generated_and_diagnose_as_expected(client: Any) -> None:
    listed = client.get("/api/samples").json()["samples"]
    ids = {s["id"] for s in listed}
    assert any(i.startswith("entry-") for i in ids)
    if (LAB / "manifest.json").exists():
        assert "lab-ddp-worker-crash-logdir" in ids
        sample = client.get("/api/samples/lab-ddp-worker-crash-logdir").json()
        r = client.post("/api/diagnose?store=false", json={"files": sample["files"]})
        assert r.json()["diagnosis"]["primary"]["rank"] == 2
    entry = client.get("/api/samples/entry-cuda-out-of-memory").json()
    r = client.post("/api/diagnose?store=false", json={"files": entry["files"]})
    assert r.json()["diagnosis"]["primary"]["id"].startswith("cuda-out-of-memory/")
    assert client.get("/api/samples/..%2Fmanifest.json").status_code == 404


def test_openapi_and_docs_are_served_without_a_cdn(client: Any) -> None:
    spec = client.get("/openapi.json").json()
    assert {"/api/diagnose", "/api/diagnoses/{rid}", "/api/diagnoses", "/api/library"} <= set(spec["paths"])
    body = spec["paths"]["/api/diagnose"]["post"]["requestBody"]["content"]
    assert {"application/json", "multipart/form-data", "text/plain"} <= set(body)
    refs = set(re.findall(r'"\$ref": "#/components/schemas/([^"]+)"', json.dumps(spec)))
    assert {"DiagnoseIn", "FileIn", "DiagnoseOut"} <= refs <= set(spec["components"]["schemas"])
    docs = client.get("/docs").text
    assert "/api/diagnose" in docs and "cdn" not in docs.lower()


def test_static_assets_come_from_package_data_only(client: Any) -> None:
    assert client.get("/static/app.js").headers["content-type"].startswith("text/javascript")
    assert client.get("/static/reducer.js").status_code == 200
    for probe in ("/static/..%2F..%2Fapp.py", "/static/../app.py", "/static/%2e%2e/app.py", "/static/app.py"):
        assert client.get(probe).status_code == 404, probe


def test_cross_origin_form_posts_are_refused(client: Any) -> None:
    r = client.post("/api/diagnose", data={"text": "step 1"}, headers={"origin": "https://evil.example"})
    assert r.status_code == 403


def test_diagnosis_page_shows_the_answer_first(client: Any) -> None:
    files = [{"name": n, "text": d.decode()} for n, d in lab_files("ddp-rank-raises")]
    rid = client.post("/api/diagnose", json={"files": files}).json()["id"]
    html = client.get(f"/d/{rid}").text
    head = html.split('id="headline"', 1)[1][:200]
    assert "Rank 1 failed first" in head
    assert 'href="/library/checkpoint-load-mismatch/state-dict-mismatch/"' in html
    assert 'data-copy="verify-1"' in html and 'data-copy="report-md"' in html
    assert "Collateral" in html and "rank 0" in html
    svg = html.split("<svg", 1)[1].split("</svg>", 1)[0]
    assert "rank 1 · failed first" in svg


def test_collateral_rows_quote_their_lines_kept_once(client: Any) -> None:
    """Each collateral row shows its line as sent; the record keeps that text once (in the timeline marks)."""
    from markupsafe import escape

    files = [{"name": n, "text": d.decode()} for n, d in lab_files("ddp-rank-raises")]
    rid = client.post("/api/diagnose", json={"files": files}).json()["id"]
    rec = client.app.state.store.get(rid)
    assert set(rec.extra) == {"context", "marks", "sent"}
    collateral = rec.diagnosis["collateral"]
    assert collateral
    lines = {f["name"]: f["text"].splitlines() for f in files}
    html = client.get(f"/d/{rid}").text
    for c in collateral:
        text = lines[c["path"]][c["line"] - 1][:300]
        assert text and f'<td class="text" data-label="line">{escape(text)}</td>' in html, c


def test_markdown_report_is_the_cli_renderer(client: Any, library: Any) -> None:
    from trainmedic.api import diagnose
    from trainmedic.report import FORMATS

    text = match_line(library, "cuda-out-of-memory/allocator-oom") + "\n"
    rid = client.post("/api/diagnose", json={"files": [{"name": "<text>", "text": text}]}).json()["id"]
    buf = io.StringIO()
    FORMATS["markdown"](diagnose(text), buf, False)
    assert client.get(f"/d/{rid}/report.md").text == buf.getvalue()


def test_encyclopedia_pages_are_mounted(client: Any, library: Any) -> None:
    from markupsafe import escape

    r = client.get("/library/")
    assert r.status_code == 200
    first = next(iter(library))
    page = client.get(f"/library/{first.id}/")
    assert page.status_code == 200 and first.title.split(":")[0] in page.text
    cause = first.causes[0]
    r = client.get(f"/library/{first.id}/{cause.id}/", follow_redirects=False)  # a cause has its own page
    assert r.status_code == 200 and f"<h1>{escape(cause.title)}</h1>" in r.text and '<nav class="app-nav"' in r.text
    assert client.get("/library/no-such-entry/").status_code == 404


def test_encyclopedia_assets_are_served(client: Any) -> None:
    from trainmedic.web.encyclopedia import site_assets

    for name in site_assets():
        assert client.get(f"/library/_static/{name}").status_code == 200
    assert client.get("/library/_static/..%2Fbuild.py").status_code == 404


def test_encyclopedia_fallback_without_the_site_builder(client: Any, library: Any) -> None:
    from trainmedic.web.encyclopedia import site_available

    if site_available():
        pytest.skip("the site builder is installed; its pages are served (see the test above)")
    first = next(iter(library))
    page = client.get(f"/library/{first.id}/").text
    assert first.causes[0].title in page


def test_trusted_hosts_refuse_dns_rebinding(app_factory: Any) -> None:
    from fastapi.testclient import TestClient

    with TestClient(app_factory(allowed_hosts=("127.0.0.1", "localhost")), base_url="http://127.0.0.1") as c:
        assert c.get("/").status_code == 200
        assert c.get("/", headers={"host": "attacker.example"}).status_code == 400


def test_history_db_defaults_under_the_data_dir(tmp_path: Path) -> None:
    from trainmedic.web.store import default_url

    assert default_url({"XDG_DATA_HOME": str(tmp_path)}) == f"sqlite:///{tmp_path}/trainmedic/history.db"
    assert default_url({"TRAINMEDIC_DATA_DIR": str(tmp_path / "d")}).endswith("/d/history.db")


def test_a_silent_or_missing_rank_is_named_as_the_suspect(client: Any) -> None:
    files = [{"name": n, "text": d.decode()} for n, d in lab_files("ddp-worker-crash-missing-rank") if d]
    body = client.post("/api/diagnose", json={"files": files}).json()
    p = body["diagnosis"]["primary"]
    if p["rank"] == p["evidence"][0]["rank"]:
        pytest.skip("the engine now finds an initiating failure in these logs")
    html = client.get(body["url"]).text
    assert f"Rank {p['rank']} is the suspect" in html
    assert f"rank {p['rank']} · suspect (silent)" in html


def test_the_page_says_where_the_job_was_when_it_stopped(client: Any, library: Any) -> None:
    line = match_line(library, "dataloader-worker-failure/shm-exhausted")
    text = f"step 1200 loss 0.5\n***** Running Evaluation *****\n{line}\n"
    body = client.post("/api/diagnose", json={"text": text}).json()
    assert body["diagnosis"]["phase"]["name"] == "evaluation"
    page = client.get(body["url"]).text
    assert "Stopped during evaluation at step 1,200." in page


def test_the_encyclopedia_opens_inside_the_app(client: Any) -> None:
    """Under `trainmedic serve` the encyclopedia keeps the app's navigation, and its "diagnose your log"
    box sends the reader to the app's Diagnose page instead of a command line."""
    for url in ("/library/", "/library/dataloader-worker-failure/"):
        page = client.get(url).text
        assert '<nav class="app-nav"' in page and 'href="/history"' in page
        assert "Diagnose page" in page and "trainmedic diagnose PATH" not in page
