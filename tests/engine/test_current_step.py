"""`context.current_step()`: while a body runs (a sync one on its thread, an async one on the loop) it
answers that call, whose effect keys are the same on every attempt and every replay of the node; outside
a body it answers None. What the `django.tasks` backend derives a replayed step's task id from."""

from __future__ import annotations

from typing import Any

import pytest

from flowdeck.engine import context
from flowdeck.engine.flow import Flow
from flowdeck.store import spi
from tests.engine.interp_support import Crash, World, world_fixture  # noqa: F401

KEYS: dict[str, list[list[str]]] = {}


def _keyed(ctx: Any) -> None:
    step = context.current_step()
    assert step is not None
    assert step.context is ctx
    KEYS.setdefault(ctx.execution_id, []).append([step.effect_key(), step.effect_key()])


def _sync_body(ctx: Any) -> int:
    _keyed(ctx)
    if len(KEYS[ctx.execution_id]) == 1:
        raise Crash  # the process dies after the effects, before the node is recorded
    return 1


async def _async_body(ctx: Any) -> int:
    return _sync_body(ctx)


@pytest.mark.parametrize("body", [_sync_body, _async_body], ids=["sync", "async"])
async def test_a_replayed_node_keys_its_effects_as_its_first_run_did(world: World, body: Any) -> None:
    flow = Flow.init("keyed").output("value", body, type=int)
    eid = await world.start(flow)
    await world.crash(flow, eid)
    await world.attempt(flow, eid)
    assert await world.status(eid) == spi.Completed()
    first, replayed = KEYS[eid]
    assert first == replayed == [f"{eid}/value#1", f"{eid}/value#2"]
    assert context.current_step() is None  # the mark is gone with the call
