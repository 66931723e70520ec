"""For real: three `flowdeck_workers` processes and the API server on one PostgreSQL database, 200 fulfilment
executions started through the REST API, one worker SIGKILLed while it holds claims.

Every execution must reach its terminal state, and the ledger must show each side effect once per
execution. The services are idempotent on the engine's key (`ctx.key`), so a node re-run after the kill
finds its row and only counts the call: re-runs (`calls > 1`) may appear only on executions the killed
process was holding, and duplicates (two rows for one execution) never.
"""

from __future__ import annotations

import json
import os
import signal
import socket
import time
import urllib.error
import urllib.request
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

import psycopg
import pytest

from tests.acceptance.support import PYTHON, Background, environment, free_port, manage, ok
from tests.store.django_support import POSTGRES_SERVER, require_postgres

pytestmark = [pytest.mark.postgres, pytest.mark.slow]

EXECUTIONS = 200
DATABASE = f"flowdeck_accept_mp_{os.getpid()}"
LEDGER = ("charge", "refund", "reservation", "release", "shipment", "notification")


def order_for(index: int) -> tuple[dict[str, Any], str]:
    """The order of execution `index` and the status word it must end with."""
    order: dict[str, Any] = {
        "id": f"o-{index}",
        "customer": "ada",
        "items": [
            {"sku": "widget", "qty": 1 + index % 3, "price": 400},
            {"sku": "gadget", "qty": 1, "price": 250},
        ],
    }
    if index % 10 == 3:
        return order | {"card": "declined"}, "failed:CardDeclined"
    if index % 25 == 7:
        return order | {"country": "AQ"}, "failed:ShipmentRefused"
    return order, "completed"


def eid_of(index: int) -> str:
    return f"mp-{index:03d}"


def query(sql: str, *params: Any) -> list[tuple[Any, ...]]:
    with psycopg.connect(f"{POSTGRES_SERVER}/{DATABASE}", autocommit=True) as conn:
        return conn.execute(sql, params).fetchall()


def statuses() -> dict[str, str]:
    rows = query("SELECT id, status_kind, failure_kind, stop_code FROM flowstore_execution")
    words = {}
    for eid, kind, failure, stop in rows:
        words[eid] = f"failed:{failure}" if kind == "failed" else (f"stopped:{stop}" if stop else kind)
    return words


def terminal_count() -> int:
    (count,) = query(
        "SELECT count(*) FROM flowstore_execution WHERE status_kind IN ('completed', 'failed', 'cancelled')"
    )[0]
    return int(count)


def held_by(executor_prefix: str) -> set[str]:
    rows = query(
        "SELECT id FROM flowstore_execution WHERE executor LIKE %s AND claim_expiry > now()"
        " AND status_kind NOT IN ('completed', 'failed', 'cancelled')",
        executor_prefix + "%",
    )
    return {eid for (eid,) in rows}


def api_call(port: int, token: str, method: str, path: str, body: Any = None) -> tuple[int, Any]:
    request = urllib.request.Request(
        f"http://127.0.0.1:{port}{path}",
        method=method,
        data=None if body is None else json.dumps(body).encode(),
        headers={"Authorization": f"Bearer {token}", "Content-Type": "application/json"},
    )
    try:
        with urllib.request.urlopen(request, timeout=60) as response:
            return response.status, json.loads(response.read() or b"null")
    except urllib.error.HTTPError as error:
        return error.code, error.read().decode()


def create_database() -> None:
    with psycopg.connect(f"{POSTGRES_SERVER}/postgres", autocommit=True) as conn:
        conn.execute(f'DROP DATABASE IF EXISTS "{DATABASE}" WITH (FORCE)')
        conn.execute(f'CREATE DATABASE "{DATABASE}"')


def drop_database() -> None:
    with psycopg.connect(f"{POSTGRES_SERVER}/postgres", autocommit=True) as conn:
        conn.execute(f'DROP DATABASE IF EXISTS "{DATABASE}" WITH (FORCE)')


def wait_until(predicate: Any, what: str, timeout: float, explain: Any = lambda: "") -> None:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if predicate():
            return
        time.sleep(0.25)
    pytest.fail(f"no {what} within {timeout:g}s\n{explain()}")


