"""A worker process's event loop (`engine.event_loop`): uvloop when installed, asyncio's when asked."""

from __future__ import annotations

import asyncio

import pytest
import uvloop

from flowdeck.engine import event_loop


async def _loop_type() -> type:
    return type(asyncio.get_running_loop())


def test_workers_run_on_uvloop_when_it_is_installed(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("FLOWDECK_EVENT_LOOP", raising=False)
    assert event_loop.run(_loop_type()) is uvloop.Loop


def test_flowdeck_event_loop_asyncio_keeps_asyncios_own_loop(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("FLOWDECK_EVENT_LOOP", "asyncio")
    assert not issubclass(event_loop.run(_loop_type()), uvloop.Loop)
    assert issubclass(event_loop.run(_loop_type()), asyncio.BaseEventLoop)


def test_the_answer_and_the_exception_of_the_main_coroutine_come_back() -> None:
    async def fails() -> None:
        raise LookupError("no such order")

    async def answers() -> int:
        await asyncio.sleep(0)
        return 42

    assert event_loop.run(answers()) == 42
    with pytest.raises(LookupError, match="no such order"):
        event_loop.run(fails())
