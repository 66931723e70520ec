"""Fixtures for the engine tests (defined in engine_support, shared here)."""

from __future__ import annotations

from tests.engine.engine_support import _fresh_world, clock, store  # noqa: F401
