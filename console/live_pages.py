"""The live feed's pages, and the ONE task per event loop that sends them what the feed offers.

Every page of a daphne process shares one event loop. A queue and a task per page would wake 100 tasks for
a batch offered to 100 open lists (W12); here the feed's thread posts each read's items to the loop once
(one wake-up), and that loop's sending task goes through them in the order posted: each page hears its
items in order, and a page's send is awaited before the next page's begins (daphne's send only buffers).

A page hears nothing until it says so (`Subscription.hear`, once it has sent what it missed before it
connected); what came meanwhile waits in the page and goes first. Of the progress a page is sent in one
go, only the newest built one is worth painting.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import threading
import weakref
from collections import deque
from collections.abc import Awaitable, Callable, Iterable
from typing import Protocol

from flowdeck.console.live_batch import LiveBatch, Scope
from flowdeck.console.live_progress import LiveProgress

__all__ = ["Item", "Sender", "Subscription", "deliver", "newest_progress"]

log = logging.getLogger(__name__)

Item = LiveBatch | LiveProgress
Sender = Callable[[Item], Awaitable[None]]


class _Feed(Protocol):
    def unsubscribe(self, subscription: Subscription) -> None: ...


class _Hear:
    """In a loop's deliveries: from here on the page hears its items (those held go first)."""

    def __init__(self, sender: Sender) -> None:
        self.sender = sender


class Subscription:
    """One page's share of the feed, on the page's event loop. `scope`: the events the page hears; the
    execution of a one-execution scope is the one whose progress the page is sent too (its events, and
    then its progress)."""

    def __init__(self, feed: _Feed, scope: Scope = (None, None)) -> None:
        self._feed = feed
        self.scope = scope
        self.progress_of = scope[0]
        self.loop = asyncio.get_running_loop()
        self.held: list[Item] = []  # offered before the page could hear them
        self._sender: Sender | None = None
        self.closed = False

    def offer(self, item: Item) -> None:
        """Post a batch already chosen for this page's scope, or a progress (kept when it is this page's
        execution's); from any thread."""
        if isinstance(item, LiveProgress) and item.execution_id != self.progress_of:
            return
        deliver([(self, item)])

    def hear(self, sender: Sender) -> None:
        """From now on this page's items go to `sender`, those offered meanwhile first; on the page's loop."""
        deliver([(self, _Hear(sender))])

    def close(self) -> None:
        self.closed = True
        self._feed.unsubscribe(self)

    async def take(self, item: Item | _Hear) -> None:
        if self.closed:
            return
        if isinstance(item, _Hear):
            self._sender, held, self.held = item.sender, self.held, []
            for _, kept in newest_progress((self, h) for h in held):
                await self._send(kept)
        elif self._sender is None:
            self.held.append(item)
        else:
            await self._send(item)

    async def _send(self, item: Item) -> None:
        assert self._sender is not None
        if self.closed:  # a held item after a failed send: the page hears no more
            return
        try:
            await self._sender(item)
        except Exception as error:  # its socket is gone: the other pages are still owed theirs
            log.debug("a live page could not be sent to (%s); it hears no more", error)
            self.close()  # and the feed offers it nothing more


Delivery = tuple[Subscription, Item | _Hear]


class _Outbox:
    """One loop's deliveries, and the task sending them (running while any are left)."""

    def __init__(self) -> None:
        self.pending: deque[Delivery] = deque()
        self.task: asyncio.Task[None] | None = None

    def post(self, items: list[Delivery]) -> None:
        self.pending.extend(items)
        if self.task is None or self.task.done():
            self.task = asyncio.get_running_loop().create_task(self._send_all())

    async def _send_all(self) -> None:
        while self.pending:
            items = list(self.pending)
            self.pending.clear()
            for page, item in newest_progress(items):
                await page.take(item)


_outboxes: weakref.WeakKeyDictionary[asyncio.AbstractEventLoop, _Outbox] = weakref.WeakKeyDictionary()
_outboxes_lock = threading.Lock()


def _post(loop: asyncio.AbstractEventLoop, items: list[Delivery]) -> None:
    with _outboxes_lock:
        outbox = _outboxes.setdefault(loop, _Outbox())
    outbox.post(items)


def deliver(deliveries: Iterable[Delivery]) -> None:
    """Post each item to its page's loop, with ONE wake-up per loop, whatever thread this runs on
    (waking a loop from another thread writes to its self-pipe)."""
    per_loop: dict[asyncio.AbstractEventLoop, list[Delivery]] = {}
    for page, item in deliveries:
        per_loop.setdefault(page.loop, []).append((page, item))
    for loop, items in per_loop.items():
        with contextlib.suppress(RuntimeError):  # the pages' loop closed: they are leaving anyway
            loop.call_soon_threadsafe(_post, loop, items)


def newest_progress(items: Iterable[Delivery]) -> list[Delivery]:
    """`items` but, for each page, its built progress older than its newest built one (a page behind
    paints only the newest state; a progress with no document, which tells the page to fetch, stays)."""
    items = list(items)
    newest: dict[int, int] = {}
    for page, item in items:
        if isinstance(item, LiveProgress) and item.document is not None:
            newest[id(page)] = max(item.seq, newest.get(id(page), -1))
    return [
        (page, item)
        for page, item in items
        if not isinstance(item, LiveProgress) or item.document is None or item.seq >= newest[id(page)]
    ]
