"""The fleet's table, in the same database as `serve`'s history (SQLite by default, PostgreSQL by URL):
one row per job, with what its diagnosis says and the signature of the files it was read from."""

from __future__ import annotations

import datetime as dt
from collections.abc import Iterable
from typing import Any

import sqlalchemy as sa

from trainmedic.web.store import Store, StoreError

_meta = sa.MetaData()

jobs = sa.Table(
    "trainmedic_fleet_jobs",
    _meta,
    sa.Column("job", sa.String(1000), primary_key=True),
    sa.Column("signature", sa.String(64), nullable=False),
    sa.Column("scanned", sa.DateTime(), nullable=False),
    sa.Column("verdict", sa.String(16), nullable=False, index=True),
    sa.Column("primary_id", sa.String(300), nullable=True, index=True),
    sa.Column("host", sa.String(300), nullable=True, index=True),
    sa.Column("rank", sa.Integer(), nullable=True),
    sa.Column("gpu", sa.String(64), nullable=True),  # the GPU the failure's evidence names (index or PCI bus)
    sa.Column("hosts", sa.Text(), nullable=False),  # every host the job's files name, comma-separated
    sa.Column("ranks", sa.Integer(), nullable=True),  # how many ranks it ran
    sa.Column("started", sa.Float(), nullable=True),  # epoch seconds of its first timestamp
    sa.Column("failed", sa.Float(), nullable=True),  # of the failure's first evidence
    sa.Column("gpu_hours", sa.Float(), nullable=True),  # ranks x (failed - started) / 3600, when all known
    sa.Column("template", sa.Text(), nullable=True),  # an unclassified failure's first line, masked
    sa.Column("error", sa.Text(), nullable=True),  # why the job could not be read
    sa.Column("diagnosis", sa.JSON(), nullable=True),
)


class FleetStore(Store):
    """The history store with the fleet's table."""

    def create(self) -> None:
        super().create()
        try:
            _meta.create_all(self.engine)
        except sa.exc.SQLAlchemyError as exc:
            raise StoreError(f"cannot open the fleet table: {str(exc).splitlines()[0]}") from exc

    def signatures(self) -> dict[str, str]:
        with self.engine.connect() as conn:
            return {r.job: r.signature for r in conn.execute(sa.select(jobs.c.job, jobs.c.signature))}

    def put(self, rows: Iterable[dict[str, Any]]) -> int:
        """Insert or replace rows (one transaction: an interrupted scan keeps every batch it finished)."""
        rows = list(rows)
        if not rows:
            return 0
        now = dt.datetime.now(dt.timezone.utc).replace(tzinfo=None, microsecond=0)
        with self.engine.begin() as conn:
            conn.execute(sa.delete(jobs).where(jobs.c.job.in_([r["job"] for r in rows])))
            conn.execute(sa.insert(jobs), [{**r, "scanned": now} for r in rows])
        return len(rows)

    def rows(self) -> list[dict[str, Any]]:
        return fleet_rows(self.engine)


def fleet_rows(engine: sa.engine.Engine) -> list[dict[str, Any]]:
    """Every job's row, from a history database opened elsewhere (serve's store): none before a scan."""
    _meta.create_all(engine)
    with engine.connect() as conn:
        return [dict(r._mapping) for r in conn.execute(sa.select(jobs).order_by(jobs.c.job))]

