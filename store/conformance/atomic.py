"""`Claimed.record_atomically`: a body and its node's record, as one write under the claim.

What every store must answer, whether it shares a transaction with the body (the Django store) or runs
the body and then records (the default, the memory store): the record lands exactly as `record_progress`
would write it, with the body's result; a body that raises leaves as it came and records nothing; a lapsed
claim or a record already made answers as `record_progress` does and records nothing more. Whether the
body's own effects stand after a refusal is the store's to say (rolled back on the Django store).
"""

from __future__ import annotations

from typing import Any

import pytest

from flowdeck.store import spi
from flowdeck.store.conformance.case import ALREADY, K, R, StoreCase, field
from flowdeck.store.conformance.support import SHORT_LEASE, StoreFixture


class AtomicCases(StoreCase):
    """record_atomically: the record of a body, judged like record_progress."""

    def completion(self, fx: StoreFixture, eid: str, path: str, value: Any = None) -> Any:
        def complete(result: Any) -> spi.Completion:
            data = None if value is None else field(result)
            return spi.Completion(data, [fx.step_completed(eid, path)])

        return complete

    async def test_flowdeck_atomic_01_records_the_body_s_result(self, fx: StoreFixture) -> None:
        await fx.mk_execution("e1")
        handle = await fx.claim("e1")
        calls: list[int] = []

        def body() -> int:
            calls.append(1)
            return 7

        outcome, result = await handle.record_atomically(
            "a", body, self.completion(fx, "e1", "a", value=True)
        )
        assert (outcome, result, calls) == (R, 7, [1])
        assert (await fx.store.get_field("e1", "a")) == field(7)
        assert await fx.kinds("e1") == [K.CREATED, K.STEP_COMPLETED]

    async def test_flowdeck_atomic_02_a_raising_body_records_nothing(self, fx: StoreFixture) -> None:
        await fx.mk_execution("e1")
        handle = await fx.claim("e1")

        def body() -> int:
            raise LookupError("no such account")

        with pytest.raises(LookupError, match="no such account"):
            await handle.record_atomically("a", body, self.completion(fx, "e1", "a", value=True))
        assert await fx.store.get_field("e1", "a") is None
        assert await fx.kinds("e1") == [K.CREATED]

    async def test_flowdeck_atomic_03_a_lapsed_claim_records_nothing(self, fx: StoreFixture) -> None:
        await fx.mk_execution("e1")
        handle = await fx.claim("e1", lease=SHORT_LEASE)
        await fx.clock.advance(SHORT_LEASE.total_seconds() + 1)
        outcome, _ = await handle.record_atomically(
            "a", lambda: 1, self.completion(fx, "e1", "a", value=True)
        )
        assert outcome == spi.ProgressOutcome.CLAIM_LOST
        assert await fx.store.get_field("e1", "a") is None
        assert await fx.kinds("e1") == [K.CREATED]

    async def test_flowdeck_atomic_04_a_record_already_made_stands(self, fx: StoreFixture) -> None:
        await fx.mk_execution("e1")
        handle = await fx.claim("e1")
        assert await handle.record_progress("a", None, fx.step_completed("e1", "a")) == R
        outcome, _ = await handle.record_atomically("a", lambda: None, self.completion(fx, "e1", "a"))
        assert outcome == ALREADY
        assert await fx.kinds("e1") == [K.CREATED, K.STEP_COMPLETED]
