"""The websocket brings an execution's progress with its events (bench W10): a page of one execution hears
each event marked `progress_follows`, then the execution's JSON diagram, the very document the diagram
route answers, built once for every page of that execution; the newest state is what it carries. Events
written by another process, on SQLite and on PostgreSQL."""

# ruff: noqa: F811  (pytest fixtures imported by name are redefined as parameters)

from __future__ import annotations

import json
import os
import time
from collections.abc import Iterator
from typing import Any

import pytest
from asgiref.sync import sync_to_async

from flowdeck.console import discovery, live, runtime
from tests.console.live_messages import covers, next_message
from tests.console.test_live import Writer, alias, socket_of, writer  # noqa: F401  (fixtures)
from tests.store.django_support import (  # noqa: F401  (fixtures)
    database_access,
    postgres_alias,
    sqlite_alias,
)


@pytest.fixture
def engine_on(alias: str) -> Iterator[str]:
    """The process's engine on the test's database, for the diagram route's own answer; this process
    serves `counter` as the writer does, so the feed can draw it."""
    discovery.discover(["tests.console.flows"])
    runtime.reset()
    yield alias
    runtime.reset()


async def _route_document(eid: str) -> dict[str, Any]:
    engine = await runtime.engine()
    return dict(json.loads(await engine.executions.diagram(eid, "json")))


def _node(document: dict[str, Any], name: str) -> dict[str, Any]:
    return next(node for node in document["nodes"] if node["name"] == name)


async def test_the_socket_brings_the_executions_progress(
    engine_on: str,
    writer: Writer,
    socket_of: Any,
) -> None:
    eid = f"prog-{engine_on}-{os.getpid()}-{time.time_ns()}"
    socket = await socket_of(f"execution={eid}")
    assert await sync_to_async(live.feed().wait_ready)()
    writer.start(eid)
    writer.committed()
    created = await next_message(socket, "event")
    assert (created["kind"], created["progress_follows"]) == ("Created", True)
    first = await next_message(socket, "progress")
    assert (first["execution_id"], first["seq"]) == (eid, 1)
    assert _node(first["progress"], "count")["status"] == "running"  # no worker has run it yet
    assert first["progress"] == await _route_document(eid)  # what the page would have fetched

    writer.start(f"signal {eid} 3")
    writer.committed()
    delivered = await next_message(socket, "event")
    assert delivered["progress_follows"] is True
    second = await next_message(socket, "progress")
    assert second["seq"] > first["seq"]
    assert _node(second["progress"], "count")["status"] == "completed"
    assert second["progress"] == await _route_document(eid)


async def test_one_progress_is_built_for_every_page_of_the_execution(
    engine_on: str,
    writer: Writer,
    socket_of: Any,
) -> None:
    eid = f"fan-{engine_on}-{os.getpid()}-{time.time_ns()}"
    pages = [await socket_of(f"execution={eid}") for _ in range(3)]
    other = await socket_of("workflow=counter")  # a page of many executions: events only
    feed = live.feed()
    assert await sync_to_async(feed.wait_ready)()
    built = feed.progress_built
    writer.start(eid)
    writer.committed()
    heard = [await next_message(page, "progress") for page in pages]
    assert {h["seq"] for h in heard} == {1}
    assert all(h["progress"] == heard[0]["progress"] for h in heard)
    assert feed.progress_built == built + 1
    changes = await next_message(other, "changes")  # its ids, not each event: it refreshes, no more
    (created, *_) = await live.events_after(0, execution_id=eid)
    assert covers(changes, created.id)
    assert await other.receive_nothing(timeout=0.3)  # no progress to a page of many executions


async def test_a_replayed_event_leaves_the_progress_to_the_page(
    engine_on: str,
    writer: Writer,
    socket_of: Any,
) -> None:
    eid = f"replay-{engine_on}-{os.getpid()}-{time.time_ns()}"
    before = await live.latest_event_id()
    writer.start(eid)
    writer.committed()
    socket = await socket_of(f"execution={eid}&after={before}")
    replayed = await next_message(socket, "event")
    assert replayed["kind"] == "Created"
    assert "progress_follows" not in replayed  # the page fetches the diagram once (console.js)


async def test_a_page_behind_is_sent_only_the_newest_progress(alias: str, socket_of: Any) -> None:
    """Progress queued faster than the page reads it: the newest state wins, an older one never follows."""
    socket = await socket_of("execution=behind-1")
    feed = live.feed()
    (page,) = [s for s in list(feed._subscribers) if s.progress_of == "behind-1"]
    for seq in (3, 5, 4):  # offered in one go, as a burst the pump finds waiting
        page.offer(live.LiveProgress("behind-1", seq, seq, {"nodes": [], "seq": seq}))
    page.offer(live.LiveProgress("behind-2", 9, 9, {"nodes": []}))  # another execution's: not this page's
    heard = await next_message(socket, "progress")
    assert (heard["seq"], heard["progress"]["seq"]) == (5, 5)
    assert await socket.receive_nothing(timeout=0.3)
