"""Writes that join the caller's transaction: a start, a signal, a cancel request, a resume or an end made
inside the caller's `transaction.atomic()` on the store's database, on the caller's own connection and thread.

Everything else the store does runs on its own threads and connections, committed on its own. These run
synchronously, in a savepoint of the caller's atomic block, through the same `Tx` and the same statements
(`queries.CREATE_EXECUTION`, the delivery of `DjangoStore._deliver_in`, the cancel request of
`DjangoStore._request_cancel_in`, `operator_writes`), so they commit or roll back with the caller's rows:
rolled back, no execution, delivery, request, resume or end exists; committed, the pollers are woken at
that commit (a NOTIFY sent inside the transaction on PostgreSQL, the hub bumped by `on_commit`), never
before. A refusal (a duplicate id, an input already delivered) rolls back its savepoint only, so the caller's
transaction goes on. The row the signal reads is read the same way, so a start and a signal of one
execution may share one transaction.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator, Mapping
from contextlib import contextmanager
from typing import TYPE_CHECKING, TypeVar

from django.db import connections, transaction

from flowdeck.store import spi
from flowdeck.store.django import models, operator_writes, search
from flowdeck.store.django.errors import translated
from flowdeck.store.django.tx import Tx

if TYPE_CHECKING:
    from flowdeck.store.django.store import DjangoStore

__all__ = ["CallerTransaction", "caller_transaction"]

T = TypeVar("T")


def caller_transaction(store: DjangoStore) -> CallerTransaction | None:
    """The caller's transaction on the store's database, when this thread is inside an atomic block
    there; None in autocommit (then the store's ordinary writes apply)."""
    if not transaction.get_connection(store.using).in_atomic_block:
        return None
    return CallerTransaction(store)


class CallerTransaction:
    """The store's start, signal, cancel request, resume and end, and the one read they need, on the calling
    thread's connection inside its atomic block. Blocking: call it from synchronous code only."""

    def __init__(self, store: DjangoStore) -> None:
        self._store = store

    @property
    def using(self) -> str:
        return self._store.using

    @property
    def vendor(self) -> str:
        return self._store.vendor

    def create_execution_if_absent(
        self,
        execution_id: str,
        flow_id: str,
        hash: str,
        status: spi.Status,
        event: spi.Event,
        fields: Mapping[str, spi.FieldData] | None = None,
    ) -> bool:
        """`FlowStore.create_execution_if_absent`, in the caller's transaction."""
        store = self._store
        now = store.clock.now()

        def work(tx: Tx) -> bool:
            if not tx.create_execution(execution_id, flow_id, hash, status, event, fields, now):
                tx.rollback()  # the savepoint: drops a reserved token, keeps the caller's writes
                return False
            store._wake_after_commit(tx)
            return True

        return self._in_savepoint("create_execution_if_absent", work)

    def signal(
        self, execution_id: str, name: str, value: spi.FieldData, event: spi.Event
    ) -> spi.SignalOutcome:
        """`FlowStore.signal`, in the caller's transaction."""
        store = self._store
        now = store.clock.now()
        return self._in_savepoint(
            "signal", lambda tx: store._signal_in(tx, execution_id, name, value, event, now)
        )

    def request_cancel(
        self, execution_id: str, reason: str = "", actor: str | None = None
    ) -> spi.CancelOutcome:
        """`FlowStore.request_cancel`, in the caller's transaction."""
        store = self._store
        now = store.clock.now()
        return self._in_savepoint(
            "request_cancel", lambda tx: store._request_cancel_in(tx, execution_id, reason, actor, now)
        )

    def resume(self, execution_id: str, hash: str, event: spi.Event) -> spi.OperatorOutcome:
        """`FlowStore.resume`, in the caller's transaction."""
        store = self._store
        now = store.clock.now()
        return self._in_savepoint(
            "resume", lambda tx: operator_writes.resume_in(store, tx, execution_id, hash, event, now)
        )

    def end(self, execution_id: str, status: spi.Failed, event: spi.Event) -> spi.OperatorOutcome:
        """`FlowStore.end`, in the caller's transaction."""
        store = self._store
        now = store.clock.now()
        return self._in_savepoint(
            "end", lambda tx: operator_writes.end_in(store, tx, execution_id, status, event, now)
        )

    def get_execution(self, execution_id: str) -> spi.ExecutionState | None:
        """`FlowStore.get_execution` as the caller's transaction sees it (its own start included)."""
        using = self.using
        with translated("get_execution", using):
            found = search.states_in(using, [execution_id], models.Execution.objects.using(using))
        return found[0] if found else None

    def _in_savepoint(self, operation: str, work: Callable[[Tx], T]) -> T:
        with translated(operation, self.using), self._savepoint() as tx:
            return work(tx)

    @contextmanager
    def _savepoint(self) -> Iterator[Tx]:
        """A savepoint of the caller's atomic block: a failure or a refusal undoes only this write."""
        with transaction.atomic(using=self.using):
            connection = connections[self.using]
            with connection.cursor() as cursor:
                yield Tx(cursor, connection)
