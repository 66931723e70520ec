"""The conformance suite on the in-memory store."""

from __future__ import annotations

from flowdeck.store.clock import ManualClock
from flowdeck.store.conformance import FlowStoreConformance, InProcessBlockingConformance
from flowdeck.store.memory import MemoryStore


class TestMemoryStoreConformance(FlowStoreConformance):
    def make_store(self, clock: ManualClock) -> MemoryStore:
        return MemoryStore(clock)


class TestMemoryStoreInProcessBlocking(InProcessBlockingConformance):
    def make_store(self, clock: ManualClock) -> MemoryStore:
        return MemoryStore(clock)
