"""The id rule, and the engine refusing a bad id before anything is recorded."""

from __future__ import annotations

import pytest

from flowdeck.engine import Flow, FlowEngine, FlowInvalidId, ids
from flowdeck.store.memory import MemoryStore


@pytest.mark.parametrize(
    ("value", "problem"),
    [
        ("", "must not be empty"),
        ("x" * 201, "must be at most 200 characters (got 201)"),
        (".", "must not be '.' or '..'"),
        ("..", "must not be '.' or '..'"),
        ("a/b", "must not contain '/' (at position 1)"),
        ("a\nb", "must not contain the control character U+000A (at position 1)"),
        ("\x00", "must not contain the control character U+0000 (at position 0)"),
        ("a\x1b[31m", "must not contain the control character U+001B (at position 1)"),
        ("ok\x7f", "must not contain the control character U+007F (at position 2)"),
        ("\x85", "must not contain the control character U+0085 (at position 0)"),
        ("a\u2028", "must not contain the control character U+2028 (at position 1)"),
        ("\udfff", "must not contain the control character U+DFFF (at position 0)"),
        (42, "must be a string"),
    ],
)
def test_refused_ids_name_their_problem(value: object, problem: str) -> None:
    assert ids.id_problem(value) == problem
    with pytest.raises(FlowInvalidId) as raised:
        ids.check_id(value, what="workflow id")
    assert raised.value.problem == problem
    assert str(raised.value).startswith("invalid workflow id ")


@pytest.mark.parametrize("value", ["order-1", "a.b", "...", "x" * 200, "naïve id", "ä:1#2", "a b"])
def test_kept_ids_pass(value: str) -> None:
    assert ids.check_id(value) == value


async def test_engine_refuses_a_bad_execution_id_and_records_nothing() -> None:
    store = MemoryStore()
    flow = Flow.init("greet").output("hello", lambda ctx: "hi")
    async with FlowEngine(store, [flow]) as engine:
        with pytest.raises(FlowInvalidId):
            await engine.workflows.start("greet", execution_id="bad\nid")
        found = await engine.executions.search("greet")
    assert found.items == ()
    assert found.total == 0


async def test_engine_refuses_a_bad_workflow_id_at_registration() -> None:
    async with FlowEngine(MemoryStore(), []) as engine:
        with pytest.raises(FlowInvalidId, match="invalid workflow id 'a/b'"):
            await engine.register("a/b", Flow.init("a").output("x", lambda ctx: 1))
        assert await engine.workflows.list() == []
