"""The store contract: every backend implements `FlowStore` and `Claimed`, and honours I1–I9.

The store, not the engine, decides. Every verb answers with what it did (an outcome value) rather than
raising; only a backend failure raises, as `FlowStoreError`.

The nine invariants (kyo-flow's, kept word for word in meaning):

- I1 `claim_ready` never hands the same execution to two concurrent callers.
- I2 A transition writes its status, its events and its ledger change (fields, wait rows, progress marks)
  in one transaction; no reader ever sees one without the others.
- I3 `signal` is an atomic check-and-write against both the field and the lifecycle: exactly one delivery of
  a name wins, and one arriving after the execution finished is refused.
- I4 A renewal succeeds only on an active, unexpired claim whose token is the one presented.
- I5 A terminal status (Completed, Failed, Cancelled) never reverts.
- I6 Read-your-writes within one caller.
- I7 `get_history` answers events in append order.
- I8 `claim_ready` hands out an execution exactly when it is not terminal and not Stopped, its claim is free
  or expired, the caller serves its `(flow_id, hash)`, and any of: a cancel request is outstanding, it has no
  wait rows, one of its rows is satisfied, or its claim is active and expired (it died mid-flight).
- I9 A claimed row records who holds it, until when and under which token; the token is strictly greater
  than any that row carried before. The executor id is for reporting and is never a write authority.

The acceptance rule for every write through a `Claimed` handle: it applies only if the row's claim token is
the presented one AND the store's clock is before the claim's expiry. A refused write changes nothing.

Flowdeck additions to the kyo-flow contract: the `Stopped` status (never claimed, moved only by an operator),
cancellation with a reason, the operator writes `resume`, `answer` and `end`, an id-prefix and a total on
`list_executions`, numbered history events, workflow versions, and two cost-rule affordances: every
`Claimed` write takes `preceding` events written in the same transaction, and every accepted write refreshes
`Claimed.cancel_requested` from the row it just wrote, so the engine's cancellation check costs no read.

This module holds the contract alone. The values it speaks in live one concept a module (`store.status`,
`store.wakes`, `store.events`, `store.fields`, `store.executions`, `store.filters`, `store.outcomes`,
`flowdeck.store.workflows`) and are re-exported here, so `spi.X` names every one of them.
"""

from __future__ import annotations

import abc
import asyncio
from collections.abc import Callable, Mapping, Sequence
from datetime import datetime, timedelta
from typing import TypeVar

from flowdeck.store import (
    concurrency_contract,
    console_contract,
    counts,
    node_stats,
    rate_limit_contract,
    schedule_contract,
)

# Re-exported: the names in __all__, and, as `X as X`, the codecs and `filter_matches`, which were never in
# it but which callers reach as `spi.X`.
from flowdeck.store.events import Event, EventKind, HistoryPage
from flowdeck.store.executions import ORDER_BY as ORDER_BY
from flowdeck.store.executions import ExecutionPage, ExecutionState, check_order
from flowdeck.store.field_terms import FieldMatch, SearchTerm
from flowdeck.store.field_terms import field_matches as field_matches
from flowdeck.store.field_terms import parse_field_term as parse_field_term
from flowdeck.store.fields import FieldData
from flowdeck.store.filters import ExecutionFilter, FilterParseError
from flowdeck.store.filters import filter_matches as filter_matches
from flowdeck.store.outcomes import (
    Accepted,
    AlreadyDelivered,
    AlreadyRequested,
    AlreadyTerminal,
    CancelOutcome,
    ClaimOutcome,
    Completion,
    Delivered,
    OperatorOutcome,
    ProgressOutcome,
    SignalOutcome,
    StatusOutcome,
    Stop,
    Suspended,
    Terminal,
    WriteOutcome,
)
from flowdeck.store.status import (
    Cancellation,
    Cancelled,
    Cause,
    Compensating,
    Completed,
    Failed,
    Failure,
    Running,
    Status,
    Stopped,
)
from flowdeck.store.status import cause_from_json as cause_from_json
from flowdeck.store.status import cause_to_json as cause_to_json
from flowdeck.store.status import status_from_json as status_from_json
from flowdeck.store.status import status_to_json as status_to_json
from flowdeck.store.wakes import Wake, WakeAt, WakeOnField
from flowdeck.store.wakes import wake_from_json as wake_from_json
from flowdeck.store.wakes import wake_to_json as wake_to_json
from flowdeck.store.workflows import InputInfo, NodeInfo, WorkflowInfo, WorkflowMeta

