"""The feed's pages and their loop's one sending task (`console.live_pages`): a page hears nothing until it
says so, then what came meanwhile first and in order; a page that cannot be sent to leaves the others
theirs; a closed page hears no more; a page behind is sent only its newest built progress; and items
posted from another thread reach every page of the loop."""

from __future__ import annotations

import asyncio
import threading
from typing import Any

from flowdeck.console import live, live_pages


class _Feed:
    def __init__(self) -> None:
        self.left: list[live.Subscription] = []

    def unsubscribe(self, subscription: live.Subscription) -> None:
        self.left.append(subscription)


class _Recorder:
    """A page's socket: what it was sent, or a failure on every send."""

    def __init__(self, *, failing: bool = False) -> None:
        self.sent: list[Any] = []
        self.failing = failing
        self.tries = 0

    async def __call__(self, item: Any) -> None:
        self.tries += 1
        if self.failing:
            raise ConnectionResetError("the socket is gone")
        self.sent.append(item)


async def _settled() -> None:
    for _ in range(5):  # call_soon_threadsafe, then the sending task's turn
        await asyncio.sleep(0)


def _batch(*ids: int) -> live.LiveBatch:
    return live.LiveBatch.changes(list(ids))


async def test_a_page_hears_what_came_before_it_listened_first_and_in_order() -> None:
    page = live.Subscription(_Feed())
    first, second, third = _batch(1), _batch(2), _batch(3)
    page.offer(first)
    page.offer(second)
    await _settled()
    socket = _Recorder()
    page.hear(socket)
    page.offer(third)
    await _settled()
    assert socket.sent == [first, second, third]


async def test_a_page_that_cannot_be_sent_to_leaves_the_others_theirs() -> None:
    feed = _Feed()
    broken, fine = live.Subscription(feed), live.Subscription(feed)
    lost, heard = _Recorder(failing=True), _Recorder()
    broken.hear(lost)
    fine.hear(heard)
    await _settled()
    batch = _batch(7)
    live_pages.deliver([(broken, batch), (fine, batch)])
    await _settled()
    live_pages.deliver([(broken, _batch(8)), (fine, _batch(8))])
    await _settled()
    assert [b.ids for b in heard.sent] == [(7,), (8,)]
    assert broken.closed  # given up after its send failed


async def test_a_page_whose_send_failed_is_not_tried_again_with_what_it_held() -> None:
    feed = _Feed()
    page = live.Subscription(feed)
    for n in (1, 2, 3):
        page.offer(_batch(n))
    await _settled()
    lost = _Recorder(failing=True)
    page.hear(lost)
    await _settled()
    assert (lost.tries, feed.left) == (1, [page])


async def test_a_closed_page_hears_no_more_and_leaves_the_feed() -> None:
    feed = _Feed()
    page = live.Subscription(feed)
    socket = _Recorder()
    page.hear(socket)
    page.offer(_batch(1))
    await _settled()
    page.close()
    page.offer(_batch(2))
    await _settled()
    assert [b.ids for b in socket.sent] == [(1,)]
    assert feed.left == [page]


async def test_a_page_behind_is_sent_its_newest_built_progress_and_every_unbuilt_one() -> None:
    page = live.Subscription(_Feed(), ("order-1", None))
    progress = [live.LiveProgress("order-1", seq, seq, {"seq": seq}) for seq in (3, 5, 4)]
    unbuilt = live.LiveProgress("order-1", 6, 6, None)  # the page fetches it itself
    for item in [*progress, unbuilt, live.LiveProgress("order-2", 9, 9, {})]:  # the last: not its own
        page.offer(item)
    socket = _Recorder()
    page.hear(socket)
    await _settled()
    assert [(p.seq, p.document is None) for p in socket.sent] == [(5, False), (6, True)]


async def test_items_posted_from_another_thread_reach_every_page_of_the_loop_in_order() -> None:
    feed = _Feed()
    pages = [live.Subscription(feed) for _ in range(100)]
    sockets = [_Recorder() for _ in pages]
    for page, socket in zip(pages, sockets, strict=True):
        page.hear(socket)
    batches = [_batch(n) for n in range(1, 6)]

    def watcher() -> None:  # as the feed's thread does: one post per read, for every page at once
        for batch in batches:
            live_pages.deliver([(page, batch) for page in pages])

    thread = threading.Thread(target=watcher)
    thread.start()
    thread.join()
    await _settled()
    assert all(socket.sent == batches for socket in sockets)
