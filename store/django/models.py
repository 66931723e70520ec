"""Flowdeck's tables.

The store reads and writes these through `store.django.queries` (hot paths, raw SQL) and the ORM (reads).
JSON is kept as text, not as a JSON column: a recorded field must come back byte for byte as it was
written (jsonb would reorder its keys), and text reads the same on PostgreSQL and SQLite.

The indexes serve `list_executions` newest first for each filter arm, and the readiness scan of
`claim_ready` (the partial `active` indexes cover only the rows that can still run). The ledger tables
(waits, fields, marks, events) have no index of their own on `execution`: their unique constraint leads
with it, and every index less is one write less per recorded node. An id-prefix search uses the
`varchar_pattern_ops` index Django gives a text primary key on PostgreSQL.
"""

from __future__ import annotations

from django.db import models
from django.db.models import Q

from flowdeck.store.counts import RETRY_MARK
from flowdeck.store.rate_limits import RATE_MARK

# The status kinds a row can carry (the `type` of `spi.status_to_json`).
RUNNING = "running"
COMPLETED = "completed"
FAILED = "failed"
COMPENSATING = "compensating"
CANCELLED = "cancelled"
STOPPED = "stopped"
TERMINAL_KINDS = (COMPLETED, FAILED, CANCELLED)
CLAIMABLE_KINDS = (RUNNING, COMPENSATING)

_ACTIVE = ~Q(status_kind__in=TERMINAL_KINDS)
# The limited executions that may hold a slot (store.concurrency): claimable, started under a limit. No column
# of a claim (claim_expiry) is in the index, so a claim's write stays a HOT update for every row.
SLOT_HOLDERS = Q(status_kind__in=CLAIMABLE_KINDS) & (
    Q(concurrency_limit__gt=0) | Q(concurrency_per_key__gt=0)
)
# A wait row that is a retry's back-off (a sleep at a path holding `counts.RETRY_MARK`): one spelling for
# the index and the queries, so that the planner can prove the partial index applies.
RETRYING = Q(kind="at", path__contains=RETRY_MARK)
# A wait row that is a node's wait for its rate limit's token (store/rate_limits.py), of one limit or any.
RATE_LIMITED = Q(kind="at", path__contains=RATE_MARK)


def rate_limited(limit: str | None) -> Q:
    return RATE_LIMITED if limit is None else Q(kind="at", path__endswith=f"{RATE_MARK}{limit}")