__all__ = [
    "AlreadyDelivered",
    "AlreadyRequested",
    "AlreadyTerminal",
    "Accepted",
    "Cancellation",
    "CancelOutcome",
    "Completion",
    "Cancelled",
    "Cause",
    "Claimed",
    "ClaimOutcome",
    "Compensating",
    "Completed",
    "Delivered",
    "Event",
    "EventKind",
    "ExecutionFilter",
    "ExecutionPage",
    "check_order",
    "ExecutionState",
    "Failed",
    "Failure",
    "FieldData",
    "FieldMatch",
    "FilterParseError",
    "FlowStore",
    "FlowStoreError",
    "HistoryPage",
    "InputInfo",
    "NodeInfo",
    "OperatorOutcome",
    "ProgressOutcome",
    "Running",
    "SignalOutcome",
    "Status",
    "StatusOutcome",
    "Stop",
    "Stopped",
    "Suspended",
    "Terminal",
    "Wake",
    "WakeAt",
    "WakeOnField",
    "WorkflowInfo",
    "WorkflowMeta",
    "WriteOutcome",
]


R = TypeVar("R")

# --------------------------------------------------------------------------------------------- errors


class FlowStoreError(Exception):
    """The store could not be reached or could not complete an operation.

    Not a verdict on any execution: the engine abandons the attempt and leaves the execution claimable.
    `retryable` is true when the failure is transient (connection lost, serialization failure, deadlock).
    Backends translate driver errors into this once, at their boundary, keeping `__cause__`.
    """

    def __init__(self, message: str = "", *, retryable: bool = False) -> None:
        super().__init__(message or (self.__doc__ or "").strip().splitlines()[0])
        self.retryable = retryable


# ------------------------------------------------------------------------------------------------ SPI


class Claimed(abc.ABC):
    """The handle `claim_ready` hands back: every write made while running an execution goes through it,
    and is judged against the claim token it carries (the acceptance rule in the module docstring).

    Every write takes `preceding`: events appended, in order, before the write's own event, in the same
    transaction. That is how the engine records a node's start, its value and the next boundary in one
    round trip.
    """

    @property
    @abc.abstractmethod
    def state(self) -> ExecutionState:
        """The row as it was when claimed."""

    @property
    @abc.abstractmethod
    def satisfied(self) -> frozenset[str]:
        """The paths of the wait rows the store judged satisfied when it granted this claim."""

    @property
    @abc.abstractmethod
    def cancel_requested(self) -> bool:
        """Whether a cancel was requested, as of this handle's latest accepted write (or the claim)."""

    @property
    @abc.abstractmethod
    def cancel_reason(self) -> str:
        """The reason given with the cancel request, as of this handle's latest accepted write."""

    @abc.abstractmethod
    async def append_event(self, event: Event, *, preceding: Sequence[Event] = ()) -> WriteOutcome:
        """Append to history under the claim."""

    @abc.abstractmethod
    async def record_wait(
        self, path: str, wake: Wake, event: Event, *, preceding: Sequence[Event] = ()
    ) -> WriteOutcome:
        """Put-if-absent the wait row at `path` (an existing row keeps its wake, so a replayed sleep keeps
        its deadline) and append the event either way. A rate limit's row (`rate_limits.rate_row`) is the
        exception: its wake is replaced, since a new reservation there means a start spent the old one.
        The claim is not released."""

    @abc.abstractmethod
    async def renew_claim(self, lease: timedelta) -> bool:
        """Extend the expiry to the store's now + lease (I4). False if the claim is no longer this one's."""

    @abc.abstractmethod
    async def update_status(
        self, status: Status, event: Event, *, preceding: Sequence[Event] = ()
    ) -> StatusOutcome:
        """Write a non-terminal status (and its event). A terminal one is refused with
        WRONG_SIDE_OF_TERMINAL and nothing written; so is any write to a row already terminal (I5)."""

    @abc.abstractmethod
    async def record_progress(
        self,
        path: str,
        value: FieldData | None,
        event: Event,
        *,
        preceding: Sequence[Event] = (),
        extra_fields: Mapping[str, FieldData] | None = None,
        clear_cancel: bool = False,
    ) -> ProgressOutcome:
        """In one transition: write the field at `path` (when a value is given), the `extra_fields` (each
        only if absent; used for undo notes kept with a step's result), append the events, and retire the
        wait row at `path`. `clear_cancel` also withdraws the cancel request (flag and reason): a flow that
        listened for cancellation (`on_cancel`) heard it and goes on its own way.

        Write-once per path, split by what the write carries: a value-carrying write is refused
        (ALREADY_RECORDED, nothing written) when a field already sits at `path`; a valueless write is
        refused only when a valueless progress already landed at `path`, so the store keeps a separate set
        of valueless-progress paths per execution."""

    @abc.abstractmethod
    async def finish(self, outcome: ClaimOutcome, *, preceding: Sequence[Event] = ()) -> StatusOutcome:
        """End the attempt; the only verb that makes the claim absent (clears executor, expiry, token).

        `Terminal` needs a terminal status (else WRONG_SIDE_OF_TERMINAL, nothing written, claim kept) and
        retires every wait row; `Suspended` writes no status and keeps exactly the named rows; `Stop` writes
        a `Stopped` status and retires every row.

        I2 for cancellation: `Terminal(Completed)` is refused with CANCEL_REQUESTED (nothing written, claim
        kept, `cancel_requested`/`cancel_reason` refreshed) when the row carries a cancel request, judged
        in the same atomic write as the ending itself, so a request answered Accepted can never be followed
        by Completed. Every other ending lands whatever the flag says (Cancelled and Failed end an unwind;
        Suspended leaves the row ready for the unwind, I8)."""

    async def record_atomically(
        self, path: str, body: Callable[[], R], complete: Callable[[R], Completion]
    ) -> tuple[ProgressOutcome, R]:
        """Run `body()` (sync) and record the node at `path` as `complete(result)` says, as
        `record_progress` would, in ONE transaction of the store's database on the thread that runs the
        body: the acceptance rule is judged before the body (a claim already lost runs nothing) and again
        with the record, so the body's writes on that thread's connection to the store's database commit
        if and only if the record does. An answer other than RECORDED has rolled the body's writes back;
        an exception from `body` or `complete` rolls everything back and leaves as it came.

        The default, for a store with no transaction to share (the memory store): the body in a thread,
        then `record_progress`; its effects are its own, whatever the record's answer."""
        result = await asyncio.to_thread(body)
        done = complete(result)
        *preceding, event = done.events
        outcome = await self.record_progress(
            path, done.value, event, preceding=preceding, extra_fields=done.extra_fields
        )
        return outcome, result

    async def prefetched_ledger(self) -> tuple[Mapping[str, FieldData], Sequence[Event]] | None:
        """The execution's fields and full history as they stood when the claim was granted, if the store
        read them in the claim's own round trip; None (the default) when it did not, and the engine reads
        them with `get_all_fields` and `get_history`. Cost rule: an attempt then starts with no read of its
        own. Not abstract: a store that does not prefetch need not override it."""
        return None


