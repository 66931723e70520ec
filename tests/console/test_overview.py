"""The overview (the console's home) in-process, on executions written through the store as workers leave
them: its numbers (by status, per minute, failures by kind, stops by code, retrying, waiting longest), every
number's link filtering the executions list to the same count, escaping, the refreshed part, the login.

Each case runs with the executions on SQLite (the test database) and on PostgreSQL (the store suite's
migrated alias, as the node-panel tests do); users and sessions stay in the test database."""

from __future__ import annotations

import html
import re

import pytest
from asgiref.sync import sync_to_async
from django.contrib.auth import get_user_model
from django.test import AsyncClient

from flowdeck.engine.engine import FlowEngine
from tests.console.backends import (  # noqa: F401  (fixtures)
    _postgres_alias_first,
    backend_fixture,
    engine_fixture,
    postgres_alias,
)
from tests.console.seed_overview import seed_execution

pytestmark = pytest.mark.django_db(transaction=True, serialized_rollback=True, databases="__all__")

HOSTILE_KIND = "<script>alert(1)</script>"


@pytest.fixture
async def viewer(engine: FlowEngine) -> AsyncClient:
    client = AsyncClient()
    user = await sync_to_async(get_user_model().objects.create_user)("victor", password="x")
    await client.aforce_login(user)
    return client


async def _seed(engine: FlowEngine, eid: str, how: str, code: str | None = None) -> None:
    await seed_execution(engine.store, eid, how, code)


async def _seed_all(engine: FlowEngine) -> None:
    for eid, how, code in (
        ("ok-1", "completed", None),
        ("ok-2", "completed", None),
        ("bad-1", "failed", "KeyError"),
        ("bad-2", "failed", "KeyError"),
        ("bad-3", "failed", HOSTILE_KIND),
        ("stop-1", "stopped", "F0001"),
        ("wait-1", "waiting", None),
        ("retry-1", "retrying", None),
        ("run-1", "running", None),
    ):
        await _seed(engine, eid, how, code)


def _counts(page: str, section: str) -> list[tuple[str, int]]:
    """The (link, number) of every count in the page's section `section` (its id)."""
    found = re.search(rf'<section class="card[^"]*" id="{section}">(.*?)</section>', page, re.S)
    assert found is not None, f"no section {section}"
    links = re.findall(r'<a class="count" href="([^"]+)"[^>]*>(\d+)</a>', found.group(1))
    return [(html.unescape(href), int(n)) for href, n in links]


def _text(fragment: str) -> str:
    return re.sub(r"\s+", " ", re.sub(r"<[^>]+>", " ", fragment)).strip()


def _section_text(page: str, section: str) -> str:
    found = re.search(rf'id="{section}">(.*?)</section>', page, re.S)
    assert found is not None, f"no section {section}"
    return _text(found.group(1))


async def _list_total(client: AsyncClient, url: str) -> int:
    reply = await client.get(url)
    assert reply.status_code == 200, url
    total = re.search(r'<span id="total">[^<]*of (\d+)</span>', reply.content.decode())
    assert total is not None, url
    return int(total.group(1))


async def test_the_overview_counts_and_every_link_lists_that_many(
    engine: FlowEngine, viewer: AsyncClient
) -> None:
    await _seed_all(engine)
    reply = await viewer.get("/")
    assert reply.status_code == 200
    page = reply.content.decode()

    row = re.search(r'<tr data-workflow="counter">(.*?)</tr>', page, re.S)
    assert row is not None
    counter = dict(re.findall(r'href="[^"]*status=(\w+)[^"]*"[^>]*>(\d+)<', html.unescape(row.group(1))))
    assert counter == {"running": "3", "stopped": "1", "failed": "3", "completed": "2"}
    assert ("/executions/?status=completed&workflow=counter", 2) in _counts(page, "status-counts")
    assert ("/executions/?status=failed:KeyError&workflow=counter", 2) in _counts(page, "failures")
    assert ("/executions/?status=stopped:F0001&workflow=counter", 1) in _counts(page, "stops")
    assert ("/executions/?status=waiting", 1) in _counts(page, "waiting")
    assert ("/executions/?status=sleeping", 1) in _counts(page, "waiting")

    for chart in ("chart-hour", "chart-day"):
        for words in ("9 started", "2 completed", "3 failed"):
            assert words in _section_text(page, chart)
    assert "retry-1" in _section_text(page, "retrying")
    assert _counts(page, "retrying") == [("/executions/?status=retrying", 1)]
    waiting = _section_text(page, "waiting")
    for words in ("wait-1", "retry-1", "(2 waiting)"):
        assert words in waiting

    sections = ("status-counts", "failures", "stops", "waiting", "retrying")
    every = [c for s in sections for c in _counts(page, s)]
    assert len(every) > 12
    for url, n in every:
        assert await _list_total(viewer, url) == n, url


