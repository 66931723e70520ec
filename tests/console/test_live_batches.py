"""The live feed hands events to a page in batches, each encoded once for every page of its scope: a page
of one execution hears each read at once (W10); a page of many executions (the list, a workflow's page)
hears at most one batch per `MANY_SECONDS`, so 100 open lists cost the server a few messages a second
each, however busy the engine (W12)."""

from __future__ import annotations

import asyncio
import json
from typing import Any

from flowdeck.console import live
from flowdeck.store import spi
from flowdeck.store.memory import MemoryStore


class Clock:
    def __init__(self) -> None:
        self.now = 1000.0

    def __call__(self) -> float:
        return self.now


def _event(n: int, execution_id: str, workflow_id: str = "orders") -> live.LiveEvent:
    return live.LiveEvent(n, execution_id, workflow_id, n, "StepCompleted")


_sent: dict[live.Subscription, list[Any]] = {}


def _page(feed: live.Feed, scope: live.Scope) -> live.Subscription:
    """A page hearing its items at once, each kept in `_sent`."""
    page = live.Subscription(feed, scope)
    sent = _sent.setdefault(page, [])

    async def send(item: Any) -> None:
        sent.append(item)

    page.hear(send)
    return page


def _feed_with(clock: Clock, *scopes: live.Scope) -> tuple[live.Feed, list[live.Subscription]]:
    feed = live.Feed(store=None, monotonic=clock)  # type: ignore[arg-type]  # no watcher: reads are handed in
    pages = [_page(feed, scope) for scope in scopes]
    feed._subscribers.update(pages)
    return feed, pages


async def _queued(subscription: live.Subscription) -> list[Any]:
    """What the page was sent since last asked."""
    for _ in range(5):  # the items arrive through call_soon_threadsafe, then the loop's sending task
        await asyncio.sleep(0)
    items = list(_sent[subscription])
    _sent[subscription].clear()
    return items


def _read(feed: live.Feed, events: list[live.LiveEvent]) -> None:
    """What the watcher does with one read: offer it, then send what is due."""
    feed._offer(events, list(feed._subscribers))
    feed._flush_held()


async def test_pages_of_one_scope_share_one_batch_and_each_scope_hears_its_own() -> None:
    clock = Clock()
    feed, pages = _feed_with(clock, (None, None), (None, None), (None, None), ("a", None), (None, "billing"))
    *lists, of_a, of_billing = pages
    found = [_event(1, "a"), _event(2, "b"), _event(3, "a"), _event(4, "c", "billing")]
    _read(feed, found)

    heard = [await _queued(page) for page in lists]
    (batch,) = heard[0]
    assert all(items == [batch] and items[0] is batch for items in heard)  # one encoding for every list
    assert batch.ids == (1, 2, 3, 4)
    assert json.loads(batch.text) == {"type": "changes", "ids": [[1, 4]], "last": 4}  # runs of ids, no more
    (mine,) = await _queued(of_a)
    assert mine.ids == (1, 3)
    assert all(e["progress_follows"] for e in json.loads(mine.text)["events"])  # its progress follows
    assert feed._pending == {"a": 3}
    (billing,) = await _queued(of_billing)
    assert billing.ids == (4,)
    assert json.loads(billing.text) == {"type": "changes", "ids": [[4, 4]], "last": 4}


def test_changes_name_their_ids_in_runs() -> None:
    runs = {"type": "changes", "ids": [[3, 5], [7, 7], [9, 10]], "last": 10}
    assert live.changes_json([7, 3, 4, 5, 9, 10]) == runs


async def test_a_page_of_many_executions_hears_at_most_one_batch_per_interval() -> None:
    clock = Clock()
    feed, (listing, of_a) = _feed_with(clock, (None, None), ("a", None))
    _read(feed, [_event(1, "a")])
    assert [b.ids for b in await _queued(listing)] == [(1,)]  # the first goes at once

    clock.now += live.MANY_SECONDS / 4
    _read(feed, [_event(2, "a")])
    clock.now += live.MANY_SECONDS / 4
    _read(feed, [_event(3, "b")])
    assert await _queued(listing) == []  # held: the last batch went less than the interval ago
    assert [b.ids for b in await _queued(of_a)] == [(1,), (2,)]  # one execution's page: every read at once
    assert feed._wait_seconds() <= live.MANY_SECONDS / 2 + 1e-9  # the watcher wakes when it is due

    clock.now += live.MANY_SECONDS / 2 + 0.001  # the interval since the first batch has passed
    feed._flush_held()
    assert [b.ids for b in await _queued(listing)] == [(2, 3)]


async def test_a_scope_whose_pages_left_holds_nothing() -> None:
    clock = Clock()
    feed, (listing,) = _feed_with(clock, (None, None))
    _read(feed, [_event(1, "a")])
    clock.now += live.MANY_SECONDS / 2
    _read(feed, [_event(2, "a")])
    feed.unsubscribe(listing)
    clock.now += live.MANY_SECONDS
    feed._flush_held()
    assert feed._held == {}
    assert [b.ids for b in await _queued(listing)] == [(1,)]


