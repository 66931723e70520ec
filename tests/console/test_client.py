"""The application client (`console.client`) on SQLite and PostgreSQL, every call sync and async: a start
that workers run and whose outputs `result` answers, a signal, a cancel, describe, search; the engine's
typed errors with nothing written; how `result` ends for a failed, cancelled and stopped execution and
when its time (the store's clock) runs out; a sync call from a running event loop refused."""

from __future__ import annotations

import asyncio
import os
import signal
import time
from typing import Any

import pytest

from flowdeck.console import client, runtime
from flowdeck.engine import errors
from flowdeck.store import spi
from flowdeck.store.clock import ManualClock
from tests.console.client_support import (  # noqa: F401  (fixtures)
    Workers,
    alias_fixture,
    database_access,
    postgres_alias,
    sqlite_alias,
    workers_fixture,
)

ORDER = {"id": "o-1", "cents": 250}


def _exit_code(pid: int, seconds: float) -> int:
    """The child's exit code; a child still running after `seconds` (hung) is killed and fails the case."""
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline:
        done, status = os.waitpid(pid, os.WNOHANG)
        if done:
            return os.waitstatus_to_exitcode(status)
        time.sleep(0.05)
    os.kill(pid, signal.SIGKILL)
    os.waitpid(pid, 0)
    pytest.fail(f"the forked child {pid} hung")


def _count() -> int:
    return asyncio.run(_total())


async def _total() -> int:
    store = runtime.open_store()
    try:
        return (await store.list_executions(None)).total
    finally:
        runtime.close_store(store)


# ------------------------------------------------------------------------------------------ sync


def test_start_then_result_answers_the_outputs(workers: Workers) -> None:
    eid = client.start("greet", execution_id="greet-1", name="ada")
    assert eid == "greet-1"
    record = client.result(eid, timeout=20)
    assert record._asdict() == {"name": "ada", "greeting": "hello ada"}


def test_signal_cancel_describe_and_search(workers: Workers) -> None:
    eid = client.start("approval", order=ORDER)
    waiting = client.describe(eid)
    assert waiting.flow_id == "approval"
    assert [(i.name, i.delivered) for i in waiting.inputs] == [("order", True), ("approved", False)]
    client.signal(eid, "approved", True)
    assert client.result(eid, timeout=20).verdict == "o-1: yes"

    other = client.start("approval", order={"id": "o-2", "cents": 1})
    assert client.cancel(other, reason="changed my mind") == spi.Accepted()
    with pytest.raises(client.FlowExecutionCancelled) as cancelled:
        client.result(other, timeout=20)
    assert cancelled.value.status == spi.Cancelled("changed my mind")
    assert isinstance(client.cancel(other), spi.AlreadyTerminal)

    found = client.search("approval", "completed")
    assert ([s.execution_id for s in found.items], found.total) == ([eid], 1)
    by_field = client.search(where=["field:order.id=o-2"])
    assert [s.execution_id for s in by_field.items] == [other]


def test_the_readme_s_tour_of_the_client(workers: Workers) -> None:
    """README.md's "Starting flows from your code" shows these lines (tests/docs checks they are here)."""
    order = {"id": "o-7", "cents": 250}
    eid = client.start("approval", order=order)  # -> the execution id (random unless given)
    other = client.start("approval", execution_id=f"order-{order['id']}", order=order)
    detail = client.describe(eid)  # status, waits, inputs, progress
    page = client.search("approval", where=["field:order.id=o-7"], limit=50)
    client.signal(eid, "approved", True)  # deliver an input
    client.cancel(other, reason="customer asked")  # -> Accepted / AlreadyRequested / AlreadyTerminal
    record = client.result(eid, timeout=30)  # waits for the end: record.verdict

    assert other == "order-o-7"
    assert (detail.flow_id, [(i.name, i.delivered) for i in detail.inputs]) == (
        "approval",
        [("order", True), ("approved", False)],
    )
    assert (sorted(s.execution_id for s in page.items), page.total) == (sorted([eid, other]), 2)
    assert record.verdict == "o-7: yes"
    with pytest.raises(client.FlowExecutionCancelled):
        client.result(other, timeout=20)


def test_failed_and_stopped_executions_raise_from_result(workers: Workers) -> None:
    refused = client.start("refuse", name="x")
    with pytest.raises(client.FlowExecutionFailed) as failed:
        client.result(refused, timeout=20)
    assert (failed.value.execution_id, failed.value.status.kind) == (refused, "OutOfStock")
    assert isinstance(failed.value, errors.FlowRunEnded)

    broken = client.start("broken", name="x")
    with pytest.raises(client.FlowExecutionStopped) as stopped:
        client.result(broken, timeout=20)
    assert isinstance(stopped.value.status, spi.Stopped)
    assert stopped.value.status.code == "F0001"


def test_result_times_out_on_an_execution_still_waiting(alias: str) -> None:
    eid = client.start("approval", order=ORDER)
    with pytest.raises(client.FlowResultTimeout) as caught:
        client.result(eid, timeout=0.2)
    assert caught.value.execution_id == eid
    assert isinstance(caught.value, TimeoutError)


