"""The live feed hands each read's events to a page as one batch, encoded once per scope: however many
list pages are open, a read costs one encoding, and each page one message (W12)."""

from __future__ import annotations

import asyncio
import json
from typing import Any

from console import live


def _event(n: int, execution_id: str, workflow_id: str = "orders") -> live.LiveEvent:
    return live.LiveEvent(n, execution_id, workflow_id, n, "StepCompleted")


async def _queued(subscription: live.Subscription) -> list[Any]:
    await asyncio.sleep(0)  # the offers arrive through call_soon_threadsafe
    items = []
    while not subscription.queue.empty():
        items.append(subscription.queue.get_nowait())
    return items


async def test_a_read_is_one_batch_per_page_shared_by_pages_of_one_scope() -> None:
    feed = live.Feed(store=None)  # type: ignore[arg-type]  # no watcher runs: the read is handed in
    lists = [live.Subscription(feed) for _ in range(3)]
    of_a = live.Subscription(feed, ("a", None))
    of_billing = live.Subscription(feed, (None, "billing"))
    found = [_event(1, "a"), _event(2, "b"), _event(3, "a"), _event(4, "c", "billing")]

    feed._offer(found, [*lists, of_a, of_billing])

    heard = [await _queued(page) for page in lists]
    assert [len(items) for items in heard] == [1, 1, 1]
    (batch,) = heard[0]
    assert all(items[0] is batch for items in heard)  # one object, one encoding, for every list page
    assert batch.ids == [1, 2, 3, 4]
    assert json.loads(batch.text) == live.batch_json(found)
    ((mine,),) = [await _queued(of_a)]
    assert mine.ids == [1, 3]
    assert all(e["progress_follows"] for e in json.loads(mine.text)["events"])  # its progress follows
    ((billing,),) = [await _queued(of_billing)]
    assert billing.ids == [4]
    assert feed._pending == {"a": 3}  # the one execution watched has its progress due


async def test_a_page_whose_scope_has_nothing_in_the_read_hears_nothing() -> None:
    feed = live.Feed(store=None)  # type: ignore[arg-type]
    quiet = live.Subscription(feed, ("z", None))
    feed._offer([_event(1, "a")], [quiet])
    assert await _queued(quiet) == []
    assert feed._pending == {}
