"""The history store, on SQLite and on a real PostgreSQL server, through the same code path."""

from __future__ import annotations

import datetime as dt
import threading
import uuid
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from tests.web.conftest import match_line

pytestmark = pytest.mark.xdist_group("web-postgres")  # one throwaway server for the whole module


@pytest.fixture(params=["sqlite", "postgresql"])
def db_url(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[str]:
    if request.param == "sqlite":
        yield f"sqlite:///{tmp_path / 'nested' / 'history.db'}"
        return
    base: str = request.getfixturevalue("pg_url")
    # a schema of our own per test: parallel tests on one server never see each other's rows
    import sqlalchemy as sa

    schema = f"t_{uuid.uuid4().hex[:12]}"
    engine = sa.create_engine(base)
    with engine.begin() as conn:
        conn.execute(sa.text(f'CREATE SCHEMA "{schema}"'))
    sep = "&" if "?" in base else "?"
    try:
        yield f"{base}{sep}options=-csearch_path%3D{schema}"
    finally:
        with engine.begin() as conn:
            conn.execute(sa.text(f'DROP SCHEMA "{schema}" CASCADE'))
        engine.dispose()


def _diagnosis(primary_id: str | None, verdict: str = "failure", title: str = "T") -> dict[str, Any]:
    primary = {"id": primary_id, "title": title, "rank": 3, "evidence": []} if primary_id else None
    return {"schema": "trainmedic.diagnosis/v1", "verdict": verdict, "primary": primary, "alternatives": [],
            "collateral": [], "inputs": [], "progress": [], "facts": [], "notes": []}


def test_add_get_search(db_url: str) -> None:
    from trainmedic.web.store import Store

    store = Store(db_url)
    store.create()
    store.create()  # idempotent
    a = store.add(_diagnosis("cuda-out-of-memory/allocator-oom", title="50% of 'quotes' \\ _x"), {"marks": []},
                  ["rank3.log"])
    b = store.add(_diagnosis(None, "healthy"), {"marks": []}, ["ok.log"])
    got = store.get(a.id)
    assert got is not None
    assert got.diagnosis["primary"]["id"] == "cuda-out-of-memory/allocator-oom"
    assert got.extra == {"marks": []}
    assert store.get("ffffffffffff") is None
    assert [r.id for r in store.search("allocator")] == [a.id]
    assert [r.id for r in store.search("50% of 'quotes' \\ _x")] == [a.id]  # quotes, %, _ and \ are data
    assert store.search("50%%") == []
    assert store.search("'; DROP TABLE trainmedic_diagnoses; --") == []
    assert [r.id for r in store.search(verdict="healthy")] == [b.id]
    assert {r.id for r in store.search(since=dt.datetime(2000, 1, 1))} == {a.id, b.id}
    assert store.search(since=dt.datetime.now(dt.timezone.utc) + dt.timedelta(days=1)) == []
    assert {r.id for r in store.search(until=dt.datetime.now() + dt.timedelta(days=1))} == {a.id, b.id}
    assert len(store.search(limit=1)) == 1
    store.dispose()


def test_concurrent_writes(db_url: str) -> None:
    from trainmedic.web.store import Store

    store = Store(db_url)
    store.create()
    errors: list[BaseException] = []

    def write() -> None:
        try:
            for _ in range(5):
                store.add(_diagnosis("x/y"), {}, ["a.log"])
        except BaseException as exc:  # pragma: no cover - reported below
            errors.append(exc)

    threads = [threading.Thread(target=write) for _ in range(4)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert not errors
    assert len(store.search(limit=200)) == 20
    store.dispose()


def test_the_app_keeps_its_history_in_the_database(db_url: str, library: Any) -> None:
    from fastapi.testclient import TestClient

    from trainmedic.web.app import Settings, create_app

    line = match_line(library, "dataloader-worker-failure/shm-exhausted")
    with TestClient(create_app(Settings(db_url=db_url, library=library))) as c:
        r = c.post("/api/diagnose", json={"files": [{"name": "rank5.log", "text": f"step 3\n{line}\n"}]})
        assert r.status_code == 200, r.text
        rid = r.json()["id"]
        assert c.get(f"/api/diagnoses/{rid}").json()["diagnosis"] == r.json()["diagnosis"]
        items = c.get("/api/diagnoses", params={"q": "rank5"}).json()["items"]
        assert [i["id"] for i in items] == [rid]
        assert items[0]["rank"] == 5
        assert "rank 5 failed first" in c.get(f"/d/{rid}").text.lower()


def test_only_what_was_selected_is_stored(tmp_path: Path, library: Any) -> None:
    """The raw upload never reaches the database: only the diagnosis, context lines and marks."""
    import sqlite3

    from fastapi.testclient import TestClient

    from trainmedic.web.app import Settings, create_app

    db = tmp_path / "h.db"
    filler = "".join(f"[rank0]: step {i} unrelated-filler-{i:06d}\n" for i in range(5000))
    line = match_line(library, "dataloader-worker-failure/shm-exhausted")
    with TestClient(create_app(Settings(db_url=f"sqlite:///{db}", library=library))) as c:
        assert c.post("/api/diagnose", json={"files": [{"name": "r.log", "text": filler + line + "\n" + filler}]}
                      ).status_code == 200
    dump = "\n".join(sqlite3.connect(db).iterdump())
    assert "unrelated-filler-002500" not in dump  # far from the evidence: not kept
    assert "unrelated-filler-004999" in dump  # context right above the evidence line
    assert len(dump) < 60_000


def test_unsupported_urls_say_what_works() -> None:
    from trainmedic.web.store import Store, StoreError

    with pytest.raises(StoreError, match="sqlite:///PATH"):
        Store("mysql://u:p@h/db")


def test_unreachable_postgres_is_one_line() -> None:
    pytest.importorskip("psycopg")
    from trainmedic.web.store import Store, StoreError

    store = Store("postgresql://nobody:x@127.0.0.1:1/none?connect_timeout=2")
    assert store.url.startswith("postgresql+psycopg://")
    with pytest.raises(StoreError, match="cannot open the history database") as info:
        store.create()
    assert "\n" not in str(info.value)


def test_the_fleet_table_lives_beside_the_history(db_url: str) -> None:
    """`trainmedic fleet` stores its rows in the same database as serve: SQLite or PostgreSQL alike."""
    from trainmedic.fleet.report import summarise
    from trainmedic.fleet.store import FleetStore

    store = FleetStore(db_url)
    store.create()
    row = {"job": "jobs/a", "signature": "s1", "verdict": "failure", "primary_id": "nvidia-xid/fallen-off-bus",
           "host": "node-17", "rank": 3, "gpu": "GPU 3", "hosts": "node-16,node-17", "ranks": 16, "started": 1.0e9,
           "failed": 1.0e9 + 3600, "gpu_hours": 16.0, "template": None, "error": None,
           "diagnosis": _diagnosis("nvidia-xid/fallen-off-bus")}
    try:
        assert store.put([row, {**row, "job": "jobs/b", "verdict": "healthy", "primary_id": None, "host": None,
                                "gpu_hours": None}]) == 2
        assert store.put([{**row, "signature": "s2"}]) == 1  # a job read again replaces its row
        assert store.signatures() == {"jobs/a": "s2", "jobs/b": "s1"}
        s = summarise(store.rows())
        assert (s["jobs"], s["failed"], s["gpu_hours_lost"]) == (2, 1, 16.0)
        assert s["hosts"][0]["host"] == "node-17" and s["hosts"][0]["gpus"] == {"GPU 3": 1}
    finally:
        store.dispose()