class Execution(models.Model):
    """One execution's row: lifecycle, claim, version, cancel flag, and the seq of its latest event."""

    id = models.CharField(primary_key=True, max_length=255)
    flow_id = models.CharField(max_length=255)
    hash = models.CharField(max_length=255)
    status = models.TextField(help_text="spi.status_to_json, as JSON text")
    status_kind = models.CharField(max_length=16)
    failure_kind = models.CharField(max_length=255, null=True, blank=True)
    stop_code = models.CharField(max_length=32, null=True, blank=True)
    cancel_requested = models.BooleanField(default=False)
    cancel_reason = models.TextField(default="", blank=True)
    executor = models.CharField(max_length=255, null=True, blank=True)
    claim_expiry = models.DateTimeField(null=True, blank=True)
    claim_token = models.BigIntegerField(null=True, blank=True)
    last_seq = models.IntegerField(default=0, help_text="seq of the newest event; the next one is +1")
    serial = models.BigIntegerField(help_text="creation order among rows created at the same instant")
    # a default in the database too: rows written by statements that name no priority (the bench's loads,
    # an older process during a rolling upgrade) get the default
    priority = models.SmallIntegerField(
        default=0, db_default=0, help_text="claimed in this order, higher first (store.claim_order)"
    )
    # the concurrency limits it runs under (store.concurrency), set from its Created event, never changed
    concurrency_limit = models.IntegerField(default=0, db_default=0, help_text="its workflow's, 0: none")
    concurrency_key = models.CharField(max_length=255, null=True, blank=True)
    concurrency_per_key = models.IntegerField(default=0, db_default=0, help_text="its key's, 0: none")
    created = models.DateTimeField()
    updated = models.DateTimeField()
    ended = models.DateTimeField(
        null=True,
        blank=True,
        help_text="when it ended: set once, by the database itself (migration 0009's trigger), to `updated` "
        "as its status turns completed, failed or cancelled",
    )

    class Meta:
        db_table = "flowstore_execution"
        # No index holds `updated` or `last_seq`, the columns every node's write changes (a partial one
        # neither: PostgreSQL judges the columns, not the predicate). That keeps the write a HOT update,
        # which touches no index at all; one such index made every write insert into all of them
        # (W1 at 100x10: 1,011 of 1,200 updates HOT without, 0 with). The list's "updated" order pays for
        # it with a sort of the rows it reads; the overview's endings per minute read `ended` instead,
        # which only the one write that ends an execution changes.
        indexes = [
            models.Index(fields=["-created", "-serial"], name="fs_exec_created"),
            models.Index(fields=["flow_id", "-created", "-serial"], name="fs_exec_flow_created"),
            models.Index(fields=["status_kind", "-created", "-serial"], name="fs_exec_kind_created"),
            # A status arm's exact total: seven distinct keys deduplicate into a small index (7 MB per
            # million rows against 80 MB for the one above), which an index-only count reads in a
            # fraction of the time (the `completed` arm of W7 at 1,000,000 rows: 150 -> 65 ms)
            models.Index(fields=["status_kind"], name="fs_exec_kind"),
            models.Index(
                fields=["flow_id", "status_kind", "-created", "-serial"], name="fs_exec_flow_kind_created"
            ),
            models.Index(
                fields=["failure_kind", "-created", "-serial"],
                name="fs_exec_failkind_created",
                condition=Q(failure_kind__isnull=False),
            ),
            models.Index(
                fields=["stop_code", "-created", "-serial"],
                name="fs_exec_stopcode_created",
                condition=Q(stop_code__isnull=False),
            ),
            models.Index(
                fields=["-created", "-serial"],
                name="fs_exec_cancelling",
                condition=Q(cancel_requested=True) & _ACTIVE,
            ),
            # `hash` rides along so that an Orphaned search filters (and counts) inside the index
            models.Index(
                fields=["-created", "-serial", "hash"], name="fs_exec_active_created", condition=_ACTIVE
            ),
            models.Index(
                fields=["flow_id", "hash", "created", "serial"],
                name="fs_exec_claimable",
                condition=Q(status_kind__in=CLAIMABLE_KINDS),
            ),
            # the claim's order by priority (store.claim_order); the one above serves its fair-share turns
            models.Index(
                fields=["flow_id", "hash", "-priority", "created", "serial"],
                name="fs_exec_claimable_priority",
                condition=Q(status_kind__in=CLAIMABLE_KINDS),
            ),
            # a limited claim's count of the slots held (store.django.concurrency): the claimed limited rows
            models.Index(
                fields=["flow_id", "concurrency_key"],
                name="fs_exec_slot_holders",
                condition=SLOT_HOLDERS,
            ),
            # The overview's reads (store.django.counts), each answered by an index-only scan. Its counts
            # by status are no scan at all: they read the status tally (migration 0010), which took the
            # place of a (flow_id, status_kind) index (W11 at 1,000,000 rows: 57-159 ms -> 1 ms).
            # failures by kind and stops by code, per workflow (104 -> 10 ms)
            models.Index(
                fields=["flow_id", "failure_kind"],
                name="fs_exec_failed_flow_kind",
                condition=Q(status_kind=FAILED),
            ),
            models.Index(
                fields=["flow_id", "stop_code"],
                name="fs_exec_stopped_flow_code",
                condition=Q(status_kind=STOPPED),
            ),
            # the day's endings per minute and per hour: a range of this index, read index-only
            models.Index(
                fields=["ended", "status_kind"], name="fs_exec_ended", condition=Q(ended__isnull=False)
            ),
        ]

    def __str__(self) -> str:
        return self.id


