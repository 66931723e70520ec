"""Behind a connection pooler: which of the store's PostgreSQL connections may share a transaction-mode pool.

A transaction-mode pooler (PgBouncer's `pool_mode = transaction`) lends a server session for one transaction
and takes it back at the commit, so whatever a session keeps between transactions is lost or, worse, met by
another client. The store's connections, one by one (docs/pooling.md gives the whole budget):

- its threads' Django connections (reads, the transactional writes): one transaction each, nothing kept
  between them (Django prepares nothing unless `server_side_binding` is set; the store opens no cursor
  `WITH HOLD`, takes no advisory lock, makes no temporary table). Fine in transaction mode.
- group commit's async connections (`group_commit.GroupCommit`: claims, the writes under a claim, starts,
  signals): one statement or one pipelined batch per transaction, fine in transaction mode once they
  prepare nothing (a prepared statement lives in one server session; PgBouncer before 1.21, Debian
  bookworm's 1.18 among them, does not carry them across) and send no startup `options` (PgBouncer
  refuses the parameter). `transaction=True` says so.
- the wake listener (`wakeups.PostgresListener`): `LISTEN` is a session's state and notifications arrive on
  the session that listens, so it needs a session of its own: PostgreSQL itself or a session-mode pool
  entry, named by `listen_using`. NOTIFY needs nothing: it is sent at its transaction's commit.
"""

from __future__ import annotations

from dataclasses import dataclass

__all__ = ["DIRECT", "ListenNeedsSession", "Pooling"]


class ListenNeedsSession(ValueError):
    """Behind a transaction-mode pooler, the LISTEN connection needs a database alias of its own that keeps
    a session (direct to PostgreSQL, or a session-mode pool entry)."""


@dataclass(frozen=True)
class Pooling:
    """How the store's database alias reaches PostgreSQL.

    `transaction`: through a transaction-mode pooler (no server-side prepared statements, no session
    options). `listen_using`: the Django alias whose settings the LISTEN connection uses (None: the store's
    own alias, which then must keep sessions). `writes_using`: the alias group commit's few busy
    connections use (None: the store's own); naming one that keeps a session (a session-mode entry of the
    same pooler) lets them prepare their statements again, which is most of W1's speed (docs/pooling.md)."""

    transaction: bool = False
    listen_using: str | None = None
    writes_using: str | None = None

    @property
    def writers_prepare(self) -> bool:
        """Whether group commit's connections may prepare statements: unless they share the transaction
        pool (`writes_using` names an alias that keeps a session: direct, or a session-mode entry)."""
        return not self.transaction or self.writes_using is not None

    def check(self, *, listen: bool) -> None:
        """Refuse a store that would LISTEN through a transaction-mode pool: it would hear nothing."""
        if listen and self.transaction and self.listen_using is None:
            raise ListenNeedsSession(
                "the store's alias goes through a transaction-mode pooler, where LISTEN hears nothing: "
                "name an alias that keeps a session for it (listen_using, FLOWDECK_LISTEN_DATABASE_ALIAS), "
                "direct to PostgreSQL or a session-mode pool entry"
            )


DIRECT = Pooling()
"""Straight to PostgreSQL (or a session-mode pool): every connection keeps its session."""
