"""Reading the console's websocket in tests: its events come a feed read at a time (`{"type": "events",
"events": [...]}`); these helpers hand them out one by one, in order, with the other messages between."""

from __future__ import annotations

from typing import Any

from channels.testing import WebsocketCommunicator

__all__ = ["covers", "next_event", "next_message"]

# A socket's events heard in a batch, not handed out yet: kept on the socket itself. Keyed by `id(socket)`
# they outlived it, and a later test's socket at the same address was handed an earlier test's events.
HELD = "_flowdeck_held_events"


async def next_message(socket: WebsocketCommunicator, kind: str, timeout: float = 5) -> dict[str, Any]:
    """The next message of `kind` ("event" for one event out of a batch, "progress"), skipping others."""
    held: list[dict[str, Any]] = socket.__dict__.setdefault(HELD, [])
    while True:
        if kind == "event" and held:
            return held.pop(0)
        message = await socket.receive_json_from(timeout=timeout)
        if message["type"] == "events":
            assert message["events"], "an empty batch is never sent"
            held.extend(message["events"])
        elif message["type"] == kind:
            return dict(message)


async def next_event(socket: WebsocketCommunicator, timeout: float = 5) -> dict[str, Any]:
    return await next_message(socket, "event", timeout)


def covers(changes: dict[str, Any], event_id: int) -> bool:
    """Whether a page of many executions' `changes` message names the event."""
    return any(first <= event_id <= last for first, last in changes["ids"])