@pytest.mark.parametrize(
    ("call", "error"),
    [
        (lambda: client.start("nope", name="x"), errors.FlowNotRegistered),
        (lambda: client.start("greet", name=3), errors.FlowInputError),
        (lambda: client.start("greet", nickname="x"), errors.FlowInputError),
        (lambda: client.start("approval", order={"id": "o", "cents": 0}), errors.FlowInputError),
        (lambda: client.start("greet", execution_id="a/b", name="x"), errors.FlowInvalidId),
        (lambda: client.signal("missing", "approved", True), errors.FlowExecutionNotFound),
        (lambda: client.cancel("missing"), errors.FlowExecutionNotFound),
        (lambda: client.describe("missing"), errors.FlowExecutionNotFound),
        (lambda: client.result("missing", timeout=1), errors.FlowExecutionNotFound),
        (lambda: client.search(status="no-such-status"), spi.FilterParseError),
    ],
)
def test_refusals_are_the_engines_typed_errors_and_write_nothing(alias: str, call: Any, error: type) -> None:
    with pytest.raises(error):
        call()
    assert _count() == 0


def test_a_duplicate_id_and_a_refused_signal(alias: str) -> None:
    eid = client.start("approval", execution_id="dup", order=ORDER)
    with pytest.raises(errors.FlowDuplicateExecution):
        client.start("approval", execution_id="dup", order=ORDER)
    with pytest.raises(errors.FlowInputError):
        client.signal(eid, "approved", "perhaps")
    with pytest.raises(errors.FlowInputError) as undeclared:
        client.signal(eid, "colour", "red")
    assert undeclared.value.declared == ("order", "approved")
    with pytest.raises(errors.FlowAlreadyDelivered):
        client.signal(eid, "order", ORDER)
    assert _count() == 1


# ----------------------------------------------------------------------------------------- async


async def test_every_async_twin(workers: Workers) -> None:
    eid = await client.astart("approval", execution_id="a-1", order=ORDER)
    detail = await client.adescribe(eid)
    assert detail.execution_id == "a-1"
    await client.asignal(eid, "approved", False)
    assert (await client.aresult(eid, timeout=20)).verdict == "o-1: no"
    other = await client.astart("greet", name="bo")
    assert (await client.aresult(other, timeout=20)).greeting == "hello bo"
    waiting = await client.astart("approval", order=ORDER)
    assert await client.acancel(waiting, "no") == spi.Accepted()
    with pytest.raises(client.FlowExecutionCancelled):
        await client.aresult(waiting, timeout=20)
    found = await client.asearch("greet")
    assert [s.execution_id for s in found.items] == [other]


async def test_async_twins_raise_the_typed_errors(alias: str) -> None:
    with pytest.raises(errors.FlowNotRegistered):
        await client.astart("nope")
    with pytest.raises(errors.FlowInputError):
        await client.astart("greet", name=["not", "a", "string"])
    eid = await client.astart("greet", execution_id="twice", name="x")
    with pytest.raises(errors.FlowDuplicateExecution):
        await client.astart("greet", execution_id=eid, name="x")
    with pytest.raises(errors.FlowExecutionNotFound):
        await client.asignal("missing", "name", "x")
    with pytest.raises(errors.FlowExecutionNotFound):
        await client.acancel("missing")
    with pytest.raises(errors.FlowExecutionNotFound):
        await client.adescribe("missing")


async def test_aresult_times_out_on_the_stores_clock(alias: str) -> None:
    clock = ManualClock()
    runtime.store().clock = clock
    eid = await client.astart("approval", order=ORDER)
    waiting = asyncio.create_task(client.aresult(eid, timeout=5))
    for _ in range(2000):
        if clock.pending_sleeps():
            break
        await asyncio.sleep(0.005)
    await clock.advance(4.9)
    await asyncio.sleep(0.2)  # real time passes: only the store's clock counts
    assert not waiting.done()
    for _ in range(2000):
        if clock.pending_sleeps():
            break
        await asyncio.sleep(0.005)
    await clock.advance(0.1)
    with pytest.raises(client.FlowResultTimeout):
        await asyncio.wait_for(waiting, 10)


async def test_a_sync_call_from_a_running_event_loop_is_refused(alias: str) -> None:
    for call, name in [
        (lambda: client.start("greet", name="x"), "start"),
        (lambda: client.signal("e", "name", "x"), "signal"),
        (lambda: client.cancel("e"), "cancel"),
        (lambda: client.describe("e"), "describe"),
        (lambda: client.search(), "search"),
        (lambda: client.result("e"), "result"),
    ]:
        with pytest.raises(client.FlowSyncInAsyncContext) as caught:
            call()
        assert caught.value.call == name
        assert f"await client.a{name}(" in str(caught.value)
    assert (await client.asearch()).total == 0


def test_a_forked_child_starts_with_a_portal_and_store_of_its_own(alias: str) -> None:
    """A Celery prefork worker: the parent used the client, then forked; the child's calls work."""
    parent = client.start("greet", name="parent")
    pid = os.fork()
    if pid == 0:  # the child: report through the exit code, never return into pytest
        code = 1
        try:
            child = client.start("greet", name="child")
            code = 0 if client.describe(child).flow_id == "greet" else 2
        finally:
            os._exit(code)
    assert _exit_code(pid, seconds=30) == 0
    assert {s.execution_id for s in client.search("greet").items} > {parent}
    assert client.search("greet").total == 2
