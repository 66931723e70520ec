"""Open websockets end with the session that opened them.

A socket's user is read once, at the handshake (`socket_auth`), so nothing else would notice a logout, an
expired session, a password change or a deactivated user while the page stays open. Two paths close it:

- **A logout in this process** (Django's `user_logged_out`): the sockets of that session close at once,
  on whichever event loop holds them.
- **Everything else** (a logout served by another process, a session expired or deleted, a user
  deactivated or whose password changed): each event loop holding sockets re-reads their sessions every
  `RECHECK`, one read per session however many sockets it opened, from the session store every process
  shares, and closes those whose session no longer authenticates the same user. This is what makes it
  hold across processes without a channel layer shared between them (the console's is in-memory).

API tokens open no socket (the handshake takes a session's cookie only), so a revoked token has none to
close. A closed socket hears `UNAUTHORISED` (4401) with the reason "session ended", the code a refused
handshake hears, so the page stops reconnecting (`console.js`) and says its session ended.
"""

from __future__ import annotations

import asyncio
import logging
from datetime import timedelta
from importlib import import_module
from typing import Any, Protocol

from channels.auth import get_user
from django.conf import settings

__all__ = ["RECHECK", "SessionSocket", "logged_out", "recheck", "register", "unregister"]

logger = logging.getLogger(__name__)

RECHECK = timedelta(seconds=10)


class SessionSocket(Protocol):
    """A socket this module may end: its handshake's session key and user id, and how it ends."""

    session_key: str
    user_pk: Any

    async def session_ended(self) -> None: ...


class _Loop:
    """The sockets one event loop holds, by session key, and the task re-reading their sessions."""

    def __init__(self) -> None:
        self.sockets: dict[str, set[SessionSocket]] = {}
        self.task: asyncio.Task[None] | None = None


_LOOPS: dict[asyncio.AbstractEventLoop, _Loop] = {}


def register(socket: SessionSocket) -> None:
    """Watch `socket` (an accepted one) until `unregister`; call on its event loop."""
    loop = asyncio.get_running_loop()
    held = _LOOPS.setdefault(loop, _Loop())
    held.sockets.setdefault(socket.session_key, set()).add(socket)
    if held.task is None:
        held.task = loop.create_task(_rechecking(held), name="socket-sessions")


def unregister(socket: SessionSocket) -> None:
    """Stop watching `socket` (it closed); the loop's task ends with its last socket."""
    loop = asyncio.get_running_loop()
    held = _LOOPS.get(loop)
    if held is None:
        return
    key = getattr(socket, "session_key", None)
    if key is None:  # never registered
        return
    same = held.sockets.get(key, set())
    same.discard(socket)
    if not same:
        held.sockets.pop(key, None)
    if not held.sockets:
        # the re-reading task ends with its last socket; when that socket is closed BY the task (a recheck),
        # the task's own loop condition ends it, as a cancel would cut the close short
        if held.task is not None and held.task is not asyncio.current_task():
            held.task.cancel()
        del _LOOPS[loop]


async def recheck() -> None:
    """Close this loop's sockets whose session no longer authenticates the user that opened them."""
    held = _LOOPS.get(asyncio.get_running_loop())
    if held is None:
        return
    store = import_module(settings.SESSION_ENGINE).SessionStore
    for key, sockets in list(held.sockets.items()):
        user = await get_user({"session": store(key)})
        for socket in list(sockets):
            if not user.is_authenticated or user.pk != socket.user_pk:
                await socket.session_ended()


async def _rechecking(held: _Loop) -> None:
    while held.sockets:
        await asyncio.sleep(RECHECK.total_seconds())
        try:
            await recheck()
        except Exception:  # a session store briefly away: the next round tries again
            logger.exception("could not re-read the sockets' sessions", extra={"action": "socket-session"})


def logged_out(sender: Any, request: Any = None, **kwargs: Any) -> None:
    """`user_logged_out`'s receiver: end this process's sockets of the session logging out, on their loops
    (the signal is sent from whichever thread serves the logout)."""
    key = getattr(getattr(request, "session", None), "session_key", None)
    if not key:
        return
    for loop, held in list(_LOOPS.items()):
        for socket in list(held.sockets.get(key, ())):
            loop.call_soon_threadsafe(lambda s=socket, at=loop: at.create_task(s.session_ended()))