def test_three_workers_and_the_api_share_200_executions_and_survive_a_kill(tmp_path: Path) -> None:
    require_postgres()
    create_database()
    url = f"{POSTGRES_SERVER}/{DATABASE}"
    processes: list[Background] = []
    try:
        ok(manage(url, "migrate", "--verbosity", "0"))
        ok(
            manage(
                url,
                "createsuperuser",
                "--noinput",
                "--username",
                "ops",
                "--email",
                "ops@example.com",
                env=environment(url, DJANGO_SUPERUSER_PASSWORD="not-used-here"),
            )
        )
        token = ok(manage(url, "flowdeck", "token", "create", "ops", "--json")).json()["token"]

        port = free_port()
        api = Background(
            "api",
            [PYTHON, "-m", "daphne", "-b", "127.0.0.1", "-p", str(port), "flowdeck.console.asgi:application"],
            environment(url, ASGI_THREADS="4"),
            tmp_path,
        )
        processes.append(api)
        workers = [
            Background.manage(
                f"worker{i}",
                url,
                tmp_path,
                "flowdeck_workers",
                # small pools: the PostgreSQL server's connections are shared with other suites
                "--workers",
                "1",
                "--lease",
                "3",
                "--renew-every",
                "1",
                "--batch-size",
                "3",
                "--shutdown-grace",
                "5",
            )
            for i in range(3)
        ]
        processes.extend(workers)
        for worker in workers:
            worker.wait_for_output("worker(s) serving")

        def api_up() -> bool:
            with socket.socket() as probe:
                if probe.connect_ex(("127.0.0.1", port)) != 0:
                    return False
            return api_call(port, token, "GET", "/api/v1/workflows")[0] == 200

        api.wait_for(api_up, "the API answering", timeout=120)

        expected = {}
        starts = []
        for index in range(EXECUTIONS):
            order, word = order_for(index)
            expected[eid_of(index)] = word
            starts.append((eid_of(index), order))

        def start(item: tuple[str, dict[str, Any]]) -> tuple[int, Any]:
            eid, order = item
            return api_call(
                port,
                token,
                "POST",
                "/api/v1/workflows/fulfilment/executions",
                {"executionId": eid, "inputs": {"order": order}},
            )

        # The starts go on while the kill is prepared, so the kill lands with work still to come.
        pool = ThreadPoolExecutor(max_workers=4)
        pending_answers = pool.map(start, starts)

        # Kill one worker midway, while it holds claims: its attempts die with it, their leases lapse, and
        # the two others take the executions over. The victim is whichever worker holds claims once a
        # quarter has ended (which of the three the wake-ups favour is up to the scheduler). It is frozen
        # with SIGSTOP before its claims are read, so what it holds cannot finish between the read and the
        # SIGKILL; a worker found holding nothing once frozen is let go and another moment is awaited.
        def prefix_of(worker: Background) -> str:
            return f"{socket.gethostname()}-{worker.process.pid}-"

        killed: list[tuple[Background, set[str]]] = []

        def a_worker_killed_midway() -> bool:
            if terminal_count() < EXECUTIONS // 4:
                return False
            for worker in workers:
                if not held_by(prefix_of(worker)):
                    continue
                worker.process.send_signal(signal.SIGSTOP)
                held = held_by(prefix_of(worker))
                if held:
                    worker.process.send_signal(signal.SIGKILL)
                    worker.process.wait()
                    killed.append((worker, held))
                    return True
                worker.process.send_signal(signal.SIGCONT)
            return False

        wait_until(
            a_worker_killed_midway,
            "claims held by a worker midway",
            120,
            lambda: "\n".join(w.explain()[-3000:] for w in workers),
        )
        [(victim, in_flight)] = killed
        survivors = [w for w in workers if w is not victim]
        answers = list(pending_answers)
        pool.shutdown()
        assert [a for a in answers if a[0] != 200] == [], api.explain()[-6000:]
        assert sorted(a[1]["executionId"] for a in answers) == sorted(expected)

        def all_ended() -> bool:
            return terminal_count() == EXECUTIONS

        wait_until(
            all_ended,
            "terminal state for all executions",
            120,
            lambda: "\n".join(w.explain()[-3000:] for w in survivors) + f"\n{statuses()}",
        )

        assert statuses() == expected
        assert in_flight <= set(expected)

        # --- the ledger: one row per side effect per execution --------------------------------------
        completed = {e for e, w in expected.items() if w == "completed"}
        declined = {e for e, w in expected.items() if w == "failed:CardDeclined"}
        refused = {e for e, w in expected.items() if w == "failed:ShipmentRefused"}

        def per_execution(table: str) -> dict[str, int]:
            rows = query(f"SELECT execution_id, count(*) FROM fulfilment_{table} GROUP BY execution_id")
            return {eid: int(count) for eid, count in rows}

        assert per_execution("charge") == dict.fromkeys(completed | refused, 1)
        assert per_execution("refund") == dict.fromkeys(refused, 1)
        assert per_execution("reservation") == dict.fromkeys(expected, 2)
        assert per_execution("release") == dict.fromkeys(declined | refused, 2)
        assert per_execution("shipment") == dict.fromkeys(completed, 1)
        assert per_execution("notification") == dict.fromkeys(completed, 1)

        rerun: set[str] = set()
        for table in LEDGER:
            rerun |= {eid for (eid,) in query(f"SELECT execution_id FROM fulfilment_{table} WHERE calls > 1")}
        assert rerun <= in_flight, f"re-runs outside the killed worker's claims: {rerun - in_flight}"

        for worker in survivors:
            worker.signal(signal.SIGTERM)
        for worker in survivors:
            assert worker.finish() == 0, worker.explain()
        log = "".join(w.stderr for w in survivors)
        taken_over = {eid for eid in in_flight if f"claimed {eid} " in log}
        assert taken_over == in_flight, f"not taken over: {in_flight - taken_over}"
    finally:
        for process in processes:
            process.close()
        drop_database()
