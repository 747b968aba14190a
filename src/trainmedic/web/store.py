"""The history of past diagnoses: one table, SQLite by default, PostgreSQL by URL, one code path.

Only what the diagnosis selected is kept (its JSON, the context lines around its evidence and the
timeline marks), never the upload itself. Every statement is built with SQLAlchemy Core, so values
always travel as bound parameters.
"""

from __future__ import annotations

import datetime as dt
import os
import secrets
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import sqlalchemy as sa

VERDICTS = ("failure", "hang", "healthy")
MAX_LIMIT = 200

_meta = sa.MetaData()

diagnoses = sa.Table(
    "trainmedic_diagnoses",
    _meta,
    sa.Column("id", sa.String(32), primary_key=True),
    sa.Column("created", sa.DateTime(), nullable=False, index=True),  # naive UTC: same on both engines
    sa.Column("verdict", sa.String(16), nullable=False, index=True),
    sa.Column("primary_id", sa.String(300), nullable=True, index=True),
    sa.Column("title", sa.Text(), nullable=True),
    sa.Column("rank", sa.Integer(), nullable=True),
    sa.Column("inputs", sa.Text(), nullable=False),  # the input names, for search
    sa.Column("diagnosis", sa.JSON(), nullable=False),  # trainmedic.diagnosis/v1, as returned
    sa.Column("extra", sa.JSON(), nullable=False),  # context lines, timeline marks, what was sent
)


class StoreError(ValueError):
    """A database URL that cannot be used; the message says which forms work."""


@dataclass(frozen=True)
class Record:
    id: str
    created: dt.datetime
    verdict: str
    primary_id: str | None
    title: str | None
    rank: int | None
    inputs: str
    diagnosis: dict[str, Any]
    extra: dict[str, Any]

    def summary(self) -> dict[str, Any]:
        return {
            "id": self.id,
            "created": iso(self.created),
            "verdict": self.verdict,
            "primary_id": self.primary_id,
            "title": self.title,
            "rank": self.rank,
            "inputs": self.inputs,
        }


def iso(t: dt.datetime) -> str:
    return t.replace(tzinfo=dt.timezone.utc).isoformat(timespec="seconds").replace("+00:00", "Z")


def default_data_dir(environ: Mapping[str, str]) -> Path:
    """Where the history lives when no --db is given (XDG rules, overridable for tests)."""
    if environ.get("TRAINMEDIC_DATA_DIR"):
        return Path(environ["TRAINMEDIC_DATA_DIR"])
    base = environ.get("XDG_DATA_HOME") or str(Path(environ.get("HOME") or Path.home()) / ".local" / "share")
    return Path(base) / "trainmedic"


def normalise_url(url: str) -> str:
    """Accept `sqlite:///PATH` and PostgreSQL URLs; plain `postgresql://` means the psycopg 3 driver."""
    if url.startswith(("postgresql://", "postgres://")):
        return "postgresql+psycopg://" + url.split("://", 1)[1]
    if url.startswith(("sqlite://", "postgresql+psycopg://")):
        return url
    raise StoreError(
        f"unsupported database URL {url.split('://', 1)[0] + '://' if '://' in url else url!r}: "
        "use sqlite:///PATH or postgresql+psycopg://USER:PASSWORD@HOST:PORT/DB"
    )


