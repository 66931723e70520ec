"""`SqliteWrites`: the writer seam on SQLite (see store/django/writes.py).

Every operation is one transaction on the store's one thread (BEGIN IMMEDIATE: it holds SQLite's write
lock from its first statement, so no other writer, in this process or another, comes between its read and
its write). Other processes' commits are noticed by polling `PRAGMA data_version`, which changes when
another connection commits; SQLite has no NOTIFY.
"""

from __future__ import annotations

import asyncio
import functools
from collections.abc import Awaitable, Callable, Mapping, Sequence
from datetime import datetime, timedelta
from typing import TYPE_CHECKING, Any

from django.db import connections

from flowdeck.store import spi
from flowdeck.store.django import models, queries, rows, search
from flowdeck.store.django.claimed import Answered, DjangoClaimed
from flowdeck.store.django.errors import translated
from flowdeck.store.django.tx import Tx
from flowdeck.store.django.writes import Ask, Claim, claim_order_key, claimed_ledgers, claimed_waits

if TYPE_CHECKING:
    from flowdeck.store.django.store import DjangoStore

__all__ = ["SqliteWrites"]

# How often a blocked caller looks for other processes' commits (real time).
WATCH_INTERVAL = 0.025


class SqliteWrites:
    """The store's hot operations as transactions under SQLite's write lock."""

    def __init__(self, store: DjangoStore) -> None:
        self._store = store

    # ------------------------------------------------------------------------------------ claiming

    def claim(
        self,
        served: frozenset[tuple[str, str]],
        executor_id: str,
        expiry: datetime,
        limit: int,
        now: datetime,
        order: str,
    ) -> asyncio.Future[Ask]:
        store = self._store
        claim = functools.partial(
            self._claim_in,
            served=served,
            executor_id=executor_id,
            expiry=expiry,
            limit=limit,
            now=now,
            order=order,
        )
        return asyncio.get_running_loop().run_in_executor(
            store._pool, store._in_transaction, "claim_ready", claim
        )

    def _claim_in(
        self,
        tx: Tx,
        served: frozenset[tuple[str, str]],
        executor_id: str,
        expiry: datetime,
        limit: int,
        now: datetime,
        order: str,
    ) -> Ask:
        """The claim in the store's IMMEDIATE transaction; when it found nothing, the next wake-up instant
        and the data version the caller's wait then watches."""
        if limit <= 0 or not served:
            return Ask([], now)
        params: dict[str, Any] = {"now": now, "limit": limit}
        served_sql = queries.served_predicate(sorted(served), params)
        ids = [r[0] for r in tx.all(queries.CLAIM_READY, params, served=served_sql, order=order)]
        if not ids:
            (next_wake,) = tx.one(queries.NEXT_WAKE, params, served=served_sql)
            (version,) = tx.one(queries.DATA_VERSION)
            return Ask([], now, rows.to_datetime(next_wake), version)
        claims = self._handed_over(tx, self._stamp_claims(tx, ids, executor_id, expiry, now), now)
        claims.sort(key=claim_order_key)
        return Ask(claims, now)

    def _stamp_claims(
        self, tx: Tx, ids: Sequence[str], executor_id: str, expiry: datetime, now: datetime
    ) -> list[Sequence[Any]]:
        """Claim the rows `ids` for `executor_id`, each under a fresh token; their columns."""
        (last,) = tx.one(queries.TAKE_TOKENS, {"n": len(ids)})
        stamped = []
        for i, eid in enumerate(ids):
            stamp = {"executor": executor_id, "expiry": expiry, "now": now, "id": eid}
            stamp["token"] = last - len(ids) + 1 + i
            stamped.append(tx.one(queries.STAMP_CLAIM, stamp))
        return stamped

    def _handed_over(self, tx: Tx, claimed: Sequence[Sequence[Any]], now: datetime) -> list[Claim]:
        """What a claim hands over for each claimed row: its waits (and which are satisfied at `now`), its
        fields and its history, read in the claim's transaction."""
        ids = [r[0] for r in claimed]
        waits, satisfied = claimed_waits(tx, ids, now)
        fields, histories = claimed_ledgers(self._store.using, ids)
        return [
            Claim(
                rows.execution_state(r, waits.get(r[0], {})),
                frozenset(satisfied.get(r[0], ())),
                int(r[6]),
                (fields.get(r[0], {}), histories.get(r[0], [])),
            )
            for r in claimed
        ]

    async def start_listening(self) -> None:
        """Nothing to start: a blocked caller watches the data version itself (`commits_elsewhere`)."""

    def commits_elsewhere(self, ask: Ask) -> Callable[[], Awaitable[None]] | None:
        seen = ask.data_version
        return None if seen is None else functools.partial(self._watch_data_version, seen)

    async def _watch_data_version(self, seen: int) -> None:
        """Return once another connection (another process) has committed."""
        store = self._store
        while True:
            await asyncio.sleep(WATCH_INTERVAL)
            # outside a transaction: an IMMEDIATE one would take the write lock just to read a counter
            (version,) = await store._submit("watch", self._data_version)
            if version != seen:
                return

    def _data_version(self) -> Any:
        using = self._store.using
        with translated("watch", using):
            connection = connections[using]
            with connection.cursor() as cursor:
                cursor.execute(queries.DATA_VERSION.text("sqlite"), {})
                return cursor.fetchone()

    def notify(self, tx: Tx, *, registration: bool) -> None:
        """Nothing to send: other processes' callers see the commit in their data version watch."""

    # ------------------------------------------------------------------------------------ writes

    async def create(
        self,
        execution_id: str,
        flow_id: str,
        hash: str,
        status: spi.Status,
        event: spi.Event,
        fields: Mapping[str, spi.FieldData] | None,
        now: datetime,
    ) -> bool:
        store = self._store

        def work(tx: Tx) -> bool:
            if not tx.create_execution(execution_id, flow_id, hash, status, event, fields, now):
                tx.rollback()
                return False
            store._wake_after_commit(tx)
            return True

        return await store._run("create_execution_if_absent", work)

    async def create_claimed(
        self, params: dict[str, Any], fields: Mapping[str, spi.FieldData] | None, events: Sequence[spi.Event]
    ) -> Sequence[Any] | None:
        """The claimed row (serial and token reserved together), its seed fields, its Created event and those
        following it; the row's columns, or None (rolled back) when the id exists."""

        def work(tx: Tx) -> Sequence[Any] | None:
            (last,) = tx.one(queries.TAKE_TOKENS, {"n": 2})
            found = tx.one(queries.CREATE_CLAIMED, {**params, "serial": last - 1, "token": last})
            if found is None:
                tx.rollback()
                return None
            tx.insert_seeds(params["id"], fields)
            tx.insert_events(params["id"], 1, events)
            return found

        return await self._store._run("create_claimed_if_absent", work)

    async def signal(
        self, execution_id: str, name: str, value: spi.FieldData, event: spi.Event, now: datetime
    ) -> spi.SignalOutcome:
        return await self._store._signal_in_transaction(execution_id, name, value, event, now)

    async def signal_and_claim(
        self,
        execution_id: str,
        name: str,
        value: spi.FieldData,
        event: spi.Event,
        now: datetime,
        executor_id: str,
        expiry: datetime,
    ) -> tuple[spi.SignalOutcome, Claim | None]:
        """`signal`'s transaction, then the claim's pieces (`_stamp_claims`, `_handed_over`) for the one row
        when the delivery made it ready for its deliverer (BEGIN IMMEDIATE already excludes every other
        writer); pollers are woken only when it claimed nothing."""
        store = self._store

        def work(tx: Tx) -> tuple[spi.SignalOutcome, Claim | None]:
            outcome = store._deliver_in(tx, execution_id, name, value, event, now)
            if not isinstance(outcome, spi.Delivered):
                return outcome, None
            if tx.one(queries.DELIVERY_CLAIMABLE, {"id": execution_id, "name": name, "now": now}) is None:
                store._wake_after_commit(tx)
                return outcome, None
            claimed = self._stamp_claims(tx, [execution_id], executor_id, expiry, now)
            [claim] = self._handed_over(tx, claimed, now)
            return outcome, claim

        return await store._run("signal_and_claim", work)

    async def get_execution(self, execution_id: str) -> spi.ExecutionState | None:
        using = self._store.using

        def work(tx: Tx) -> spi.ExecutionState | None:
            found = search.states_in(using, [execution_id], models.Execution.objects.using(using))
            return found[0] if found else None

        return await self._store._run("get_execution", work)

    # ------------------------------------------------------------------------------------ under a claim

    async def append_event(self, handle: DjangoClaimed, events: Sequence[spi.Event]) -> spi.WriteOutcome:
        def work(tx: Tx, now: datetime) -> Answered[spi.WriteOutcome]:
            opened = handle._accept(tx, now, events)
            if opened is None:
                return spi.WriteOutcome.CLAIM_LOST, None
            tx.insert_events(handle._id, opened.first_seq, opened.events)
            return spi.WriteOutcome.APPLIED, opened.cancel

        return await handle._write("append_event", work)

    async def record_wait(
        self, handle: DjangoClaimed, path: str, wake: spi.Wake, events: Sequence[spi.Event]
    ) -> spi.WriteOutcome:
        def work(tx: Tx, now: datetime) -> Answered[spi.WriteOutcome]:
            opened = handle._accept(tx, now, events)
            if opened is None:
                return spi.WriteOutcome.CLAIM_LOST, None
            wait = {"id": handle._id, **rows.wait_columns(path, wake)}
            tx.execute(queries.INSERT_WAIT_IF_ABSENT, wait)
            tx.insert_events(handle._id, opened.first_seq, opened.events)
            return spi.WriteOutcome.APPLIED, opened.cancel

        return await handle._write("record_wait", work)

    async def renew_claim(self, handle: DjangoClaimed, lease: timedelta) -> bool:
        def work(tx: Tx, now: datetime) -> Answered[bool]:
            found = tx.one(queries.RENEW_CLAIM, {**handle._key(now), "expiry": now + lease})
            if found is None:
                return False, None
            return True, (bool(found[0]), found[1] or "")

        return await handle._write("renew_claim", work)

    async def record_progress(
        self,
        handle: DjangoClaimed,
        path: str,
        value: spi.FieldData | None,
        events: Sequence[spi.Event],
        extra_fields: Mapping[str, spi.FieldData] | None,
        clear_cancel: bool,
    ) -> spi.ProgressOutcome:
        def work(tx: Tx, now: datetime) -> Answered[spi.ProgressOutcome]:
            return handle._progress_in(tx, now, path, value, events, extra_fields, clear_cancel)

        return await handle._write("record_progress", work)

    async def finish(
        self, handle: DjangoClaimed, outcome: spi.ClaimOutcome, preceding: Sequence[spi.Event]
    ) -> spi.StatusOutcome:
        return await handle._finish_in_transaction(outcome, preceding)

    # ------------------------------------------------------------------------------------ lifecycle

    def close(self) -> None:
        """Nothing beside the store's thread to stop."""

    async def aclose(self) -> None:
        """Nothing belongs to the loop."""
