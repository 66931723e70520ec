"""The in-memory store: a real `FlowStore`, shipped for tests, `run_local` and the conformance suite.

Every write is one transition on `MemoryData`, made synchronously (no await inside) under a lock, so no
other caller ever sees half of it: the verb first judges the row, and either refuses (changing nothing and
waking nobody) or applies all of its changes and bumps the change generation (all but
`create_claimed_if_absent` and a claiming `signal_and_claim`, whose row nobody else may claim yet).
Blocking polls wait on that generation, so one write wakes every one of them, and a write made before a
poll began never does.
"""

from __future__ import annotations

import dataclasses
import threading
from collections.abc import Collection, Mapping, Sequence
from dataclasses import dataclass, field
from datetime import datetime, timedelta

from flowdeck.store import (
    claim_order,
    concurrency,
    counts,
    deferral,
    feed,
    field_terms,
    heartbeats,
    memory_node_stats,
    memory_purge,
    memory_reads,
    node_stats,
    rate_limits,
    rules,
    schedules,
    spi,
)
from flowdeck.store import memory_readiness as readiness
from flowdeck.store.clock import SYSTEM_CLOCK, Clock
from flowdeck.store.memory_claimed import MemoryClaimed, released
from flowdeck.store.memory_concurrency import MemoryConcurrency
from flowdeck.store.memory_rate_limits import MemoryRateLimits
from flowdeck.store.memory_schedules import MemorySchedules
from flowdeck.store.wake_hub import Asked, WakeHub, poll, wait_for_change

__all__ = ["MemoryData", "MemoryStore"]


@dataclass
class MemoryData:
    """Everything the store holds; tests may read it (and should write it only through the store)."""

    executions: dict[str, spi.ExecutionState] = field(default_factory=dict)
    fields: dict[str, dict[str, spi.FieldData]] = field(default_factory=dict)
    events: dict[str, list[spi.Event]] = field(default_factory=dict)
    # the valueless-progress marks, kept apart from fields because the write-once rule differs
    progress: dict[str, set[str]] = field(default_factory=dict)
    # every version of every workflow, by hash in registration order, and which one is the latest
    workflows: dict[str, dict[str, spi.WorkflowInfo]] = field(default_factory=dict)
    latest: dict[str, str] = field(default_factory=dict)
    # one global counter, so every claim token is unique and greater than any before it
    next_token: int = 1
    # the event feed: (execution id, seq) of every event in append order, its id the position + 1
    feed: list[tuple[str, int]] = field(default_factory=list)
    # when each (workflow id, hash) was first registered, and each executor's latest heartbeat
    registered: dict[tuple[str, str], datetime] = field(default_factory=dict)
    heartbeats: dict[str, heartbeats.RecordedHeartbeat] = field(default_factory=dict)
    # schedules by name, and each one's ticks by instant (store/memory_schedules.py)
    schedules: dict[str, schedules.Schedule] = field(default_factory=dict)
    ticks: dict[str, dict[datetime, schedules.Tick]] = field(default_factory=dict)
    # rate limits' buckets by (limit, key) (store/memory_rate_limits.py)
    buckets: dict[tuple[str, str], rate_limits.Bucket] = field(default_factory=dict)