def _bars(page: str, section: str) -> list[tuple[str, str, int]]:
    """The (link, series, number) of every bar of the chart in `section`, read from its hover text."""
    found = re.search(rf'id="{section}">(.*?)</section>', page, re.S)
    assert found is not None, section
    bars = re.findall(
        r'<a href="([^"]+)" class="bar-link" tabindex="-1" aria-label="[^:]+:\d\d: (\d+) (\w+):',
        found.group(1),
    )
    return [(html.unescape(href), series, int(n)) for href, n, series in bars]


async def test_every_bar_and_sum_of_the_charts_links_to_what_it_counts(
    engine: FlowEngine, viewer: AsyncClient
) -> None:
    await _seed_all(engine)
    page = (await viewer.get("/")).content.decode()
    for chart in ("chart-hour", "chart-day"):
        bars = _bars(page, chart)
        assert sorted((series, n) for _, series, n in bars) == [
            ("completed", 2),
            ("failed", 3),
            ("started", 9),
        ]
        for url, _, n in bars:
            assert await _list_total(viewer, url) == n, url
        sums = _counts(page, chart)
        assert sorted(n for _, n in sums) == [2, 3, 9]
        for url, n in sums:
            assert await _list_total(viewer, url) == n, url
    started, completed = (
        next(url for url, s, _ in _bars(page, "chart-hour") if s == w) for w in ("started", "completed")
    )
    assert re.fullmatch(r"/executions/\?created_after=[0-9T:-]+Z&created_before=[0-9T:-]+Z", started)
    assert re.fullmatch(
        r"/executions/\?status=completed&sort=updated&updated_after=[0-9T:-]+Z&updated_before=[0-9T:-]+Z",
        completed,
    )
    assert "list the executions that completed in this minute" in page
    assert "list the executions that failed in this hour" in page


async def test_user_text_is_escaped_and_its_link_still_filters(
    engine: FlowEngine, viewer: AsyncClient
) -> None:
    await _seed_all(engine)
    page = (await viewer.get("/")).content.decode()
    assert HOSTILE_KIND not in page
    assert html.escape(HOSTILE_KIND) in page
    hostile = [(url, n) for url, n in _counts(page, "failures") if "script" in url]
    assert len(hostile) == 1
    assert await _list_total(viewer, hostile[0][0]) == 1


async def test_an_empty_store_says_so(engine: FlowEngine, viewer: AsyncClient) -> None:
    page = (await viewer.get("/")).content.decode()
    assert "No execution has failed." in page
    assert "Nothing is waiting to retry." in page
    assert "0 started" in _text(page)
    assert '<tr data-workflow="counter">' in page  # a registered workflow shows with nothing yet


async def test_the_numbers_part_alone_for_the_refresh(engine: FlowEngine, viewer: AsyncClient) -> None:
    await _seed(engine, "ok-1", "completed")
    part = (await viewer.get("/overview/numbers/")).content.decode()
    assert part.startswith('<div id="overview-numbers"')
    assert "<html" not in part
    assert 'hx-trigger="every 5s"' in part
    assert ("/executions/?status=completed&workflow=counter", 1) in _counts(part, "status-counts")


async def test_the_overview_needs_a_login(engine: FlowEngine) -> None:
    for url in ("/", "/overview/numbers/"):
        reply = await AsyncClient().get(url)
        assert reply.status_code == 302
        assert reply["Location"].startswith("/login/")
