"""The one settings object (defaults from the engine's, every reader through it) and the one waits writer."""

from __future__ import annotations

import dataclasses
from datetime import UTC, datetime, timedelta

from django.test import override_settings

from flowdeck.console import heartbeat, schemas, waits
from flowdeck.console.conf import FlowdeckSettings, flowdeck_settings
from flowdeck.console.views import common
from flowdeck.engine.config import EngineConfig
from flowdeck.store import spi


def test_the_worker_defaults_are_the_engine_s() -> None:
    # `transient` is no setting: the composition root gives the store's predicate (runtime.TRANSIENT)
    engine = {f.name: f.default for f in dataclasses.fields(EngineConfig) if f.name != "transient"}
    mine = {f.name: f.default for f in dataclasses.fields(FlowdeckSettings) if f.name in engine}
    assert mine == engine


def test_a_changed_setting_is_read_again() -> None:
    assert heartbeat.heartbeat_interval() == timedelta(seconds=5)
    with override_settings(FLOWDECK_HEARTBEAT_SECONDS=2, FLOWDECK_DEMO_STOP_SECONDS=7):
        assert heartbeat.heartbeat_interval() == timedelta(seconds=2)
        assert flowdeck_settings().demo_stop == timedelta(seconds=7)
    assert flowdeck_settings().demo_stop == timedelta(seconds=30)


AT = datetime(2026, 12, 1, 12, 3, 4, 123456, tzinfo=UTC)
STATE = spi.ExecutionState(
    "e",
    "wf",
    spi.Running(),
    None,
    None,
    "h",
    AT,
    AT,
    {
        "b.grace": spi.WakeAt(AT),
        "a.manual": spi.WakeOnField("approval"),
        "c.ship#rate:carrier-api": spi.WakeAt(AT),
    },
    False,
    None,
)


def test_each_surface_words_the_waits_its_own_way_from_one_reading() -> None:
    assert waits.waits_of(STATE) == (
        waits.Wait("a.manual", "approval", None),
        waits.Wait("b.grace", None, AT),
        waits.Wait("c.ship#rate:carrier-api", None, AT, "carrier-api"),
    )
    at = "2026-12-01T12:03:04.123456+00:00"
    assert [w.model_dump() for w in schemas.waits_of(STATE)] == [
        {"path": "a.manual", "kind": "waiting", "detail": "approval", "limit": None},
        {"path": "b.grace", "kind": "sleeping", "detail": at, "limit": None},
        {"path": "c.ship#rate:carrier-api", "kind": "rate-limited", "detail": at, "limit": "carrier-api"},
    ]
    assert [w.words for w in common.row_of(STATE).waits] == [
        "input approval",
        "until 2026-12-01 12:03:04",
        "rate-limited (carrier-api) until 2026-12-01 12:03:04",
    ]
    assert waits.line(STATE) == (
        "input approval, b.grace until 2026-12-01 12:03,"
        " c.ship rate-limited (carrier-api) until 2026-12-01 12:03"
    )
