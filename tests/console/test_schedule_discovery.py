"""Flows modules' `SCHEDULES`: declared schedules are discovered with the flows and upserted when a process
registers them (the declaration wins, a paused one stays paused); a malformed declaration is refused at
discovery naming the module and the position."""

from __future__ import annotations

import dataclasses
import sys
import types
from datetime import timedelta

import pytest

from flowdeck import scheduled
from flowdeck.console import discovery
from flowdeck.engine import Flow
from flowdeck.engine.engine import FlowEngine
from flowdeck.store import schedules
from flowdeck.store.memory import MemoryStore

MODULE = "tests.console.declared_schedules_here"
NIGHTLY = Flow.init("nightly-report").input("region", str).output("x", lambda ctx: 1, type=int)


@pytest.fixture
def module(monkeypatch: pytest.MonkeyPatch) -> types.ModuleType:
    made = types.ModuleType(MODULE)
    made.FLOWS = {"nightly-report": NIGHTLY}
    monkeypatch.setitem(sys.modules, MODULE, made)
    monkeypatch.setattr(discovery, "_flows", dict(discovery._flows))
    monkeypatch.setattr(discovery, "_schedules", dict(discovery._schedules))
    return made


def test_declared_schedules_are_found_beside_the_flows(module: types.ModuleType) -> None:
    spec = scheduled(
        "nightly", "nightly-report", cron="0 3 * * *", timezone="Europe/Paris", inputs={"region": "eu"}
    )
    module.SCHEDULES = [spec]
    discovery.discover([MODULE])
    assert discovery.declared_schedules(["nightly-report"]) == [spec]
    assert discovery.declared_schedules(["other"]) == []


BAD = [
    pytest.param("nightly", "is not a list of schedules (flowdeck.scheduled(...)): 'nightly'", id="a-string"),
    pytest.param({"a": 1}, "is not a list of schedules", id="a-mapping"),
    pytest.param(
        [{"name": "x"}], "[0] is not a schedule (flowdeck.scheduled(...)): {'name': 'x'}", id="a-dict"
    ),
    pytest.param(
        [schedules.ScheduleSpec("x", "nightly-report", cron="0 3 * *")],
        "[0]: invalid cron expression '0 3 * *': five fields",
        id="bad-cron",
    ),
    pytest.param(
        [schedules.ScheduleSpec("x", "nightly-report", cron="0 3 * * *", timezone="Europe/Parid")],
        "[0]: unknown time zone 'Europe/Parid'",
        id="bad-zone",
    ),
    pytest.param(
        [schedules.ScheduleSpec("a:b", "nightly-report", every=timedelta(minutes=1))],
        "[0]: invalid schedule name 'a:b': must not contain ':'",
        id="bad-name",
    ),
    pytest.param(
        [scheduled("x", "nightly-report", every=timedelta(hours=1))] * 2,
        "schedule 'x' is declared twice",
        id="twice",
    ),
]


@pytest.mark.parametrize(("declared", "message"), BAD)
def test_a_malformed_declaration_is_refused_naming_the_module(
    module: types.ModuleType, declared: object, message: str
) -> None:
    module.SCHEDULES = declared
    with pytest.raises(discovery.FlowDiscoveryError) as refused:
        discovery.schedules_of(MODULE)
    assert f"{MODULE}.SCHEDULES" in str(refused.value)
    assert message in str(refused.value)


async def test_registration_upserts_the_declaration_and_keeps_the_paused_state(
    module: types.ModuleType, monkeypatch: pytest.MonkeyPatch
) -> None:
    from flowdeck.console import runtime

    spec = scheduled("nightly", "nightly-report", cron="0 3 * * *", inputs={"region": "eu"})
    module.SCHEDULES = [spec]
    discovery.discover([MODULE])
    store = MemoryStore()
    await runtime.serve(FlowEngine(store), ["nightly-report"])
    await store.set_schedule_paused("nightly", True)
    module.SCHEDULES = [dataclasses.replace(spec, cron="0 4 * * *")]
    monkeypatch.setattr(discovery, "_schedules", {})
    discovery.discover([MODULE])
    await runtime.serve(FlowEngine(store), ["nightly-report"])
    found = await store.get_schedule("nightly")
    assert found is not None
    assert (found.spec.cron, found.paused) == ("0 4 * * *", True)


async def test_registration_refuses_a_schedule_whose_inputs_the_workflow_refuses(
    module: types.ModuleType,
) -> None:
    from flowdeck.console import runtime
    from flowdeck.engine import errors

    module.SCHEDULES = [scheduled("nightly", "nightly-report", cron="0 3 * * *", inputs={"region": 3})]
    discovery.discover([MODULE])
    store = MemoryStore()
    with pytest.raises(errors.FlowScheduleError, match="inputs refused"):
        await runtime.serve(FlowEngine(store), ["nightly-report"])
    assert await store.list_schedules() == []
