"""Crash recovery: a crash costs at most the node in flight. Engines here "crash" by leaving with no
grace (their attempts are cancelled and write nothing more, exactly what a killed process leaves behind);
the PostgreSQL cases kill a separate OS process."""

from __future__ import annotations

import asyncio
import importlib.util
import os
import signal
import sys
import threading
import time
from collections import Counter
from collections.abc import Callable
from datetime import timedelta
from pathlib import Path
from types import ModuleType

import pytest

from examples import seed
from examples.seed import Approval, Order
from flowdeck.engine.engine import FlowEngine
from flowdeck.engine.flow import Flow
from flowdeck.store import spi
from flowdeck.store.clock import ManualClock, settle
from flowdeck.store.django.store import DjangoStore
from tests.engine.engine_support import LEASE, advance, kinds, make_engine, until, waiting_for
from tests.store.django_support import postgres_url

ORDER = seed.sample_order()
ROOT = Path(__file__).resolve().parents[2]


async def test_a_crash_mid_node_resumes_at_that_node(store: spi.FlowStore, clock: ManualClock) -> None:
    calls: Counter[str] = Counter()
    hang = asyncio.Event()

    def first(ctx: object) -> int:
        calls["first"] += 1
        return 1

    async def second(ctx: object) -> int:
        calls["second"] += 1
        if calls["second"] == 1:
            await hang.wait()  # the process dies here
        return ctx.first + 1  # type: ignore[attr-defined]

    def third(ctx: object) -> int:
        calls["third"] += 1
        return ctx.second + 1  # type: ignore[attr-defined]

    flow = (
        Flow.init("crash")
        .output("first", first, type=int)
        .output("second", second, type=int)
        .output("third", third, type=int)
    )
    async with make_engine(store, clock, [flow]) as doomed:
        eid = await doomed.workflows.start("crash")
        await until(store, eid, lambda s: calls["second"] == 1)
    async with make_engine(store, clock, [flow]) as survivor:
        await advance(clock, LEASE)  # its first poll finds the row still claimed, and waits out the lease
        state = await until(store, eid)
    assert state.status == spi.Completed()
    assert calls == Counter(first=1, second=2, third=1)
    fields = await store.get_all_fields(eid)
    assert {name: fields[name].decode() for name in ("first", "second", "third")} == {
        "first": 1,
        "second": 2,
        "third": 3,
    }
    claims = [
        e.data["executor_id"]
        for e in (await store.get_history(eid)).events
        if e.kind.value == "ExecutionClaimed"
    ]
    assert claims == [doomed.executor_id, survivor.executor_id]


async def test_two_engines_never_run_a_completed_node_twice(store: spi.FlowStore, clock: ManualClock) -> None:
    lock = threading.Lock()
    ran: Counter[tuple[str, str]] = Counter()

    def node(name: str) -> Callable[[object], str]:
        def body(ctx: object) -> str:
            with lock:
                ran[(ctx.execution_id, name)] += 1  # type: ignore[attr-defined]
            return name

        return body

    flow = (
        Flow.init("busy")
        .output("a", node("a"), type=str)
        .step("b", node("b"))
        .output("c", node("c"), type=str)
    )
    # On PostgreSQL the second engine has a store of its own (its own connections and wake-ups), as a
    # second process would.
    other = DjangoStore(store.using, clock) if isinstance(store, DjangoStore) else store
    first = make_engine(store, clock, [flow], workers=2, batch_size=2)
    second = make_engine(other, clock, [flow], workers=2, batch_size=2)
    try:
        async with first, second:
            ids = [await first.workflows.start("busy") for _ in range(20)]
            for eid in ids:
                assert (await until(store, eid)).status == spi.Completed()
    finally:
        if other is not store:
            await other.aclose()  # type: ignore[attr-defined]
    assert ran == Counter({(eid, name): 1 for eid in ids for name in "abc"})
    executors = {
        e.data["executor_id"]
        for eid in ids
        for e in (await store.get_history(eid)).events
        if e.kind == spi.EventKind.EXECUTION_CLAIMED
    }
    assert executors <= {first.executor_id, second.executor_id}


async def test_a_sleeps_deadline_survives_restarts(store: spi.FlowStore, clock: ManualClock) -> None:
    async with make_engine(store, clock, [seed.cooling]) as engine:
        eid = await engine.workflows.start("fulfilment", inputs={"order": ORDER})
        asleep = await until(store, eid, waiting_for("delivery-window"))
    deadline = spi.WakeAt(clock.now() + timedelta(hours=48))
    assert asleep.waits == {"delivery-window": deadline}
    await clock.advance(timedelta(hours=24))
    async with make_engine(store, clock, [seed.cooling]):
        await advance(clock, timedelta(hours=12))
        await settle()
        still = await store.get_execution(eid)
        assert (still.status, still.waits, still.executor) == (
            spi.Running(),
            {"delivery-window": deadline},
            None,
        )
    async with make_engine(store, clock, [seed.cooling]):
        await advance(clock, timedelta(hours=12))
        state = await until(store, eid)
    assert state.status == spi.Completed()
    assert seed.LEDGER == [("ship", "o-1017"), ("notify", "o-1017", "how did we do?")]
    sleeps = [e for e in (await store.get_history(eid)).events if e.kind.value == "SleepStarted"]
    assert [e.data["until"] for e in sleeps] == [deadline.at.isoformat()]


