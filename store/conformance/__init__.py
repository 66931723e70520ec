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
`operator_writes`, `console_reads`, `node_reads`, `overview_reads`, `retention`), each a `StoreCase`
(`case`); `FlowStoreConformance` is all of them. `support` holds the fixtures and helpers every case is
written with.
"""

from __future__ import annotations

from store.conformance.atomic import AtomicCases
from store.conformance.blocking import InProcessBlockingConformance
from store.conformance.cancel import CancelCases
from store.conformance.claims import ClaimCases
from store.conformance.console_reads import ConsoleReadCases
from store.conformance.executions import ExecutionCases
from store.conformance.field_search import FieldSearchCases
from store.conformance.fields import FieldCases
from store.conformance.history import HistoryCases
from store.conformance.node_reads import NodeReadCases
from store.conformance.operator_writes import OperatorWriteCases
from store.conformance.ordering import OrderingCases
from store.conformance.overview_reads import OverviewReadCases
from store.conformance.retention import RetentionCases
from store.conformance.search import SearchCases
from store.conformance.signals import SignalCases
from store.conformance.support import EX1, EX2, LEASE, SERVED, SERVED_BOTH, WF1, WF2, StoreFixture
from store.conformance.support import SHORT_LEASE as SHORT_LEASE
from store.conformance.support import seconds as seconds
from store.conformance.workflows import WorkflowCases
from store.conformance.writes import WriteCases

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
    WorkflowCases,
    OperatorWriteCases,
    ConsoleReadCases,
    NodeReadCases,
    OverviewReadCases,
    RetentionCases,
):
    """kyo-flow's 115 store cases, translated, and Flowdeck's additions."""
