"""The Django store's limited claim: concurrency limits decided in the claim's own atomic step.

A version whose workflow declares limits (`WorkflowMeta.concurrency`, learned from `put_workflow`, which every
engine calls for each version it serves before it claims) is claimed here, never by the one-statement claim
of the hot path, which thus costs an unlimited project nothing.

PostgreSQL: ONE statement through group commit, as the unlimited claim (`PostgresWrites.claim_limited`:
`concurrency_queries.CLAIM_LIMITED_AT_ONCE`, a call of `flowstore_claim_limited`, migration 0019). The
function takes an advisory lock per limited workflow (sorted, so two claimers never wait on each other in a
cycle; the transaction's, so it goes with the commit), then reads the ready rows with room in claim order,
each with its key's and its workflow's holders (`LIMITED_CANDIDATES`, a statement whose snapshot is taken
after the locks, so it sees every earlier claimer's commit), takes them in order while their groups have
room (`concurrency.Room`'s rule, in PL/pgSQL) and stamps them, handing over each row's waits, fields and
history (`LIMITED_STAMP`).

SQLite: one transaction on the store thread (`claim_in`), whose IMMEDIATE write lock already excludes every
other writer: the slots held per workflow (`WORKFLOW_SLOTS_HELD`), the ready rows with room
(`CLAIM_LIMITED`), each taken while its groups have room (`concurrency.Room`), stamped (`STAMP_LIMITED`).

A dead worker's slot frees as its lease lapses: a holder is a row under a live lease (`store.concurrency`).
An ending gives its slot back with the write that records it, which also wakes the pollers (the ending's
statement NOTIFYs on PostgreSQL; `DjangoClaimed._finish_in` on both).
"""

from __future__ import annotations

import functools
from collections.abc import Callable, Mapping, Sequence
from datetime import datetime
from typing import TYPE_CHECKING, Any, TypeVar

from flowdeck.store import concurrency, spi
from flowdeck.store.django import concurrency_queries, queries, rows
from flowdeck.store.django.postgres import PostgresWrites
from flowdeck.store.django.tx import Tx
from flowdeck.store.django.writes import Ask, Claim, claim_order_key, claimed_ledgers, claimed_waits

if TYPE_CHECKING:
    from flowdeck.store.django.store import DjangoStore

__all__ = ["ConcurrencyReads", "ask", "claim_in", "limited_versions"]


def limited_versions(info: spi.WorkflowInfo) -> set[tuple[str, str]]:
    """The served pair of a version that declares limits (nothing for one without)."""
    return {(info.id, info.structural_hash)} if info.meta.concurrency is not None else set()


async def ask(
    store: DjangoStore,
    served: frozenset[tuple[str, str]],
    executor_id: str,
    expiry: datetime,
    limit: int,
    now: datetime,
    order: str,
) -> Ask:
    """A claim serving limited versions (or versions not judged yet): theirs where the slots are counted
    (PostgreSQL: one statement, `PostgresWrites.claim_limited`; SQLite: a transaction, `claim_in`), then the
    others' on the hot path with what is left of `limit`."""
    for pair in served - store._limited.keys():
        info = await store.get_workflow(*pair)
        store._limited[pair] = info is not None and bool(limited_versions(info))
    limited = frozenset(pair for pair in served if store._limited[pair])
    work = functools.partial(
        claim_in, served=limited, executor_id=executor_id, expiry=expiry, limit=limit, now=now, order=order
    )
    if not limited:
        asked = Ask([], now)
    elif isinstance(store._writes, PostgresWrites):
        asked = await store._writes.claim_limited(limited, executor_id, expiry, limit, now, order)
    else:
        asked = await store._run("claim_ready", work)
    rest = served - limited
    if not rest or len(asked.claims) >= limit:
        return asked
    other = await store._writes.claim(rest, executor_id, expiry, limit - len(asked.claims), now, order)
    wakes = [w for w in (asked.next_wake, other.next_wake) if w is not None]
    claims = sorted([*asked.claims, *other.claims], key=claim_order_key)
    return Ask(claims, now, min(wakes, default=None), other.data_version or asked.data_version)


def claim_in(
    tx: Tx,
    served: frozenset[tuple[str, str]],
    executor_id: str,
    expiry: datetime,
    limit: int,
    now: datetime,
    order: str,
) -> Ask:
    """SQLite: claim up to `limit` ready rows of the limited `served` versions within their limits, in the
    store's IMMEDIATE transaction; when none, the next instant one may come ready with no write (a lease
    lapsing, a sleep coming due) and the data version the caller's wait watches."""
    if limit <= 0 or not served:
        return Ask([], now)
    flows = sorted({flow_id for flow_id, _ in served})
    params: dict[str, Any] = {"now": now, "limit": limit * concurrency_queries.SCAN}
    room = concurrency.Room()
    held = tx.all(concurrency_queries.WORKFLOW_SLOTS_HELD, params, flows=queries.in_list("wf", flows, params))
    for flow_id, count in held:
        room.held[concurrency.Group(flow_id)] = int(count)
    candidates = tx.all(
        concurrency_queries.CLAIM_LIMITED,
        params,
        served=queries.served_predicate(sorted(served), params),
        full=_full(held, params),
        order=order.replace("e.", "s."),
    )
    chosen = _chosen(room, candidates, limit)
    stamped = _stamp(tx, chosen, executor_id, expiry, now)
    if not stamped:
        (next_wake,) = tx.one(
            queries.NEXT_WAKE, params, served=queries.served_predicate(sorted(served), params)
        )
        (version,) = tx.one(queries.DATA_VERSION)
        return Ask([], now, rows.to_datetime(next_wake), version)
    claims = _handed_over(tx, stamped, now)
    claims.sort(key=claim_order_key)
    return Ask(claims, now)