async def test_a_cancel_while_waiting_for_an_input_unwinds(store: spi.FlowStore, clock: ManualClock) -> None:
    flow = (
        Flow.init("approved-shipping")
        .input("order", Order)
        .output(
            "charge",
            lambda ctx: seed.charge_card(ctx.order.id, 1200),
            type=str,
            compensate=lambda ctx: seed.refund_charge(ctx.charge),
        )
        .input("approval", Approval)
        .step("ship", lambda ctx: seed.ship(ctx.order))
    )
    async with make_engine(store, clock, [flow]) as engine:
        eid = await engine.workflows.start("approved-shipping", inputs={"order": ORDER})
        await until(store, eid, waiting_for("approval"))
        assert (
            await engine.executions.cancel(eid, "customer changed their mind", actor="ada") == spi.Accepted()
        )
        state = await until(store, eid)
    assert state.status == spi.Cancelled("customer changed their mind")
    assert seed.LEDGER == [("charge", "o-1017", "1200"), ("refund", "ch-o-1017-1200")]
    history = await kinds(store, eid)
    assert history[history.index("CancelRequested") :] == [
        "CancelRequested",
        "ExecutionClaimed",
        "ExecutionResumed",
        "CompensationStarted",
        "NodeCompensated",
        "CompensationCompleted",
        "ExecutionReleased",
        "Cancelled",
    ]


# ------------------------------------------------------------------------- a killed process (PostgreSQL)

CRASHING_FLOW = '''
"""A flow whose bodies note each call in a ledger file; run as a script, an engine that starts it."""
from __future__ import annotations

import asyncio
import os
import sys
from datetime import timedelta
from pathlib import Path

from flowdeck.engine.flow import Flow


def note(name: str) -> None:
    with Path(os.environ["FLOWDECK_LEDGER"]).open("a") as ledger:
        ledger.write(name + "\\n")
        ledger.flush()
        os.fsync(ledger.fileno())


def first(ctx):
    note("first")
    return 1


async def second(ctx):
    note("second")
    if os.environ.get("FLOWDECK_HANG") == "1":
        await asyncio.Event().wait()  # blocked here when the process is killed
    return ctx.first + 1


def third(ctx):
    note("third")
    return ctx.second + 1


flow = Flow.init("ledgered").output("first", first, type=int).output("second", second, type=int).output(
    "third", third, type=int
)

KNOBS = dict(
    workers=1,
    lease=timedelta(seconds=2),
    renew_every=timedelta(milliseconds=500),
    poll_timeout=timedelta(milliseconds=500),
)


async def main(execution_id: str) -> None:
    import django

    django.setup()
    from flowdeck.engine.engine import FlowEngine
    from flowdeck.store.django.store import DjangoStore

    async with FlowEngine(DjangoStore("default"), [flow], **KNOBS) as engine:
        await engine.workflows.start("ledgered", execution_id=execution_id)
        await asyncio.Event().wait()


if __name__ == "__main__":
    asyncio.run(main(sys.argv[1]))
'''


def _load(path: Path) -> ModuleType:
    spec = importlib.util.spec_from_file_location("crashing_flow", path)
    assert spec is not None
    assert spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def _ledger(path: Path) -> list[str]:
    return path.read_text().split() if path.exists() else []


@pytest.mark.postgres
@pytest.mark.slow
async def test_a_killed_process_is_taken_over_at_the_node_in_flight(
    postgres_alias: str, database_access: None, tmp_path: Path
) -> None:
    script, ledger = tmp_path / "crashing_flow.py", tmp_path / "ledger.txt"
    script.write_text(CRASHING_FLOW)
    crashing = _load(script)
    store = DjangoStore(postgres_alias)
    store.reset()
    env = {
        **os.environ,
        "DATABASE_URL": postgres_url(),
        "DJANGO_SETTINGS_MODULE": "flowdeck.console.settings",
        "PYTHONPATH": str(ROOT),
        "FLOWDECK_LEDGER": str(ledger),
        "FLOWDECK_HANG": "1",
    }
    child = await asyncio.create_subprocess_exec(sys.executable, str(script), "e-killed", env=env)
    try:
        give_up = time.monotonic() + 60
        while _ledger(ledger) != ["first", "second"]:
            assert child.returncode is None, "the engine process died on its own"
            assert time.monotonic() < give_up, f"the engine process never reached 'second': {_ledger(ledger)}"
            await asyncio.sleep(0.05)
    finally:
        child.send_signal(signal.SIGKILL)
        await child.wait()
    held = await store.get_execution("e-killed")
    assert (held.status, held.executor is not None) == (spi.Running(), True)

    os.environ["FLOWDECK_LEDGER"] = str(ledger)
    try:
        async with FlowEngine(store, [crashing.flow], **crashing.KNOBS) as survivor:
            state = await until(store, "e-killed", seconds=30)
        history = (await store.get_history("e-killed")).events
    finally:
        del os.environ["FLOWDECK_LEDGER"]
        await store.aclose()
    assert state.status == spi.Completed()
    assert _ledger(ledger) == ["first", "second", "second", "third"]
    claims = [e.data["executor_id"] for e in history if e.kind == spi.EventKind.EXECUTION_CLAIMED]
    assert (len(claims), claims[-1]) == (2, survivor.executor_id)
