"""What every conformance case is written with: the hooks a store author implements, the per-case
fixtures, and the shorthands of the outcomes."""

from __future__ import annotations

import inspect
from collections.abc import AsyncIterator
from typing import Any

import pytest

from flowdeck.store import spi
from flowdeck.store.clock import ManualClock
from flowdeck.store.conformance.support import StoreFixture

K = spi.EventKind
F = spi.ExecutionFilter
R, ALREADY = spi.ProgressOutcome.RECORDED, spi.ProgressOutcome.ALREADY_RECORDED
APPLIED, LOST = spi.StatusOutcome.APPLIED, spi.StatusOutcome.CLAIM_LOST
WRONG_SIDE = spi.StatusOutcome.WRONG_SIDE_OF_TERMINAL
CANCELLING = spi.StatusOutcome.CANCEL_REQUESTED
OP = spi.OperatorOutcome


def field(value: Any, tag: str = "int") -> spi.FieldData:
    return spi.FieldData.of(value, tag)


class StoreCase:
    """What every suite shares: the hooks a store author implements and the per-case fixtures."""

    pytestmark = [pytest.mark.conformance]

    def make_store(self, clock: ManualClock) -> Any:
        """A fresh, empty store judging time by `clock` (may be a coroutine)."""
        raise NotImplementedError("a conformance subclass implements make_store(clock)")

    async def close_store(self, store: spi.FlowStore) -> None:
        """Release what `make_store` opened."""

    async def open_store(self, clock: ManualClock) -> spi.FlowStore:
        made = self.make_store(clock)
        return await made if inspect.isawaitable(made) else made

    @pytest.fixture
    def clock(self) -> ManualClock:
        return ManualClock()

    @pytest.fixture
    async def store(self, clock: ManualClock) -> AsyncIterator[spi.FlowStore]:
        store = await self.open_store(clock)
        try:
            yield store
        finally:
            await self.close_store(store)

    @pytest.fixture
    def fx(self, store: spi.FlowStore, clock: ManualClock) -> StoreFixture:
        return StoreFixture(store, clock)
