"""Fixtures for the engine tests (defined in engine_support and the Django store's test support)."""

from __future__ import annotations

from tests.engine.engine_support import _fresh_world, clock, memory_store, store, store_alias  # noqa: F401
from tests.store.django_support import database_access, postgres_alias  # noqa: F401
