"""Moved to `store.conformance.support`. Kept because its docstring invited third-party stores' tests to
import the fixtures from here, and their test files must not have to change."""

from __future__ import annotations

from flowdeck.store.conformance.support import (
    EX1,
    EX2,
    LEASE,
    NO_WAIT,
    SAFETY,
    SERVED,
    SERVED_BOTH,
    SHORT_LEASE,
    WF1,
    WF2,
    StoreFixture,
    seconds,
)

__all__ = [
    "EX1",
    "EX2",
    "LEASE",
    "NO_WAIT",
    "SAFETY",
    "SERVED",
    "SERVED_BOTH",
    "SHORT_LEASE",
    "WF1",
    "WF2",
    "StoreFixture",
    "seconds",
]
