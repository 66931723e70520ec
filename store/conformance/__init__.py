"""The store conformance suite, as an importable pytest package.

A store author subclasses `FlowStoreConformance` in a test module (pytest collects subclasses named
`Test*`) and implements `make_store(clock)`, sync or async, handing back a fresh, EMPTY store whose every
judgement of time (`now`, and the blocking poll's waits) goes through `clock`; `close_store` may release
it. Every case is an `async def` marked `conformance`, and names its kyo-flow case number
(`kyo-flow-store-spec.md` §2) or says it is a Flowdeck addition.

    class TestMyStoreConformance(FlowStoreConformance):
        def make_store(self, clock):
            return MyStore(clock=clock)

Time is a `ManualClock`: a blocking `claim_ready` must wait with `clock.sleep` (raced against its
wake-up), so `clock.advance` drives its deadline. A store whose blocking poll wakes in process (a write in
the same process wakes it at once) also runs `InProcessBlockingConformance`.

The cases are grouped by invariant and verb, one mixin a module (`claims`, `writes`, `atomic`, `signals`,
`history`, `fields`, `executions`, `cancel`, `search`, `ordering`, `field_search`, `workflows`,
`operator_writes`, `console_reads`, `node_reads`, `overview_reads`, `retention`, `schedules`,
`rate_limits`), each a `StoreCase` (`case`); `FlowStoreConformance` is all of them. `support` holds
the fixtures and helpers every case is written with.
"""

from __future__ import annotations

from flowdeck.store.conformance.atomic import AtomicCases
from flowdeck.store.conformance.blocking import InProcessBlockingConformance
from flowdeck.store.conformance.cancel import CancelCases
from flowdeck.store.conformance.claim_order import ClaimOrderCases
from flowdeck.store.conformance.claims import ClaimCases
from flowdeck.store.conformance.concurrency import ConcurrencyCases
from flowdeck.store.conformance.console_reads import ConsoleReadCases
from flowdeck.store.conformance.deferral import DeferralCases
from flowdeck.store.conformance.executions import ExecutionCases
from flowdeck.store.conformance.field_search import FieldSearchCases
from flowdeck.store.conformance.fields import FieldCases
from flowdeck.store.conformance.history import HistoryCases
from flowdeck.store.conformance.node_reads import NodeReadCases
from flowdeck.store.conformance.operator_writes import OperatorWriteCases
from flowdeck.store.conformance.ordering import OrderingCases
from flowdeck.store.conformance.overview_reads import OverviewReadCases
from flowdeck.store.conformance.rate_limits import RateLimitCases
from flowdeck.store.conformance.retention import RetentionCases
from flowdeck.store.conformance.schedules import ScheduleCases
from flowdeck.store.conformance.search import SearchCases
from flowdeck.store.conformance.search_forms import SearchFormCases
from flowdeck.store.conformance.signals import SignalCases
from flowdeck.store.conformance.support import EX1, EX2, LEASE, SERVED, SERVED_BOTH, WF1, WF2, StoreFixture
from flowdeck.store.conformance.support import SHORT_LEASE as SHORT_LEASE
from flowdeck.store.conformance.support import seconds as seconds
from flowdeck.store.conformance.workflows import WorkflowCases
from flowdeck.store.conformance.writes import WriteCases

__all__ = [
    "EX1",
    "EX2",
    "LEASE",
    "SERVED",
    "SERVED_BOTH",
    "WF1",
    "WF2",
    "FlowStoreConformance",
    "InProcessBlockingConformance",
    "StoreFixture",
]


class FlowStoreConformance(
    ClaimCases,
    ClaimOrderCases,
    ConcurrencyCases,
    DeferralCases,
    WriteCases,
    AtomicCases,
    SignalCases,
    HistoryCases,
    FieldCases,
    ExecutionCases,
    CancelCases,
    SearchCases,
    OrderingCases,
    FieldSearchCases,
    SearchFormCases,
    WorkflowCases,
    OperatorWriteCases,
    ConsoleReadCases,
    NodeReadCases,
    OverviewReadCases,
    RetentionCases,
    ScheduleCases,
    RateLimitCases,
):
    """kyo-flow's 115 store cases, translated, and Flowdeck's additions."""
