"""`manage.py runworkers`: bad configuration exits 2; a running process logs claims and outcomes and stops
cleanly on the first SIGTERM or SIGINT."""

from __future__ import annotations

import contextlib
import json
import signal
import sqlite3
from pathlib import Path

import pytest

from tests.acceptance.support import Background, manage, manage_many, migrated_sqlite, ok, refused

pytestmark = pytest.mark.slow

ORDER = {"id": "o-rw", "customer": "ada", "items": [{"sku": "widget", "qty": 1, "price": 400}]}


@pytest.fixture(scope="module")
def db(tmp_path_factory: pytest.TempPathFactory) -> str:
    return migrated_sqlite(tmp_path_factory.mktemp("flowdeck_workers") / "rw.sqlite3")


def test_bad_configuration_exits_2_listing_every_problem(db: str) -> None:
    bad, flows = manage_many(
        db,
        [
            ["flowdeck_workers", "--workers", "0", "--batch-size", "0", "--lease", "2", "--renew-every", "5"],
            ["flowdeck_workers", "--flows", "fulfilment,nope"],
        ],
    )
    refused(
        bad,
        "invalid worker configuration",
        "workers must be at least 1 (got 0)",
        "batch_size must be at least 1 (got 0)",
        "renew_every (5s) must be shorter than lease (2s)",
    )
    refused(flows, "--flows names unknown workflow(s): nope", "discovered: follow_up, fulfilment, payment")


@pytest.mark.parametrize("sig", [signal.SIGTERM, signal.SIGINT], ids=["SIGTERM", "SIGINT"])
def test_runs_work_logs_it_and_stops_on_a_signal(db: str, tmp_path: Path, sig: signal.Signals) -> None:
    eid = f"rw-{sig.name}"
    ok(manage(db, "flowdeck", "start", "fulfilment", "--id", eid, "--input", "order=" + json.dumps(ORDER)))
    workers = Background.manage(
        "flowdeck_workers",
        db,
        tmp_path,
        "flowdeck_workers",
        "--workers",
        "2",
        "--lease",
        "5",
        "--renew-every",
        "1",
    )
    try:
        workers.wait_for_output("2 worker(s) serving fulfilment, payment, follow_up")
        workers.wait_for(lambda: f"attempt on {eid} ended" in workers.stderr, "the attempt's outcome")
        pid = workers.process.pid
        workers.wait_for(lambda: _heartbeats(db, pid) != [], "a heartbeat row")
        ((executor, alive, configured),) = _heartbeats(db, pid)
        assert (alive, configured) == (2, 2)
        workers.signal(sig)
        assert workers.finish() == 0, workers.explain()
    finally:
        workers.close()
    # the last heartbeat says the workers stopped
    assert _heartbeats(db, pid) == [(executor, 0, 2)]
    log = workers.stderr
    assert f"claim          claimed {eid} (fulfilment@" in log
    assert f"received {sig.name}: finishing what is running, then stopping" in log
    assert workers.stdout.rstrip().endswith("stopped"), workers.explain()
    shown = ok(manage(db, "flowdeck", "show", eid, "--json")).json()
    assert shown["status"] == {"type": "completed"}


def _heartbeats(db: str, pid: int) -> list[tuple[str, int, int]]:
    """The heartbeats of process `pid` the store holds (read straight from the SQLite file)."""
    with contextlib.closing(sqlite3.connect(db.removeprefix("sqlite:///"))) as connection:
        found = connection.execute(
            "SELECT executor_id, workers_alive, workers_configured FROM flowstore_heartbeat WHERE pid = ?",
            (pid,),
        ).fetchall()
    return [tuple(row) for row in found]
