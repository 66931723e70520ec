"""An atomic node's body and its record in ONE transaction of the Django store's database.

`spi.Claimed.record_atomically` on the Django store: the body runs on one of the store's threads, inside
`transaction.atomic(using=<the store's alias>)`, so whatever it writes through that thread's connection
(the ORM on the same alias) joins the transaction that records the node. The claim fence is read before
the body (a claim already lost runs nothing) and judged again, with the same SQL every claimed write
opens with (`ACCEPT_WRITE`), in the write that records the node; any refusal or exception rolls back the
body's writes with the record. Never on PostgreSQL's group-committed async connections: those cannot
share a transaction with a user's ORM calls.

The row is locked only from the recording write to the commit, not while the body runs, so the attempt's
lease renewals (and other executions' writes batched with them) do not wait for a body. A body that outlives
the lease therefore loses: the recording write finds the claim expired and everything rolls back.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING, TypeVar

from django.db import connections, transaction

from flowdeck.store import spi
from flowdeck.store.django import queries
from flowdeck.store.django.errors import translated
from flowdeck.store.django.tx import Tx

if TYPE_CHECKING:
    from flowdeck.store.django.claimed import DjangoClaimed

__all__ = ["BodyBrokeTransaction", "run"]

R = TypeVar("R")


class BodyBrokeTransaction(RuntimeError):
    """An atomic body caught a database error and went on: the transaction can only roll back."""

    def __init__(self, path: str) -> None:
        super().__init__(
            f"{path}: the atomic body caught a database error and returned; its transaction can only roll "
            "back (catch database errors inside a nested transaction.atomic(), a savepoint)"
        )
        self.path = path


class _Raised(Exception):
    """Carries what the body (or its completion) raised out of the transaction, past the store's
    translation of database errors: a user's IntegrityError is the body's failure, not the store's."""

    def __init__(self, error: Exception) -> None:
        super().__init__(str(error))
        self.error = error


def run(
    handle: DjangoClaimed, path: str, body: Callable[[], R], complete: Callable[[R], spi.Completion]
) -> tuple[spi.ProgressOutcome, R | None, tuple[bool, str] | None]:
    """On a store thread: the fence, the body, the record, one commit. Answers the outcome, the body's
    result (None when the body did not run) and the cancel flag the recording write read."""
    using = handle._store.using
    clock = handle._store.clock
    try:
        with translated("record_atomically", using), transaction.atomic(using=using):
            connection = connections[using]
            with connection.cursor() as cursor:
                if Tx(cursor, connection).one(queries.CLAIM_HOLDS, handle._key(clock.now())) is None:
                    return spi.ProgressOutcome.CLAIM_LOST, None, None
            try:
                result = body()
                if connection.needs_rollback:
                    raise BodyBrokeTransaction(path)
                done = complete(result)
            except Exception as error:
                raise _Raised(error) from error
            with connection.cursor() as cursor:
                tx = Tx(cursor, connection)
                outcome, cancel = handle._progress_in(
                    tx, clock.now(), path, done.value, done.events, done.extra_fields
                )
            return outcome, result, cancel
    except _Raised as raised:
        raise raised.error from raised.error.__cause__
