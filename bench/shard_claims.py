"""W20's claim arm: the store's own claim statement (`CLAIM_WITH_LEDGER`, FOR UPDATE SKIP LOCKED) from
`--claimers` connections spread over the shards, until every ready row is claimed (docs/sharding.md).

It isolates what sharding changes for the claim: on one database every claimer scans the same ready index
and skips the rows the others hold locked; on N databases each shard's claimers see only their own rows.
The claimers are threads of the coordinator, one psycopg connection each (psycopg waits for the server
with the GIL released, so the server, not this process, sets the pace). `reset` puts the claimed rows
back as a start left them (no executor, no claim), so W1 then runs on the very same executions.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Sequence
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from typing import Any

from bench import cpu, pg

__all__ = ["ClaimRun", "claim_all", "reset"]


@dataclass(frozen=True)
class ClaimRun:
    """One claim arm: how many rows were claimed, in how many statements, over how long, at what CPU."""

    claimed: int
    statements: int
    seconds: float
    database_cpu_seconds: float

    def as_dict(self, expected: int) -> dict[str, Any]:
        return {
            "claimed": self.claimed,
            "claim_statements": self.statements,
            "claim_seconds": self.seconds,
            "claims_per_s": self.claimed / self.seconds,
            "claim_database_cpu_us_per_row": self.database_cpu_seconds / max(1, expected) * 1e6,
        }


def _claim_sql(flow_id: str, hash_: str) -> tuple[str, dict[str, Any]]:
    """The engine's claim as the PostgreSQL store sends it (store/django/postgres.py: priority order)."""
    from flowdeck.store.django import queries

    params: dict[str, Any] = {}
    served = queries.served_predicate([(flow_id, hash_)], params)
    sql = queries.CLAIM_WITH_LEDGER.text("postgresql").format(served=served, order=queries.CLAIM_ORDER[False])
    return sql, params


def _latest_hash(database: str, flow_id: str) -> str:
    with pg.connect(database) as conn:
        row = conn.execute("select latest_hash from flowstore_workflow where id = %s", (flow_id,)).fetchone()
    if row is None:
        raise RuntimeError(f"{database}: no workflow {flow_id!r} registered")
    return str(row[0])


class _Claimer(threading.Thread):
    """One connection claiming `batch` rows a statement until a claim finds none."""

    def __init__(self, database: str, sql: str, params: dict[str, Any], batch: int, go: threading.Event):
        super().__init__(name=f"claimer-{database}", daemon=True)
        self.conn = pg.connect(database)
        self.conn.execute("select 1")  # connected before the clock starts
        self.sql, self.params, self.batch, self.go = sql, params, batch, go
        self.claimed = self.statements = 0
        self.failure: BaseException | None = None

    def run(self) -> None:
        self.go.wait()
        try:
            while True:
                now = datetime.now(UTC)
                params = self.params | {
                    "now": now,
                    "limit": self.batch,
                    "executor": self.name,
                    "expiry": now + timedelta(seconds=300),
                }
                rows = self.conn.execute(self.sql, params, prepare=False).fetchall()
                self.statements += 1
                if not rows:
                    return
                self.claimed += len(rows)
        except BaseException as failure:  # handed to the coordinator, which raises it
            self.failure = failure
        finally:
            self.conn.close()


def claim_all(databases: Sequence[str], flow_id: str, claimers: int, batch: int) -> ClaimRun:
    """Claim every ready row of `flow_id` on each database with `claimers // len(databases)` connections
    each, all let go at once; timed from the go to the last claimer's empty claim."""
    go = threading.Event()
    threads = []
    for database in databases:
        sql, params = _claim_sql(flow_id, _latest_hash(database, flow_id))
        threads += [_Claimer(database, sql, params, batch, go) for _ in range(claimers // len(databases))]
    for thread in threads:
        thread.start()
    meter = cpu.Meter({})
    began = time.perf_counter()
    go.set()
    for thread in threads:
        thread.join()
    seconds = time.perf_counter() - began
    database_cpu = meter.spent()["database"]
    for thread in threads:
        if thread.failure is not None:
            raise thread.failure
    return ClaimRun(
        claimed=sum(t.claimed for t in threads),
        statements=sum(t.statements for t in threads),
        seconds=seconds,
        database_cpu_seconds=database_cpu,
    )


def reset(database: str) -> int:
    """Every claimed row back to unclaimed, as its start left it (a start writes no executor, expiry or
    token); vacuumed, so W1 after it does not read the claim's dead row versions. Answers the rows reset."""
    with pg.connect(database) as conn:
        cursor = conn.execute(
            "update flowstore_execution set executor = null, claim_expiry = null, claim_token = null"
            " where claim_token is not null"
        )
        conn.execute("vacuum (analyze) flowstore_execution")
        return cursor.rowcount
