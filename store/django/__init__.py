"""The Django store: models, migrations and the ORM store serving PostgreSQL and SQLite.

    from flowdeck.store.django.store import DjangoStore

    store = DjangoStore(using="default", clock=SYSTEM_CLOCK, pool_size=None, listen=True)
    ...
    await store.aclose()        # or store.close() from synchronous code

`DjangoStore` implements `spi.FlowStore` (and hands out `spi.Claimed` handles) on a configured Django
database alias. Every call runs one transaction on the store's own thread pool (PostgreSQL: `pool_size`
threads, default 8, one connection each; SQLite: one). Blocking `claim_ready` callers are woken by local
writes at once, by other processes through LISTEN/NOTIFY (PostgreSQL) or a 25 ms `PRAGMA data_version`
watch (SQLite), and on their own at the earliest sleep deadline or lease expiry among the rows they serve.
Database failures surface as `spi.FlowStoreError` (`retryable` for lost connections, serialization
failures, deadlocks, a locked SQLite file). The schema lives in `store/django/migrations` only; the raw
SQL in `store/django/queries.py`.

This package is a Django app (label `flowstore`); import the store from `store.django.store`, not from
here, so that loading the app never imports its models early.
"""

from __future__ import annotations
