"""W11: the console's server time at scale: the executions list (unfiltered, and filtered to a status and a
workflow), the overview and an execution page, over W7's mix of `rows` executions on PostgreSQL.

`python -m bench.console_load w11 --rows 1000000 --reps 20`

Server time is measured in process with Django's `AsyncClient` as a logged-in user: the whole ASGI request
(middleware, session and user, the view's store reads, the template) from the request to the complete
response, without a socket or a browser. That is the part the console controls; daphne adds the same small
framing to every page, and the browser's side is W10's concern.

The rows are W7's (`search_load.load`, the same recipe) in a database of their own (`flowdeck_bench_web`),
stamped so the newest lie in the last hour and day: the overview's charts then count a busy engine's day,
not an empty one. The execution page is a real execution's, with a mid-size history: W10's `ticker` flow
run to completion in this process by the engine's workers (`HISTORY_STEPS` steps, no gap).
"""

from __future__ import annotations

import argparse
import asyncio
import os
import sys
import time
from datetime import UTC, datetime, timedelta
from typing import Any

from bench import live_flows, pg, protocol, report, search_load, stats

EXECUTION = "w11-history"
HISTORY_STEPS = 40
PAGES = {
    "list": "/executions/",
    "list failed, orders": "/executions/?status=failed&workflow=orders",
    "overview": "/",
    "execution": f"/executions/{EXECUTION}",
}
TARGETS_MS = report.W11_PAGES  # the verdict's targets, the issue's


def _setup() -> None:
    """Django on the W11 database with the whole console (its apps, its flows: W10's ticker)."""
    os.environ["DATABASE_URL"] = pg.url(pg.WEB_DB)
    os.environ["DJANGO_SETTINGS_MODULE"] = "bench.web_settings"
    os.environ[live_flows.STEPS_ENV] = str(HISTORY_STEPS)
    os.environ[live_flows.GAP_ENV] = "0"
    os.environ[live_flows.GO_ENV] = __file__  # exists: the flow's `go` step passes at once
    os.environ.setdefault("FLOWDECK_LOG_LEVEL", "WARNING")
    os.environ.setdefault("DJANGO_ALLOW_ASYNC_UNSAFE", "true")  # the bench's own setup ORM calls
    import django

    django.setup()


def _fresh(rows: int) -> float:
    from django.core.management import call_command
    from django.db import connections

    pg.recreate(pg.WEB_DB)
    call_command("migrate", verbosity=0, interactive=False)
    connections.close_all()
    base = (datetime.now(UTC) - timedelta(seconds=rows)).isoformat()
    return search_load.load(rows, pg.WEB_DB, base)


async def _history() -> int:
    """Run the ticker to completion here; answer its event count."""
    from flowdeck.console import runtime
    from flowdeck.store import spi

    async with runtime.make_engine(workers=2, poll_timeout=timedelta(seconds=0.2)) as engine:
        await engine.workflows.start("ticker", execution_id=EXECUTION)
        store = runtime.store()
        deadline = time.monotonic() + 120
        while time.monotonic() < deadline:
            state = await store.get_execution(EXECUTION)
            if state is not None and state.status.terminal:
                if not isinstance(state.status, spi.Completed):
                    raise RuntimeError(f"the history's execution ended {state.status!r}")
                break
            await asyncio.sleep(0.05)
        else:
            raise RuntimeError("the history's execution did not complete in 120 s")
    with pg.connect(pg.WEB_DB) as conn:
        found = conn.execute("select count(*) from flowstore_event where execution_id = %s", (EXECUTION,))
        return int(found.fetchone()[0])  # type: ignore[index]


async def _measure(reps: int) -> dict[str, Any]:
    from django.contrib.auth import get_user_model
    from django.test import AsyncClient

    user = await get_user_model().objects.acreate(username="bench")
    client = AsyncClient()
    await client.aforce_login(user)
    found: dict[str, Any] = {}
    for label, url in PAGES.items():
        samples = []
        for n in range(reps + 1):  # the first warms the plans, the caches and the templates
            began = time.perf_counter()
            response = await client.get(url)
            elapsed = (time.perf_counter() - began) * 1000
            if response.status_code != 200:
                raise RuntimeError(f"{url} answered {response.status_code}")
            if n:
                samples.append(elapsed)
        found[label] = {
            "url": url,
            "ms": stats.p50_p95(samples),
            "target_ms": TARGETS_MS[label],
            "bytes": len(response.content),
        }
    return found


def cmd_w11(ns: argparse.Namespace) -> dict[str, Any]:
    _setup()
    load_seconds = _fresh(ns.rows)

    async def both() -> tuple[int, dict[str, Any]]:
        return await _history(), await _measure(ns.reps)

    events, pages = asyncio.run(both())
    return {
        "system": "flowdeck",
        "backend": "postgres",
        "rows": ns.rows,
        "reps": ns.reps,
        "load_seconds": load_seconds,
        "history_events": events,
        "timing": "in-process AsyncClient, logged in: request to complete response",
        "pages": pages,
        "all_hold": all(p["ms"]["p95"] <= p["target_ms"] for p in pages.values()),
    }


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(prog="bench.console_load")
    sub = parser.add_subparsers(dest="command", required=True)
    w11 = sub.add_parser("w11")
    w11.add_argument("--rows", type=int, default=1_000_000)
    w11.add_argument("--reps", type=int, default=20)
    ns = parser.parse_args(argv)
    protocol.emit(cmd_w11(ns))
    sys.stdout.flush()
    os._exit(0)  # the store's threads and listener need no orderly end in a measuring child


if __name__ == "__main__":
    main()
