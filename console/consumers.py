"""The console's websocket: one connection per open page, fed by the process's one live feed.

`/ws/live/?execution=ID` (or `?workflow=ID`, or neither for everything) with `&after=N`, the id of the last
event the page saw (the page renders it; a reconnecting page sends the last one it heard). The consumer
first sends what happened after N, then every new event as it is read, each once, the events of one read
in one message (`{"type": "events", "events": [...]}`). A page of one execution
is also sent that execution's progress (`{"type": "progress", execution_id, id, seq, progress}`, the
document `…/diagram?format=json` answers, or null when the page must fetch it), and each live event it
hears says `progress_follows` (replayed ones do not: the page fetches once). Anonymous connections are
refused at the handshake, and an open socket is closed (4401) once its session ends: a logout, an expiry,
a deactivated user (`socket_sessions`). A filter no store could match (a NUL, an id breaking the id
rule that names no execution) or an `after` that is no whole number is refused before it reaches the
store: the socket is accepted and closed at once with `REFUSED` and a reason saying which parameter and
why.
"""

from __future__ import annotations

from typing import Any

from channels.generic.websocket import AsyncJsonWebsocketConsumer
from django.http import QueryDict

from flowdeck.console import live, refusals, socket_sessions
from flowdeck.engine import ids

__all__ = ["LiveConsumer"]

# Close code for a refused handshake (the 4000s are the application's; 4401 reads as "unauthorised").
UNAUTHORISED = 4401
REFUSED = 4400  # a query parameter the socket cannot take (the reason says which, and why)
_REASON_BYTES = 123  # the most a close frame's reason may hold


class LiveConsumer(AsyncJsonWebsocketConsumer):
    """Sends `{"type": "events", "events": [{"type": "event", id, execution_id, workflow_id, seq, kind},
    …]}`, each read's matching events in one message (and an execution's progress, see the module's
    docstring)."""

    subscription: live.Subscription | None = None

    async def connect(self) -> None:
        user = self.scope.get("user")
        if user is None or not user.is_authenticated:
            await self.close(code=UNAUTHORISED)  # before accept: the handshake is refused (HTTP 403)
            return
        query = QueryDict(self.scope.get("query_string", b""))
        try:
            self.execution_id = await _filter(query, "execution")
            self.workflow_id = await _filter(query, "workflow")
            after = refusals.whole_number(query, "after", -1)
        except refusals.Refused as refusal:
            await self.accept()  # accepted, so that the page hears the code and the reason
            reason = str(refusal).encode()[:_REASON_BYTES].decode(errors="ignore")
            await self.close(code=REFUSED, reason=reason)
            return
        self.replayed: set[int] = set()  # sent at connect: the only ids a live batch can repeat
        self.replayed_up_to = -1
        scope = {"execution_id": self.execution_id, "workflow_id": self.workflow_id}
        self.subscription = live.feed().subscribe(**scope)
        try:
            await self.accept()
            if after >= 0:
                await self._replay(after, scope)
        except BaseException:  # a page that never hears must not hold what the feed offers it
            self.subscription.close()
            raise
        session = self.scope.get("session")  # absent only where the app is mounted without `socket_auth`
        if session is not None and session.session_key:
            self.session_key, self.user_pk = str(session.session_key), getattr(user, "pk", None)
            socket_sessions.register(self)
        self.subscription.hear(self._send_item)

    async def session_ended(self) -> None:
        """The session that opened the socket ended: hear nothing more, and close."""
        if self.subscription is not None:
            self.subscription.close()
        await self.close(code=UNAUTHORISED, reason="session ended")
        socket_sessions.unregister(self)

    async def _replay(self, after: int, scope: dict[str, str | None]) -> None:
        """What the page missed after event `after`, as the live batches say it; no progress follows (the
        page fetches it)."""
        missed = await live.events_after(after, **scope)
        if missed:
            self.replayed = {event.id for event in missed}
            self.replayed_up_to = max(self.replayed)
            many = self.execution_id is None
            said = live.changes_json(self.replayed) if many else live.batch_json(missed)
            await self.send_json(said)

    async def _send_item(self, item: live.LiveBatch | live.LiveProgress) -> None:
        """One item of the feed (the process's one sending task awaits it, `live_pages`)."""
        if isinstance(item, live.LiveProgress):
            await self.send_json(item.to_json())
            return
        await self._send(item)

    async def _send(self, batch: live.LiveBatch) -> None:
        """The batch in the feed's own encoding, unless it may repeat an event replayed at connect: the
        feed hands each event on once, so only those can come twice."""
        if batch.lowest > self.replayed_up_to:
            await self.send(text_data=batch.text)
            return
        fresh = batch.message_without(self.replayed)
        if fresh is not None:
            await self.send_json(fresh)

    async def receive_json(self, content: Any, **kwargs: Any) -> None:
        if isinstance(content, dict) and content.get("type") == "ping":
            await self.send_json({"type": "pong"})

    async def disconnect(self, code: int) -> None:
        if self.subscription is not None:
            self.subscription.close()
            socket_sessions.unregister(self)


async def _filter(query: QueryDict, key: str) -> str | None:
    """The `execution` or `workflow` filter, None when absent; `refusals.Refused` for text no store holds,
    or for an id that breaks the id rule and names nothing (an id written before the rule still
    works)."""
    value = query.get(key)
    if value is None:
        return None
    refusals.check_text(key, value)
    problem = ids.id_problem(value)
    if problem is not None:
        if key == "execution":
            found = await live.exists(execution_id=value)
        else:
            found = await live.exists(workflow_id=value)
        if not found:
            raise refusals.Refused(key, problem)
    return value