class MemoryStore(MemorySchedules, MemoryConcurrency, MemoryRateLimits, spi.FlowStore):
    """A `FlowStore` whose state lives in one `MemoryData`. `reset()` empties it."""

    def __init__(self, clock: Clock = SYSTEM_CLOCK) -> None:
        self.clock = clock
        self.data = MemoryData()
        self._lock = threading.RLock()
        self._fair_share = claim_order.FairShare()
        # bumped by every successful write; its `registrations` also by every put_workflow
        self.hub = WakeHub()

    # ------------------------------------------------------------------------------------ inspection

    def reset(self) -> None:
        """Forget every execution and workflow (blocked polls are woken and find nothing)."""
        with self._lock:
            self.data = MemoryData()
            self._changed(registration=True)

    @property
    def executions(self) -> Mapping[str, spi.ExecutionState]:
        return dict(self.data.executions)

    def history(self, execution_id: str) -> list[spi.Event]:
        return list(self.data.events.get(execution_id, ()))

    # ------------------------------------------------------------------------------------ wake-ups

    @property
    def generation(self) -> int:
        return self.hub.generation

    @property
    def registrations(self) -> int:
        return self.hub.registrations

    def _changed(self, *, registration: bool = False) -> None:
        """A write landed: wake every blocked poll (broadcast), whichever loop or thread it runs on."""
        self.hub.changed(registration=registration)

    # ------------------------------------------------------------------------------------ claiming

    async def claim_ready(
        self,
        served: frozenset[tuple[str, str]],
        executor_id: str,
        lease: timedelta,
        limit: int,
        timeout: timedelta,
    ) -> Sequence[spi.Claimed]:
        async def ask() -> Asked[spi.Claimed]:
            return *self._claim(served, executor_id, lease, limit), None

        return await poll(self.hub, self.clock, timeout, ask)

    def _claim(
        self, served: frozenset[tuple[str, str]], executor_id: str, lease: timedelta, limit: int
    ) -> tuple[list[spi.Claimed], float | None]:
        """What a claim hands out, and when it hands out nothing, the poll's alarm: seconds until a served
        row comes ready with no write, if one will (read at the same instant as the claim)."""
        with self._lock:
            now = self.clock.now()
            data = self.data
            ready = self._ready_rows(served, now)
            # stable: ties keep creation order
            if self._fair_share.oldest_first():
                ready.sort(key=lambda row: row.created)
            else:
                ready.sort(key=lambda row: (-row.priority, row.created))
            rows = data.executions.values()
            ready = concurrency.within_limits(ready, rows, now, readiness.claimable)[: max(0, limit)]
            if not ready:
                # an empty claim writes nothing, so it extends no deadline it does not hand out
                wake = readiness.next_wake(rows, served, now)
                return [], None if wake is None else (wake - now).total_seconds()
            handles: list[spi.Claimed] = []
            for row in ready:
                handles.append(self._claim_row(row, executor_id, now + lease, now))
            self._changed()
            return handles, None

    def _ready_rows(self, served: frozenset[tuple[str, str]], now: datetime) -> list[spi.ExecutionState]:
        """The rows a claim could hand out at `now`, in creation order (call under the lock)."""
        fields = self.data.fields
        return [row for row in self.data.executions.values() if readiness.ready(row, served, now, fields)]

    def _take_token(self) -> int:
        token = self.data.next_token
        self.data.next_token += 1
        return token

    def _claim_row(
        self,
        row: spi.ExecutionState,
        executor_id: str,
        expiry: datetime,
        now: datetime,
        ledger: tuple[Mapping[str, spi.FieldData], Sequence[spi.Event]] | None = None,
    ) -> MemoryClaimed:
        """Claim `row` for `executor_id` under a fresh token (call under the lock); its handle."""
        token = self._take_token()
        stamped = dataclasses.replace(
            row, executor=executor_id, claim_expiry=expiry, claim_token=token, updated=now
        )
        self.data.executions[row.execution_id] = stamped
        satisfied = readiness.satisfied(stamped, now, self.data.fields)
        return MemoryClaimed(self, stamped, satisfied, token, ledger)

    # ------------------------------------------------------------------------------------ writes

    def _append(self, execution_id: str, events: Sequence[spi.Event]) -> None:
        history = self.data.events.setdefault(execution_id, [])
        for event in events:
            history.append(event.with_seq(len(history) + 1))
            self.data.feed.append((execution_id, len(history)))

    async def create_execution_if_absent(
        self,
        execution_id: str,
        flow_id: str,
        hash: str,
        status: spi.Status,
        event: spi.Event,
        fields: Mapping[str, spi.FieldData] | None = None,
    ) -> bool:
        with self._lock:
            if execution_id in self.data.executions:
                return False
            self._create(execution_id, flow_id, hash, status, event, fields)
            self._changed()
            return True

    async def create_claimed_if_absent(
        self,
        execution_id: str,
        flow_id: str,
        hash: str,
        status: spi.Status,
        event: spi.Event,
        fields: Mapping[str, spi.FieldData] | None = None,
        *,
        executor_id: str,
        lease: timedelta,
        following: Sequence[spi.Event] = (),
    ) -> spi.Claimed | None:
        with self._lock:
            if execution_id in self.data.executions:
                return None
            now = self.clock.now()
            row = self._create(execution_id, flow_id, hash, status, event, fields)
            self._append(execution_id, following)
            # No `_changed()`: the row is not ready for anybody else until its lease lapses, and a write
            # that can make nothing ready wakes nobody.
            ledger = (dict(fields or {}), list(self.data.events[execution_id]))
            return self._claim_row(row, executor_id, now + lease, now, ledger)

    def _create(
        self,
        execution_id: str,
        flow_id: str,
        hash: str,
        status: spi.Status,
        event: spi.Event,
        fields: Mapping[str, spi.FieldData] | None,
    ) -> spi.ExecutionState:
        """The new row, its seed fields and its Created event (call under the lock, the id absent)."""
        now = self.clock.now()
        row = spi.ExecutionState(
            execution_id=execution_id,
            flow_id=flow_id,
            status=status,
            executor=None,
            claim_expiry=None,
            hash=hash,
            created=now,
            updated=now,
            waits=deferral.initial_waits(event.data),
            cancel_requested=False,
            claim_token=None,
            priority=claim_order.priority_of(event.data),
            concurrency=concurrency.limits_of(event.data),
        )
        self.data.executions[execution_id] = row
        self.data.fields[execution_id] = dict(fields or {})
        self.data.progress[execution_id] = set()
        self.data.events[execution_id] = []
        self._append(execution_id, [event])
        return row

    async def signal(
        self, execution_id: str, name: str, value: spi.FieldData, event: spi.Event
    ) -> spi.SignalOutcome:
        with self._lock:
            outcome = self._deliver(execution_id, name, value, event)
            if isinstance(outcome, spi.Delivered):
                self._changed()
            return outcome

    async def signal_and_claim(
        self,
        execution_id: str,
        name: str,
        value: spi.FieldData,
        event: spi.Event,
        *,
        executor_id: str,
        lease: timedelta,
    ) -> tuple[spi.SignalOutcome, spi.Claimed | None]:
        with self._lock:
            outcome = self._deliver(execution_id, name, value, event)
            if not isinstance(outcome, spi.Delivered):
                return outcome, None
            row, now = self.data.executions[execution_id], self.clock.now()
            if not readiness.ready_by_delivery(row, name, now):
                self._changed()
                return outcome, None
            # No `_changed()`: the row is this caller's until its lease lapses, so no poll could take it.
            ledger = (dict(self.data.fields[execution_id]), list(self.data.events[execution_id]))
            return outcome, self._claim_row(row, executor_id, now + lease, now, ledger)

    def _deliver(
        self, execution_id: str, name: str, value: spi.FieldData, event: spi.Event
    ) -> spi.SignalOutcome:
        """The delivery (I3) without its wake-up (call under the lock)."""
        row = self.data.executions.get(execution_id)
        if row is None:
            return spi.AlreadyTerminal(spi.Cancelled())
        if row.status.terminal:
            return spi.AlreadyTerminal(row.status)
        fields = self.data.fields[execution_id]
        if name in fields:
            return spi.AlreadyDelivered()
        fields[name] = value
        self.data.executions[execution_id] = dataclasses.replace(row, updated=self.clock.now())
        self._append(execution_id, [event])
        return spi.Delivered()

    async def request_cancel(
        self, execution_id: str, reason: str = "", actor: str | None = None
    ) -> spi.CancelOutcome:
        with self._lock:
            row = self.data.executions.get(execution_id)
            refused = rules.cancel_refusal(row)
            if refused is not None or row is None:
                return refused or spi.AlreadyTerminal(spi.Cancelled())
            now = self.clock.now()
            write = rules.cancel_write(row, execution_id, reason, actor, now)
            self.data.executions[execution_id] = dataclasses.replace(
                row, status=write.status, cancel_requested=True, cancel_reason=write.reason, updated=now
            )
            self._append(execution_id, [write.event])
            self._changed()
            return write.answer

    async def put_workflow(self, info: spi.WorkflowInfo) -> None:
        with self._lock:
            self.data.workflows.setdefault(info.id, {})[info.structural_hash] = info
            self.data.latest[info.id] = info.structural_hash
            self.data.registered.setdefault((info.id, info.structural_hash), self.clock.now())
            self._changed(registration=True)

    # ---- operator writes

    async def resume(self, execution_id: str, hash: str, event: spi.Event) -> spi.OperatorOutcome:
        with self._lock:
            row, now = self.data.executions.get(execution_id), self.clock.now()
            refused = rules.operator_refusal(row, now)
            if refused is not None or row is None:
                return refused or spi.OperatorOutcome.NOT_FOUND
            status = rules.resumed(row.status)
            self.data.executions[execution_id] = dataclasses.replace(
                row, status=status, hash=hash, updated=now
            )
            self._append(execution_id, [event])
            self._changed()
            return spi.OperatorOutcome.APPLIED

    async def answer(
        self, execution_id: str, path: str, value: spi.FieldData | None, event: spi.Event
    ) -> spi.OperatorOutcome:
        with self._lock:
            row = self.data.executions.get(execution_id)
            refused = rules.operator_refusal(row, stopped=True)
            if refused is not None or row is None:
                return refused or spi.OperatorOutcome.NOT_FOUND
            fields, marks = self.data.fields[execution_id], self.data.progress[execution_id]
            if path in fields or path in marks:
                return spi.OperatorOutcome.ALREADY_RECORDED
            if value is not None:
                fields[path] = value
            marks.add(path)
            waits = {p: w for p, w in row.waits.items() if p != path}
            self.data.executions[execution_id] = dataclasses.replace(
                row, status=rules.answered(row.status, path), waits=waits, updated=self.clock.now()
            )
            self._append(execution_id, [event])
            self._changed()
            return spi.OperatorOutcome.APPLIED

    async def end(self, execution_id: str, status: spi.Failed, event: spi.Event) -> spi.OperatorOutcome:
        with self._lock:
            row, now = self.data.executions.get(execution_id), self.clock.now()
            refused = rules.operator_refusal(row, now)
            if refused is not None or row is None:
                return refused or spi.OperatorOutcome.NOT_FOUND
            self.data.executions[execution_id] = released(row, status=status, waits={}, updated=now)
            self._append(execution_id, [event])
            self._changed()
            return spi.OperatorOutcome.APPLIED

    # ------------------------------------------------------------------------------------ reads

    async def get_execution(self, execution_id: str) -> spi.ExecutionState | None:
        return self.data.executions.get(execution_id)

    async def list_executions(
        self,
        flow_id: str | None,
        filter: spi.ExecutionFilter.Any | None = None,
        limit: int | None = None,
        offset: int = 0,
        id_prefix: str | None = None,
        fields: Sequence[field_terms.SearchTerm] = (),
        *,
        order_by: str = "created",
        created_after: datetime | None = None,
        created_before: datetime | None = None,
        updated_after: datetime | None = None,
        updated_before: datetime | None = None,
    ) -> spi.ExecutionPage:
        by_updated = spi.check_order(order_by) == "updated"
        with self._lock:
            rows = list(self.data.executions.values())
            # copied under the lock, and only when a term needs them
            recorded = {
                r.execution_id: dict(self.data.fields.get(r.execution_id, {})) for r in rows if fields
            }
        order = {row.execution_id: i for i, row in enumerate(rows)}
        matches = [
            row
            for row in rows
            if (flow_id is None or row.flow_id == flow_id)
            and (filter is None or spi.filter_matches(filter, row))
            and (id_prefix is None or row.execution_id.startswith(id_prefix))
            and all(field_terms.term_matches(m, recorded[row.execution_id], row.status) for m in fields)
            and (created_after is None or row.created >= created_after)
            and (created_before is None or row.created < created_before)
            and (updated_after is None or row.updated >= updated_after)
            and (updated_before is None or row.updated < updated_before)
        ]
        # newest first; among equal instants, the later created first
        matches.sort(
            key=lambda row: (row.updated if by_updated else row.created, order[row.execution_id]),
            reverse=True,
        )
        start = max(0, offset)
        page = matches[start:] if limit is None or limit < 0 else matches[start : start + limit]
        return spi.ExecutionPage(items=page, total=len(matches))

    async def get_field(self, execution_id: str, name: str, tag: str | None = None) -> spi.FieldData | None:
        found = self.data.fields.get(execution_id, {}).get(name)
        if found is None or (tag is not None and found.tag != tag):
            return None
        return found

    async def get_all_fields(self, execution_id: str) -> Mapping[str, spi.FieldData]:
        return dict(self.data.fields.get(execution_id, {}))

    async def get_history(
        self, execution_id: str, limit: int | None = None, offset: int = 0
    ) -> spi.HistoryPage:
        events = list(self.data.events.get(execution_id, ()))
        rest = events[max(0, offset) :]
        if limit is None or limit < 0:
            return spi.HistoryPage(rest, False)
        # "events remain after this page", written so it cannot overflow in any language
        return spi.HistoryPage(rest[:limit], len(rest) > limit)

    async def get_workflow(self, workflow_id: str, hash: str | None = None) -> spi.WorkflowInfo | None:
        versions = self.data.workflows.get(workflow_id, {})
        wanted = self.data.latest.get(workflow_id) if hash is None else hash
        return versions.get(wanted) if wanted is not None else None

    async def list_workflows(self) -> Sequence[spi.WorkflowInfo]:
        return [self.data.workflows[wid][h] for wid, h in sorted(self.data.latest.items())]

    async def list_workflow_versions(self, workflow_id: str) -> Sequence[spi.WorkflowInfo]:
        return list(self.data.workflows.get(workflow_id, {}).values())

    # ---- what a console reads (store/memory_reads.py)

    def now(self) -> datetime:
        return self.clock.now()

    async def events_after(
        self,
        after: int,
        *,
        gaps: Collection[int] = (),
        execution_id: str | None = None,
        workflow_id: str | None = None,
        limit: int = feed.BATCH,
        with_data: bool = False,  # the events in memory carry theirs anyway
    ) -> Sequence[feed.FeedEvent]:
        with self._lock:
            return memory_reads.events_after(self.data, after, gaps, execution_id, workflow_id, limit)

    async def event_ids_after(
        self, after: int, *, gaps: Collection[int] = (), limit: int = feed.BATCH
    ) -> Sequence[int]:
        with self._lock:
            return memory_reads.event_ids_after(self.data, after, gaps, limit)

    async def latest_event_id(self) -> int:
        return len(self.data.feed)

    async def wait_for_change(self, timeout: timedelta) -> None:
        hub = self.hub
        await wait_for_change(hub, self.clock, hub.generation, hub.registrations, timeout.total_seconds())

    async def record_heartbeat(self, beat: heartbeats.Heartbeat) -> None:
        with self._lock:
            memory_reads.record_heartbeat(self.data, beat, self.clock.now())

    async def list_heartbeats(self, fresh_within: timedelta) -> Sequence[heartbeats.RecordedHeartbeat]:
        with self._lock:
            return memory_reads.list_heartbeats(self.data, self.clock.now() - fresh_within)

    async def count_by_status(self, workflow_id: str | None = None) -> Sequence[counts.StatusCount]:
        with self._lock:
            return memory_reads.count_by_status(self.data, workflow_id)

    async def count_by_version(self, workflow_id: str) -> Sequence[counts.VersionCount]:
        with self._lock:
            return memory_reads.count_by_version(self.data, workflow_id)

    async def failure_kinds(self) -> Sequence[str]:
        with self._lock:
            return memory_reads.failure_kinds(self.data)

    async def claims_by_executor(self) -> Sequence[counts.ExecutorClaims]:
        with self._lock:
            return memory_reads.claims_by_executor(self.data, self.clock.now())

    async def recent_claimers(self, within: timedelta, scan: int = 5000) -> Sequence[counts.RecentClaimer]:
        with self._lock:
            return memory_reads.recent_claimers(self.data, self.clock.now() - within, scan)

    async def count_by_code(self) -> Sequence[counts.CodeCount]:
        with self._lock:
            return memory_reads.count_by_code(self.data)

    async def activity(self, since: datetime, width: timedelta) -> Sequence[counts.ActivityBucket]:
        with self._lock:
            return memory_reads.activity(self.data, since, width, self.clock.now())

    async def waiting_longest(self, limit: int, retrying: bool = False) -> counts.WaitingPage:
        with self._lock:
            return memory_reads.waiting_longest(self.data, limit, retrying)

    async def ready_backlog(
        self, served: frozenset[tuple[str, str]], cap: int = counts.BACKLOG_CAP
    ) -> counts.Backlog:
        with self._lock:
            now = self.clock.now()
            ready = self._ready_rows(served, now)
            return memory_reads.backlog(ready, now, cap)  # the rows in creation order, as they were added

    # ---- what a workflow page reads of each node (store/memory_node_stats.py)

    async def nodes_now(
        self, workflow_id: str, scan: int = node_stats.SCAN
    ) -> Sequence[node_stats.NodeCount]:
        with self._lock:
            return memory_node_stats.nodes_now(self.data, workflow_id, scan)

    async def node_stats(
        self, workflow_id: str, recent: int = node_stats.RECENT
    ) -> Sequence[node_stats.NodeStats]:
        with self._lock:
            return memory_node_stats.node_stats_of(self.data, workflow_id, recent)

    # ---- retention (store/memory_purge.py)

    async def purge_ended(
        self,
        *,
        ended_before: datetime,
        statuses: Sequence[str] = (),
        workflow_id: str | None = None,
        limit: int,
    ) -> int:
        with self._lock:
            return memory_purge.purge_ended(self.data, ended_before, statuses, workflow_id, limit)

    async def count_purgeable(
        self, *, ended_before: datetime, statuses: Sequence[str] = (), workflow_id: str | None = None
    ) -> Sequence[counts.StatusCount]:
        with self._lock:
            return memory_purge.count_purgeable(self.data, ended_before, statuses, workflow_id)