class Wait(models.Model):
    """A wait row: what the execution waits for at a durable path (`at` a deadline, or a field)."""

    AT = "at"
    ON_FIELD = "on_field"

    execution = models.ForeignKey(
        Execution, on_delete=models.CASCADE, related_name="wait_rows", db_index=False
    )
    path = models.CharField(max_length=1024)
    kind = models.CharField(max_length=8, choices=[(AT, "at"), (ON_FIELD, "on field")])
    at = models.DateTimeField(null=True, blank=True)
    field_name = models.CharField(max_length=1024, null=True, blank=True)

    class Meta:
        db_table = "flowstore_wait"
        constraints = [models.UniqueConstraint(fields=["execution", "path"], name="fs_wait_unique_path")]
        indexes = [
            models.Index(fields=["kind", "execution"], name="fs_wait_kind"),
            models.Index(
                fields=["field_name", "execution"],
                name="fs_wait_field",
                condition=Q(field_name__isnull=False),
            ),
            models.Index(fields=["at"], name="fs_wait_at", condition=Q(at__isnull=False)),
            # the retry back-offs alone (the overview's "retrying now" and the `retrying` filter): a few
            # rows among every sleep, which the LIKE would otherwise look for in all of them
            models.Index(fields=["execution"], name="fs_wait_retry", condition=RETRYING),
        ]


class Field(models.Model):
    """A recorded value (JSON text) beside its type tag. Written once, then it stands."""

    execution = models.ForeignKey(Execution, on_delete=models.CASCADE, related_name="fields", db_index=False)
    name = models.CharField(max_length=1024)
    value = models.TextField()
    tag = models.CharField(max_length=255)

    class Meta:
        db_table = "flowstore_field"
        constraints = [models.UniqueConstraint(fields=["execution", "name"], name="fs_field_unique_name")]


class ProgressMark(models.Model):
    """A valueless progress that landed at a path (write-once, separate from the fields)."""

    execution = models.ForeignKey(
        Execution, on_delete=models.CASCADE, related_name="progress_marks", db_index=False
    )
    path = models.CharField(max_length=1024)

    class Meta:
        db_table = "flowstore_progress"
        constraints = [models.UniqueConstraint(fields=["execution", "path"], name="fs_progress_unique_path")]


class Event(models.Model):
    """One history entry; `seq` is its 1-based position in its execution's history.

    No foreign-key constraint in the database (migration 0011): every statement that inserts events finds
    and locks their execution's row in the same statement (the claim CTE, a start, a delivery), and a
    purge deletes the ledger with its executions. The constraint re-checked each event row at commit, a
    fifth of the database's work per node in W1 (bench/PROFILE.md)."""

    execution = models.ForeignKey(
        Execution, on_delete=models.CASCADE, related_name="events", db_index=False, db_constraint=False
    )
    seq = models.IntegerField()
    flow_id = models.CharField(max_length=255, help_text="as the event was written")
    kind = models.CharField(max_length=32)
    timestamp = models.DateTimeField()
    data = models.TextField(default="{}", help_text="the kind's payload, as JSON text")

    class Meta:
        db_table = "flowstore_event"
        constraints = [models.UniqueConstraint(fields=["execution", "seq"], name="fs_event_unique_seq")]

    def __str__(self) -> str:
        return f"{self.execution_id} #{self.seq} {self.kind}"


class Workflow(models.Model):
    """A workflow id and its latest registered version."""

    id = models.CharField(primary_key=True, max_length=255)
    latest_hash = models.CharField(max_length=255)
    updated = models.DateTimeField()

    class Meta:
        db_table = "flowstore_workflow"

    def __str__(self) -> str:
        return self.id