class Store:
    """Thread-safe: the engine's pool hands each request its own connection."""

    def __init__(self, url: str) -> None:
        url = normalise_url(url)
        kwargs: dict[str, Any] = {"future": True}
        if url.startswith("sqlite:"):
            path = sa.engine.make_url(url).database
            if path and path != ":memory:":
                try:
                    Path(path).expanduser().parent.mkdir(parents=True, exist_ok=True)
                except OSError as exc:
                    raise StoreError(f"cannot create the folder for the history database {path}: "
                                     f"{exc.strerror or exc}") from exc
            kwargs["connect_args"] = {"check_same_thread": False}
            if not path or path == ":memory:":
                kwargs["poolclass"] = sa.pool.StaticPool  # one shared in-memory database
        else:
            kwargs["pool_pre_ping"] = True
        try:
            self.engine = sa.create_engine(url, **kwargs)
        except (sa.exc.ArgumentError, sa.exc.NoSuchModuleError, ImportError) as exc:
            raise StoreError(f"cannot use database URL: {exc}") from exc
        self.url = url

    def create(self) -> None:
        """Create the table if missing; raise StoreError with one line if the server is unreachable."""
        try:
            _meta.create_all(self.engine)
        except sa.exc.SQLAlchemyError as exc:
            first = str(exc.orig if isinstance(exc, sa.exc.DBAPIError) else exc).strip().splitlines()
            raise StoreError(f"cannot open the history database: {first[0] if first else exc}") from exc

    def display_url(self) -> str:
        """The URL with any password hidden, for the start-up line."""
        return sa.engine.make_url(self.url).render_as_string(hide_password=True)

    def add(self, diagnosis: dict[str, Any], extra: dict[str, Any], inputs: list[str]) -> Record:
        primary = diagnosis.get("primary") or {}
        rec = Record(
            id=secrets.token_hex(6),
            created=dt.datetime.now(dt.timezone.utc).replace(tzinfo=None, microsecond=0),
            verdict=str(diagnosis.get("verdict", "")),
            primary_id=primary.get("id"),
            title=primary.get("title"),
            rank=primary.get("rank"),
            inputs=", ".join(inputs)[:4000],
            diagnosis=diagnosis,
            extra=extra,
        )
        with self.engine.begin() as conn:
            conn.execute(sa.insert(diagnoses).values(
                id=rec.id, created=rec.created, verdict=rec.verdict, primary_id=rec.primary_id,
                title=rec.title, rank=rec.rank, inputs=rec.inputs, diagnosis=rec.diagnosis, extra=rec.extra,
            ))
        return rec

    def get(self, record_id: str) -> Record | None:
        with self.engine.connect() as conn:
            row = conn.execute(sa.select(diagnoses).where(diagnoses.c.id == record_id)).first()
        return _record(row) if row is not None else None

    def search(
        self,
        q: str = "",
        verdict: str | None = None,
        since: dt.datetime | None = None,
        until: dt.datetime | None = None,
        limit: int = 50,
    ) -> list[Record]:
        """Newest first. `q` matches the id, the primary id or title, and the input names."""
        stmt = sa.select(diagnoses).order_by(diagnoses.c.created.desc(), diagnoses.c.id).limit(
            max(1, min(limit, MAX_LIMIT)))
        q = q.strip()
        if q:
            pattern = "%" + q.replace("\\", "\\\\").replace("%", "\\%").replace("_", "\\_") + "%"
            stmt = stmt.where(sa.or_(*(
                col.ilike(pattern, escape="\\")
                for col in (diagnoses.c.id, diagnoses.c.primary_id, diagnoses.c.title, diagnoses.c.inputs)
            )))
        if verdict:
            stmt = stmt.where(diagnoses.c.verdict == verdict)
        if since is not None:
            stmt = stmt.where(diagnoses.c.created >= _naive_utc(since))
        if until is not None:
            stmt = stmt.where(diagnoses.c.created < _naive_utc(until))
        with self.engine.connect() as conn:
            return [_record(r) for r in conn.execute(stmt)]

    def dispose(self) -> None:
        self.engine.dispose()


def _naive_utc(t: dt.datetime) -> dt.datetime:
    if t.tzinfo is not None:
        t = t.astimezone(dt.timezone.utc).replace(tzinfo=None)
    return t


def _record(row: sa.Row[Any]) -> Record:
    m = row._mapping
    return Record(
        id=m["id"], created=m["created"], verdict=m["verdict"], primary_id=m["primary_id"], title=m["title"],
        rank=m["rank"], inputs=m["inputs"], diagnosis=m["diagnosis"], extra=m["extra"],
    )


def default_url(environ: Mapping[str, str] | None = None) -> str:
    env = os.environ if environ is None else environ
    return f"sqlite:///{default_data_dir(env) / 'history.db'}"
