"""For real, behind PgBouncer in transaction mode (issue 32, point 1): the atomic SIGKILL loop
(test_atomic_sigkill.py) at a small size, every worker connection through a private PgBouncer.

The workers run Flowdeck's own settings as a deployment behind a pooler sets them: `DATABASE_URL` on the
pooler's transaction pool, `FLOWDECK_TRANSACTION_POOLER=1`, and `FLOWDECK_LISTEN_DATABASE_URL` on its
session-mode entry for the LISTEN connection. The claims, the group-committed writes, the store's threads
and the flow's own ORM writes (the atomic steps' rows, in the transaction that records them) all go through
the transaction pool; kills land mid-transaction there. Every execution must complete with exactly one row
per atomic node, the operator's CLI behind the pooler must list them, and the pooler's own counters must
show the work went through it.
"""

from __future__ import annotations

import os
import time
from pathlib import Path

import pytest

from bench import pgbouncer
from tests.acceptance import sigkill
from tests.acceptance import test_atomic_sigkill as atomic
from tests.acceptance.support import environment, manage, ok
from tests.store.pooler_support import require_pgbouncer, server_address

pytestmark = [pytest.mark.postgres, pytest.mark.slow]

EXECUTIONS = 80
KILLS = 10
DATABASE = f"flowdeck_accept_pooled_{os.getpid()}"


def _ended() -> int:
    return atomic.ended(DATABASE)


def test_atomic_steps_hold_through_kills_behind_pgbouncer(tmp_path: Path) -> None:
    require_pgbouncer()
    host, port = server_address()
    with sigkill.fresh_database(DATABASE) as direct:
        # the schema and the starts go straight to PostgreSQL, as a deployment runs `migrate`
        sigkill.prepare(direct, atomic.SETTINGS, atomic.SEED.format(EXECUTIONS))
        with pgbouncer.running(server_host=host, server_port=port, databases=[DATABASE]) as bouncer:
            behind = {
                "FLOWDECK_TRANSACTION_POOLER": "1",
                "FLOWDECK_LISTEN_DATABASE_URL": bouncer.url(DATABASE, session=True),
            }
            pooled = bouncer.url(DATABASE)
            with sigkill.forker(pooled, tmp_path, atomic.SETTINGS, atomic.WORKER_ARGS, **behind) as forker:
                began = time.monotonic()
                kills = atomic.killing(forker, KILLS, EXECUTIONS, DATABASE, within=30)
                took, ended_while_killing = time.monotonic() - began, _ended()
                last = forker.spawn()
                sigkill.while_progressing(_ended, EXECUTIONS)
                assert _ended() == EXECUTIONS, forker.explain(last) + bouncer.log()[-3000:]
            # the operator's CLI behind the same pooler reads what the workers wrote
            pooled_env = environment(pooled, DJANGO_SETTINGS_MODULE=atomic.SETTINGS, **behind)
            listed = ok(manage(pooled, "flowdeck", "ls", "--status", "completed", env=pooled_env))
            newest = f"ak-{EXECUTIONS - 1:04d}    atomic-ledger  completed"  # the list shows the newest first
            assert newest in listed.stdout, listed.stdout[-2000:]
            served = bouncer.transactions()
        check_history(kills, took, ended_while_killing, served)


def check_history(
    kills: sigkill.Kills, took: float, ended_while_killing: int, served: dict[str, int]
) -> None:
    statuses = atomic.query(
        "SELECT status_kind, count(*) FROM flowstore_execution GROUP BY status_kind", database=DATABASE
    )
    assert statuses == [("completed", EXECUTIONS)]
    rows = atomic.query(
        "SELECT execution_id, node, count(*) FROM fulfilment_posting GROUP BY execution_id, node",
        database=DATABASE,
    )
    counts = {(eid, node): n for eid, node, n in rows}
    eids = [f"ak-{i:04d}" for i in range(EXECUTIONS)]
    assert all(counts.get((eid, node)) == 1 for eid in eids for node in ("post", "tally"))
    assert all(counts.get((eid, node), 0) >= 1 for eid in eids for node in ("before", "after"))
    # Four nodes recorded per execution, each at least one transaction through the transaction pool
    # (group commit may carry several in one); the LISTEN sessions went through the session entry.
    assert served[DATABASE] >= EXECUTIONS, served
    assert DATABASE + pgbouncer.SESSION_SUFFIX in served, served
    print(
        f"\npooled SIGKILL loop: {kills.count} kills ({kills.mid_flight} while holding claims) "
        f"in {took:.0f}s "
        f"({ended_while_killing}/{EXECUTIONS} ended by then); {served[DATABASE]:,} transactions "
        "through PgBouncer's transaction pool; atomic rows: exactly 1 per node"
    )
    assert kills.count >= KILLS // 2, f"only {kills.count} kills before the work ran out"