class WorkflowVersion(models.Model):
    """One registered version of a workflow (`WorkflowInfo` as JSON text), readable by its hash."""

    workflow = models.ForeignKey(Workflow, on_delete=models.CASCADE, related_name="versions")
    hash = models.CharField(max_length=255)
    info = models.TextField()
    registered = models.DateTimeField()

    class Meta:
        db_table = "flowstore_workflow_version"
        constraints = [
            models.UniqueConstraint(fields=["workflow", "hash"], name="fs_workflow_version_unique_hash")
        ]


class TokenCounter(models.Model):
    """SQLite's claim-token counter (one row). PostgreSQL uses the sequence `flowstore_claim_token`."""

    id = models.PositiveSmallIntegerField(primary_key=True, default=1)
    value = models.BigIntegerField(default=0)

    class Meta:
        db_table = "flowstore_token_counter"


class ExecutorHeartbeat(models.Model):
    """What one worker process last said of its engine (`FlowEngine.health()`), so that a web process,
    which runs no workers, can show every executor's health (`FlowStore.record_heartbeat`)."""

    executor_id = models.CharField(primary_key=True, max_length=255)
    host = models.CharField(max_length=255, default="", blank=True)
    pid = models.IntegerField(default=0)
    started = models.DateTimeField()
    updated = models.DateTimeField(help_text="the store's clock at the latest heartbeat")
    workers_alive = models.IntegerField(default=0)
    workers_configured = models.IntegerField(default=0)
    poll_failures = models.IntegerField(default=0)
    last_poll_failure = models.TextField(null=True, blank=True)
    last_poll_failure_at = models.DateTimeField(null=True, blank=True)
    store_failures = models.IntegerField(default=0)
    claims_held = models.TextField(default="[]", help_text="execution ids, as a JSON list")

    class Meta:
        db_table = "flowstore_heartbeat"


class Schedule(models.Model):
    """A schedule (`store.schedules.Schedule`): its definition as JSON, and its run-time state."""

    name = models.CharField(primary_key=True, max_length=200)
    definition = models.TextField(help_text="ScheduleSpec.to_json(), as JSON")
    paused = models.BooleanField(default=False)
    cursor = models.DateTimeField(help_text="the newest tick the tickers have decided")
    buffered = models.DateTimeField(null=True, blank=True, help_text="a tick waiting for the previous run")
    created = models.DateTimeField()
    updated = models.DateTimeField()

    class Meta:
        db_table = "flowstore_schedule"


class ScheduleTick(models.Model):
    """What became of one tick of one schedule; one row per (schedule, tick), the first written wins."""

    schedule = models.CharField(max_length=200)
    tick = models.DateTimeField()
    outcome = models.CharField(max_length=16)
    source = models.CharField(max_length=16)
    execution_id = models.CharField(max_length=255)
    recorded = models.DateTimeField()

    class Meta:
        db_table = "flowstore_schedule_tick"
        constraints = [models.UniqueConstraint(fields=["schedule", "tick"], name="fs_schedule_tick_once")]
        indexes = [models.Index(fields=["outcome"], name="fs_schedule_tick_outcome")]


class RateBucket(models.Model):
    """One rate limit key's GCRA bucket (`store.rate_limits.Bucket`); instants as microseconds since the
    epoch, so the one statement that takes a token (`rate_limit_queries.TAKE_TOKEN`) is integer arithmetic
    on both backends."""

    name = models.CharField(max_length=200)
    key = models.CharField(max_length=200, blank=True)
    tat = models.BigIntegerField(help_text="theoretical arrival time, µs since the epoch")
    taken = models.BigIntegerField(default=0, help_text="tokens taken at once")
    reserved = models.BigIntegerField(default=0, help_text="tokens reserved for a later slot")
    window_start = models.BigIntegerField(help_text="the latest window of slot time, µs since the epoch")
    window_slots = models.BigIntegerField(default=0)
    previous_slots = models.BigIntegerField(default=0)

    class Meta:
        db_table = "flowstore_rate_bucket"
        constraints = [models.UniqueConstraint(fields=["name", "key"], name="fs_rate_bucket_key")]