async def test_only_a_page_of_one_execution_makes_a_busy_feed_read_fast() -> None:
    clock = Clock()
    feed, _ = _feed_with(clock, (None, None), (None, "orders"))
    feed._last_event = clock.now  # events are coming
    assert feed._wait_seconds() == live.POLL_SECONDS  # lists only: their batches go every MANY_SECONDS
    feed._subscribers.add(live.Subscription(feed, ("a", None)))
    assert feed._wait_seconds() == live.FAST_POLL_SECONDS
    clock.now += live.ACTIVE_SECONDS  # quiet again
    assert feed._wait_seconds() == live.POLL_SECONDS


async def _store_with(executions: int) -> MemoryStore:
    """The memory store with `executions` executions started: one Created event each in the feed."""
    store = MemoryStore()
    for n in range(executions):
        created = spi.Event(spi.EventKind.CREATED, "orders", f"order-{n}", store.now(), {})
        assert await store.create_execution_if_absent(f"order-{n}", "orders", "", spi.Running(), created)
    return store


class _Counted:
    """The store, its feed reads counted: of events, and of ids alone."""

    def __init__(self, store: MemoryStore) -> None:
        self.store, self.event_reads, self.id_reads = store, 0, 0

    @property
    def reads(self) -> int:
        return self.event_reads + self.id_reads

    async def events_after(self, after: int, **scope: Any) -> Any:
        self.event_reads += 1
        return await self.store.events_after(after, **scope)

    async def event_ids_after(self, after: int, **scope: Any) -> Any:
        self.id_reads += 1
        return await self.store.event_ids_after(after, **scope)


async def test_a_feed_only_lists_watch_reads_ids_alone_and_lists_hear_them() -> None:
    clock = Clock()
    feed, (listing,) = _feed_with(clock, (None, None))
    feed.store = counted = _Counted(await _store_with(3))  # type: ignore[assignment]
    await feed._step()
    feed._flush_held()
    assert (counted.id_reads, counted.event_reads, feed.cursor) == (1, 0, 3)
    (batch,) = await _queued(listing)
    assert (batch.ids, json.loads(batch.text)) == ((1, 2, 3), {"type": "changes", "ids": [[1, 3]], "last": 3})

    of_one = _page(feed, ("order-1", None))  # a page of one execution needs its events
    feed._subscribers.add(of_one)
    created = spi.Event(spi.EventKind.CREATED, "orders", "order-9", counted.store.now(), {})
    assert await counted.store.create_execution_if_absent("order-9", "orders", "", spi.Running(), created)
    clock.now += live.MANY_SECONDS + 0.001
    await feed._step()
    feed._flush_held()
    assert (counted.id_reads, counted.event_reads, feed.cursor) == (1, 1, 4)
    assert [b.ids for b in await _queued(listing)] == [(4,)]
    assert await _queued(of_one) == []  # not its execution


def test_a_batch_without_the_replayed_ids_says_the_rest_its_own_way() -> None:
    events = [_event(n, "a") for n in (4, 5, 6)]
    one = live.LiveBatch.of(events)
    assert [e["id"] for e in (one.message_without({4}) or {})["events"]] == [5, 6]
    assert one.message_without({4, 5, 6}) is None
    many = live.LiveBatch.changes([4, 5, 6])
    assert many.message_without({5}) == {"type": "changes", "ids": [[4, 4], [6, 6]], "last": 6}
    assert many.message_without({4, 5, 6}) is None


async def test_a_full_read_is_followed_by_the_next_before_the_batch_goes() -> None:
    clock = Clock()
    feed, (listing,) = _feed_with(clock, (None, None))
    feed.store = counted = _Counted(await _store_with(live.BATCH + 10))  # type: ignore[assignment]
    await feed._step()
    feed._flush_held()
    assert (counted.reads, feed.cursor) == (2, live.BATCH + 10)
    (batch,) = await _queued(listing)
    assert json.loads(batch.text)["ids"] == [[1, live.BATCH + 10]]  # all of it at once, none a batch later
    assert feed._wait_seconds() == live.POLL_SECONDS  # caught up: the usual wait


async def test_a_feed_further_behind_sends_what_it_read_and_reads_on_at_once() -> None:
    clock = Clock()
    feed, _ = _feed_with(clock, (None, None))
    behind = live.BATCH * (live.CATCH_UP_READS + 1)
    feed.store = counted = _Counted(await _store_with(behind))  # type: ignore[assignment]
    await feed._step()
    assert (counted.reads, feed.cursor) == (live.CATCH_UP_READS, live.BATCH * live.CATCH_UP_READS)
    feed._flush_held()
    assert feed._wait_seconds() == 0.0  # more are committed than it read: no wait before the next