def _full(held: Sequence[Sequence[Any]], params: dict[str, Any]) -> str:
    """`CLAIM_LIMITED`'s `{full}`: the rows under a workflow limit their workflow's holders already fill."""
    terms = []
    for i, (flow_id, count) in enumerate(held):
        params[f"ff{i}"], params[f"fh{i}"] = flow_id, int(count)
        terms.append(
            f"(e.flow_id = %(ff{i})s AND e.concurrency_limit > 0 AND e.concurrency_limit <= %(fh{i})s)"
        )
    return "(" + " OR ".join(terms) + ")" if terms else "FALSE"


def _chosen(room: concurrency.Room, candidates: Sequence[Sequence[Any]], limit: int) -> list[str]:
    """The candidates this claim takes, in order, each while its groups have room."""
    chosen: list[str] = []
    for eid, flow_id, flow_limit, key, per_key, key_held in candidates:
        limits = rows.limits_of_row(flow_limit, key, per_key)
        if limits is not None and limits.key is not None and limits.per_key:
            group = concurrency.Group(flow_id, limits.key)
            if group not in room.held:
                room.held[group] = int(key_held)
        if room.admit(flow_id, limits):
            chosen.append(eid)
            if len(chosen) >= limit:
                break
    return chosen


def _stamp(
    tx: Tx, ids: Sequence[str], executor_id: str, expiry: datetime, now: datetime
) -> list[Sequence[Any]]:
    """Claim the chosen rows, each under a fresh token; the columns of those still free."""
    if not ids:
        return []
    (last,) = tx.one(queries.TAKE_TOKENS, {"n": len(ids)})
    first = last - len(ids) + 1
    stamped = []
    for i, eid in enumerate(ids):
        found = tx.one(
            concurrency_queries.STAMP_LIMITED,
            {"executor": executor_id, "expiry": expiry, "now": now, "id": eid, "token": first + i},
        )
        if found is not None:
            stamped.append(found)
    return stamped


def _handed_over(tx: Tx, claimed: Sequence[Sequence[Any]], now: datetime) -> list[Claim]:
    """Each claimed row with its waits (and which are satisfied at `now`) and its ledger (fields, history),
    read in the claim's transaction, so the attempt starts with no read of its own."""
    ids = [r[0] for r in claimed]
    waits, satisfied = claimed_waits(tx, ids, now)
    fields, histories = claimed_ledgers(tx.connection.alias, ids)
    return [
        Claim(
            rows.execution_state(r, waits.get(r[0], {})),
            frozenset(satisfied.get(r[0], ())),
            int(r[6]),
            (fields.get(r[0], {}), histories.get(r[0], [])),
        )
        for r in claimed
    ]


# ------------------------------------------------------------------------------------------ reads

R = TypeVar("R")


class ConcurrencyReads:
    """`ConcurrencyContract` for `DjangoStore` to inherit (`_run` and `now` are the store's): the limited
    executions read once, judged by `store.concurrency`'s functions, as the memory store judges its rows."""

    async def _run(self, operation: str, work: Callable[[Tx], R]) -> R:
        raise NotImplementedError

    def now(self) -> datetime:
        raise NotImplementedError

    async def queue_of(self, execution_id: str) -> concurrency.Queued | None:
        flow = " AND e.flow_id = (SELECT x.flow_id FROM flowstore_execution x WHERE x.id = %(id)s)"
        items = await self._run("queue_of", lambda tx: _slotted(tx, self.now(), flow, {"id": execution_id}))
        return concurrency.queue_of(execution_id, items)

    async def queues_of(self, execution_ids: Sequence[str]) -> Mapping[str, concurrency.Queued]:
        ids = list(dict.fromkeys(execution_ids))
        if not ids:
            return {}
        params = {f"id{n}": eid for n, eid in enumerate(ids)}
        named = ", ".join(f"%({name})s" for name in params)
        flow = f" AND e.flow_id IN (SELECT x.flow_id FROM flowstore_execution x WHERE x.id IN ({named}))"
        items = await self._run("queues_of", lambda tx: _slotted(tx, self.now(), flow, params))
        return concurrency.queues_of(ids, items)

    async def limit_counts(
        self, workflow_id: str | None = None, busiest: int = 10
    ) -> Sequence[concurrency.GroupCount]:
        flow = "" if workflow_id is None else " AND e.flow_id = %(flow_id)s"
        params = {"flow_id": workflow_id}
        items = await self._run("limit_counts", lambda tx: _slotted(tx, self.now(), flow, params))
        return concurrency.group_counts(items, busiest)


def _slotted(tx: Tx, now: datetime, flow: str, params: dict[str, Any]) -> list[concurrency.Slotted]:
    found = tx.all(concurrency_queries.SLOTTED, {**params, "now": now}, flow=flow)
    items = []
    for eid, flow_id, limit, key, per_key, holds, queued, priority, created in found:
        limits = rows.limits_of_row(limit, key, per_key)
        assert limits is not None  # the statement reads limited rows only
        created_at = rows.to_datetime(created)
        assert created_at is not None
        items.append(
            concurrency.Slotted(eid, flow_id, limits, bool(holds), bool(queued), int(priority), created_at)
        )
    return items