class FlowStore(
    console_contract.ConsoleContract,
    schedule_contract.ScheduleContract,
    rate_limit_contract.RateLimitContract,
    concurrency_contract.ConcurrencyContract,
):
    """Where executions live. Readers and the writes anybody may make; running writes are on `Claimed`."""

    @abc.abstractmethod
    async def claim_ready(
        self,
        served: frozenset[tuple[str, str]],
        executor_id: str,
        lease: timedelta,
        limit: int,
        timeout: timedelta,
    ) -> Sequence[Claimed]:
        """Claim up to `limit` ready executions (I8) of the served `(flow_id, hash)` pairs, oldest created
        first, each under a fresh token (I9) expiring at the store's now + lease (I1: never the same row to
        two callers).

        Blocks up to `timeout` (on monotonic time) while nothing is ready; any write that could make a row
        ready wakes every blocked caller; a write made before the call began does not. An empty answer is
        never proof that nothing happened: at the deadline the store asks once more, since a sleep can come
        due and a lease can lapse with no write."""

    @abc.abstractmethod
    async def create_execution_if_absent(
        self,
        execution_id: str,
        flow_id: str,
        hash: str,
        status: Status,
        event: Event,
        fields: Mapping[str, FieldData] | None = None,
    ) -> bool:
        """Create the row, its Created event and its seed fields in one transition. An existing id is left
        untouched (history included) and answers False."""

    @abc.abstractmethod
    async def create_claimed_if_absent(
        self,
        execution_id: str,
        flow_id: str,
        hash: str,
        status: Status,
        event: Event,
        fields: Mapping[str, FieldData] | None = None,
        *,
        executor_id: str,
        lease: timedelta,
        following: Sequence[Event] = (),
    ) -> Claimed | None:
        """`create_execution_if_absent`, with the new row already claimed by `executor_id`: in the same one
        transition the row carries a fresh token (I9) expiring at the store's now + lease, and `following`
        (the first attempt's opening, when the creator knows it) comes after Created (seq 2, 3, …). Answers
        the claim handle, whose `prefetched_ledger()` is the seed fields and [Created, *following] (the store
        knows them without a read), or None when the id exists (nothing touched, history included).

        For a process that runs the execution itself at once: no poll is needed, and none is woken, since
        nobody else may claim the row while the lease holds. A lapsed lease leaves the row ready like any
        claim that died mid-flight (I8), found by the next poll (or blocked poll's wake-up) that asks."""

    @abc.abstractmethod
    async def signal(self, execution_id: str, name: str, value: FieldData, event: Event) -> SignalOutcome:
        """Deliver an input (I3): Delivered once per name; AlreadyDelivered (value kept) after that;
        AlreadyTerminal(status) on an ended execution, writing nothing; a missing execution answers
        AlreadyTerminal(Cancelled())."""

    @abc.abstractmethod
    async def signal_and_claim(
        self,
        execution_id: str,
        name: str,
        value: FieldData,
        event: Event,
        *,
        executor_id: str,
        lease: timedelta,
    ) -> tuple[SignalOutcome, Claimed | None]:
        """`signal`, with the row claimed by `executor_id` in the same one transition when the delivery
        makes it ready for that executor: the answer is Delivered, a wait row of the execution waits on
        field `name`, its status is claimable (running or compensating: never Stopped nor ended) and no
        live claim holds it (none, or one expired at the store's now). The row then carries a fresh token
        (I9) expiring at the store's now + lease, and the handle's `prefetched_ledger()` is the record as it
        stands after the delivery (fields with the new one, full history with its event); `satisfied` is
        judged as a claim judges it. Otherwise the claim is None and the call is exactly `signal` (same
        outcome, same writes, nothing written when refused, pollers woken when delivered).

        For a process that runs the execution itself at once: a claiming delivery wakes no poller, here or
        elsewhere, since nobody else may claim the row while the lease holds; once it lapses with no
        renewal the row is ready like any claim that died mid-flight (I8)."""

    @abc.abstractmethod
    async def request_cancel(
        self, execution_id: str, reason: str = "", actor: str | None = None
    ) -> CancelOutcome:
        """Put a cancel request on the row, with a CancelRequested event (reason, actor).

        Accepted the first time, AlreadyRequested after, AlreadyTerminal(status) on an ended execution (the
        flag is not set), AlreadyTerminal(Cancelled()) for a missing one. A request on a Stopped execution
        lifts the stop (back to Running, or to Compensating(cause) when it stopped inside an unwind) so a
        worker claims it and runs the undos."""

    @abc.abstractmethod
    async def get_execution(self, execution_id: str) -> ExecutionState | None:
        """The row, or None."""

    @abc.abstractmethod
    async def list_executions(
        self,
        flow_id: str | None,
        filter: ExecutionFilter.Any | None = None,
        limit: int | None = None,
        offset: int = 0,
        id_prefix: str | None = None,
        fields: Sequence[SearchTerm] = (),
        *,
        order_by: str = "created",
        created_after: datetime | None = None,
        created_before: datetime | None = None,
        updated_after: datetime | None = None,
        updated_before: datetime | None = None,
    ) -> ExecutionPage:
        """Filter (by workflow when `flow_id` is given, by the arm, by id prefix, by every one of `fields`:
        a recorded value or a message, as `field_terms.term_matches` means it; by creation instant,
        `created_after <= created < created_before`; by last change, `updated_after <= updated <
        updated_before`, which for an ended execution is when it ended) BEFORE paging; newest first by
        `order_by` (one of `ORDER_BY`: "created" or "updated"; ties: the later created first; another word
        raises ValueError); `limit` None or negative means all; `total` counts all matches."""

    @abc.abstractmethod
    async def get_field(self, execution_id: str, name: str, tag: str | None = None) -> FieldData | None:
        """The field, or None when missing or when `tag` is given and differs from the stored tag."""

    @abc.abstractmethod
    async def get_all_fields(self, execution_id: str) -> Mapping[str, FieldData]:
        """Every field of the execution (empty for an unknown one)."""

    @abc.abstractmethod
    async def get_history(self, execution_id: str, limit: int | None = None, offset: int = 0) -> HistoryPage:
        """Events in append order (I7), each with its `seq`. `limit` None or negative means all (has_more
        False); `has_more` is "events remain after this page". Unknown execution: empty, has_more False."""

    @abc.abstractmethod
    async def put_workflow(self, info: WorkflowInfo) -> None:
        """Upsert the workflow's metadata (the latest version answers `get_workflow(id)`); every version
        stays readable by its hash. Wakes blocked pollers, whose served set may have grown."""

    @abc.abstractmethod
    async def get_workflow(self, workflow_id: str, hash: str | None = None) -> WorkflowInfo | None:
        """The latest registered version, or the version with that hash."""

    @abc.abstractmethod
    async def list_workflows(self) -> Sequence[WorkflowInfo]:
        """The latest version of every workflow, by id."""

    @abc.abstractmethod
    async def list_workflow_versions(self, workflow_id: str) -> Sequence[WorkflowInfo]:
        """Every registered version of a workflow, oldest first."""

    # ---- operator writes (Flowdeck). Each refuses a live claim, answers instead of raising.

    @abc.abstractmethod
    async def resume(self, execution_id: str, hash: str, event: Event) -> OperatorOutcome:
        """Re-pin the execution to `hash` and make it claimable again.

        Applies to a Stopped execution (its status goes back to Running, or to Compensating(cause) when it
        stopped inside an unwind) or to a non-terminal one no worker holds (a parked one). Appends `event`
        (Resumed, naming from and to hashes and the actor). CLAIM_HELD under a live claim;
        ALREADY_TERMINAL once ended; NOT_FOUND when missing."""

    @abc.abstractmethod
    async def answer(
        self, execution_id: str, path: str, value: FieldData | None, event: Event
    ) -> OperatorOutcome:
        """Record, for a Stopped execution, what the node at `path` did: the field (if a value is given)
        and a valueless mark, with the event (Answered), in one transition; the wait row at `path` retires;
        at the node it stopped at, the stop is marked answered (rules.answered). Write-once: ALREADY_RECORDED
        if `path` has a field or mark. NOT_STOPPED unless Stopped; ALREADY_TERMINAL; NOT_FOUND."""

    @abc.abstractmethod
    async def end(self, execution_id: str, status: Failed, event: Event) -> OperatorOutcome:
        """End a non-terminal execution as `status` with no unwind (a person put the world right): writes
        the status and event, retires every wait row. CLAIM_HELD under a live claim; ALREADY_TERMINAL;
        NOT_FOUND."""

    # ---- what a workflow page reads of each node (Flowdeck). Value types and folds in store/node_stats.py.

    @abc.abstractmethod
    async def nodes_now(
        self, workflow_id: str, scan: int = node_stats.SCAN
    ) -> Sequence[node_stats.NodeCount]:
        """The unended executions of `workflow_id` at each node now (`NodeCount` says what "at" means per
        state), of the newest `scan` unended executions at most, by path then state."""

    @abc.abstractmethod
    async def node_stats(
        self, workflow_id: str, recent: int = node_stats.RECENT
    ) -> Sequence[node_stats.NodeStats]:
        """Per durable path, its completions, their duration p50/p95 and its failures by kind
        (`NodeStats`), over the newest `recent` executions of `workflow_id` (newest created first, every
        version: a durable path names the same node across versions), by path; only the paths with a
        completion or a failure."""

    # ---- retention (Flowdeck). The rules and the batched loop in store/retention.py.

    @abc.abstractmethod
    async def purge_ended(
        self,
        *,
        ended_before: datetime,
        statuses: Sequence[str] = (),
        workflow_id: str | None = None,
        limit: int,
    ) -> int:
        """Delete at most `limit` ended executions (status kinds `statuses`, each one of
        `retention.ENDED`; every ended kind when empty, ValueError for another word) whose end (the row's
        `updated`, frozen once ended) is before `ended_before`, of `workflow_id` when given, kind by kind in
        `retention.ENDED` order and oldest created first within a kind, with everything that belongs to
        them (events, fields, progress marks, wait rows), in one short transaction that waits on no lock;
        answers how many went. An unended execution is never touched, however old. A purged execution is
        gone from every read (an unknown id from then on, which a new execution may take)."""

    @abc.abstractmethod
    async def count_purgeable(
        self, *, ended_before: datetime, statuses: Sequence[str] = (), workflow_id: str | None = None
    ) -> Sequence[counts.StatusCount]:
        """What `purge_ended` with these arguments would delete, all batches together: per workflow and
        status kind, by workflow then kind; only the pairs with executions. Writes nothing."""
