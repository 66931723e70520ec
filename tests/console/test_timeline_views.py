"""The timeline fragment and the history download in-process (Django's async test client): filters by
event kind and node, the download equals the REST route's document, a 10,000-event history is paged."""

from __future__ import annotations

import json
import re
from collections.abc import AsyncIterator
from datetime import timedelta

import pytest
from asgiref.sync import sync_to_async
from django.test import AsyncClient

from flowdeck.console import live, runtime
from flowdeck.console.discovery import discover
from flowdeck.console.views.timeline import LANES_PAGE
from flowdeck.engine.engine import FlowEngine
from flowdeck.store import spi
from tests.console import big_history
from tests.console.flows import HOSTILE_NAME
from tests.console.test_views import ESCAPED, _user

pytestmark = pytest.mark.django_db(transaction=True, serialized_rollback=True)


@pytest.fixture
async def engine() -> AsyncIterator[FlowEngine]:
    discover(["tests.console.flows"])
    runtime.reset()
    live.reset()
    yield await runtime.engine()
    live.reset()
    runtime.reset()


@pytest.fixture
async def viewer(engine: FlowEngine) -> AsyncClient:
    client = AsyncClient()
    await client.aforce_login(await sync_to_async(_user)("victor", False))
    return client


def lanes(html: str) -> list[str]:
    return re.findall(r'data-tl-lane="([^"]+)"', html)


async def test_the_timeline_and_the_download_need_a_login(engine: FlowEngine) -> None:
    await engine.workflows.start("counter", execution_id="c-1")
    for path in ("/executions/c-1/timeline/", "/executions/c-1/history.json"):
        reply = await AsyncClient().get(path)
        assert (reply.status_code, reply["Location"].split("?")[0]) == (302, "/login/")


async def test_filters_by_node_and_by_event_kind(engine: FlowEngine, viewer: AsyncClient) -> None:
    await engine.workflows.start("slow_undo", execution_id="s-1")
    await engine.executions.cancel("s-1", "changed mind", actor="victor")
    every = (await viewer.get("/executions/s-1/timeline/")).content.decode()
    assert lanes(every) == ["execution"]  # nothing has run yet: the execution's own marks
    assert "CancelRequested" in every
    assert '<time datetime="' in every
    assert " UTC" in every
    await big_history.write(engine.store, "b-1", 60)
    page = (await viewer.get("/executions/b-1/timeline/?node=items~3")).content.decode()
    assert lanes(page) == ["items~3"]
    assert "2 attempts" in page  # item 3 was retried once
    retried = (await viewer.get("/executions/b-1/timeline/?kind=StepRetried")).content.decode()
    indexes = [int(name.split("~")[1]) for name in lanes(retried)]
    assert indexes == list(range(0, indexes[-1] + 1, 3))
    assert len(indexes) > 5
    nothing = (await viewer.get("/executions/b-1/timeline/?kind=SleepStarted")).content.decode()
    assert lanes(nothing) == []
    assert "Nothing in the history matches kind <b>SleepStarted</b>" in nothing


async def test_the_download_is_the_rest_document(engine: FlowEngine, viewer: AsyncClient) -> None:
    await big_history.write(engine.store, "b-2", 300)
    download = await viewer.get("/executions/b-2/history.json")
    assert download.status_code == 200
    assert download["Content-Disposition"] == 'attachment; filename="b-2-history.json"'
    rest = await viewer.get("/api/v1/executions/b-2/history?limit=-1")
    assert rest.status_code == 200
    assert download.content == rest.content
    document = json.loads(download.content)
    assert (len(document["events"]), document["hasMore"]) == (300, False)
    assert [e["seq"] for e in document["events"]] == list(range(1, 301))


async def test_a_ten_thousand_event_history_is_paged(engine: FlowEngine, viewer: AsyncClient) -> None:
    await big_history.write(engine.store, "b-3", 10_000)
    first = (await viewer.get("/executions/b-3/timeline/")).content.decode()
    shown = lanes(first)
    assert len(shown) == LANES_PAGE
    assert shown[:3] == ["execution", "items~0", "items~1"]
    total = re.search(r"lanes 1–\d+ of (\d+)", first)
    assert total is not None
    assert int(total.group(1)) > 3000
    assert "10000 events" in first
    second = lanes((await viewer.get("/executions/b-3/timeline/?page=1")).content.decode())
    assert second[0] == f"items~{LANES_PAGE - 1}"
    beyond = lanes((await viewer.get("/executions/b-3/timeline/?page=99999")).content.decode())
    assert beyond[-1] == "after"  # a page past the end shows the last one
    assert len(first) < 400_000  # a page's HTML stays small whatever the history's length


async def test_bad_input_is_a_4xx(engine: FlowEngine, viewer: AsyncClient) -> None:
    assert (await viewer.get("/executions/nobody/timeline/")).status_code == 404
    assert (await viewer.get("/executions/nobody/history.json")).status_code == 404
    await engine.workflows.start("counter", execution_id="c-2")
    assert (await viewer.get("/executions/c-2/timeline/?page=-1")).status_code == 400
    assert (await viewer.get("/executions/c-2/timeline/?page=x")).status_code == 400


async def test_a_hostile_node_name_is_text_in_the_timeline(engine: FlowEngine, viewer: AsyncClient) -> None:
    """A node named as markup is escaped in the label, the SVG's title and aria-label, and the filter."""
    claimed = await engine.store.create_claimed_if_absent(
        "h-2",
        "hostile",
        "x",
        spi.Running(),
        spi.Event(spi.EventKind.CREATED, "hostile", "h-2", engine.store.now()),
        executor_id="t",
        lease=timedelta(minutes=1),
    )
    assert claimed is not None
    waiting = spi.EventKind.INPUT_WAITING
    await claimed.append_event(
        spi.Event(waiting, "hostile", "h-2", engine.store.now(), {"input_name": HOSTILE_NAME})
    )
    html = (await viewer.get("/executions/h-2/timeline/")).content.decode()
    assert HOSTILE_NAME not in html
    assert (
        html.count(ESCAPED) >= 4
    )  # the lane's data attribute, its label, the track's aria-label, the datalist


async def test_after_a_seq_the_fragment_is_the_delta_of_the_lanes_that_changed(
    engine: FlowEngine, viewer: AsyncClient
) -> None:
    await big_history.write(engine.store, "d-1", 60)
    whole = (await viewer.get("/executions/d-1/timeline/")).content.decode()
    assert 'data-tl-seq="60"' in whole
    order = lanes(whole)
    assert "data-tl-delta" not in whole
    # nothing after 60: only the lanes still open (the claim, the last item and step running) come again
    quiet = (await viewer.get("/executions/d-1/timeline/?after=60")).content.decode()
    assert "data-tl-delta" in quiet
    assert lanes(quiet) == ["execution", "items~24", "after"]
    assert json.loads(re.search(r'data-tl-order="([^"]+)"', quiet).group(1).replace("&quot;", '"')) == order  # type: ignore[union-attr]
    # after 50: the lanes with events 51..60 too
    later = lanes((await viewer.get("/executions/d-1/timeline/?after=50")).content.decode())
    assert "items~0" not in later
    assert set(later) > {"execution", "items~24", "after"}
    assert all(name in order for name in later)
    # a seq the history has not reached, or an unwind, answers the whole fragment
    ahead = (await viewer.get("/executions/d-1/timeline/?after=61")).content.decode()
    assert "data-tl-delta" not in ahead
    assert lanes(ahead) == order
    assert (await viewer.get("/executions/d-1/timeline/?after=x")).status_code == 400


async def test_history_routes_answer_the_events_after_a_seq(engine: FlowEngine, viewer: AsyncClient) -> None:
    await big_history.write(engine.store, "d-2", 300)
    rest = json.loads((await viewer.get("/api/v1/executions/d-2/history?after=290&limit=-1")).content)
    assert [e["seq"] for e in rest["events"]] == list(range(291, 301))
    paged = json.loads(
        (await viewer.get("/api/v1/executions/d-2/history?after=290&limit=3&offset=2")).content
    )
    assert [e["seq"] for e in paged["events"]] == [293, 294, 295]
    assert (await viewer.get("/api/v1/executions/d-2/history?after=-1")).status_code in (400, 422)
    download = json.loads((await viewer.get("/executions/d-2/history.json?after=295")).content)
    assert [e["seq"] for e in download["events"]] == list(range(296, 301))


async def test_the_history_table_takes_the_timeline_filters(engine: FlowEngine, viewer: AsyncClient) -> None:
    await big_history.write(engine.store, "d-3", 400)
    rows = (await viewer.get("/executions/d-3/history/?node=items~3")).content.decode()
    assert set(re.findall(r'data-lane="([^"]+)"', rows)) == {"items~3"}
    assert re.findall(r'data-kind="([^"]+)"', rows) == ["StepStarted", "StepRetried", "StepCompleted"]
    started = (await viewer.get("/executions/d-3/history/?kind=StepStarted")).content.decode()
    seqs = [int(s) for s in re.findall(r'data-seq="(\d+)"', started)]
    assert len(seqs) == 100
    assert set(re.findall(r'data-kind="([^"]+)"', started)) == {"StepStarted"}
    assert f"?offset={seqs[-1]}&amp;kind=StepStarted" in started  # "load more" keeps the filter
    rest = (await viewer.get(f"/executions/d-3/history/?offset={seqs[-1]}&kind=StepStarted")).content.decode()
    more = [int(s) for s in re.findall(r'data-seq="(\d+)"', rest)]
    assert more
    assert min(more) > seqs[-1]
    none = (await viewer.get("/executions/d-3/history/?kind=SleepStarted")).content.decode()
    assert "No event matches kind <b>SleepStarted</b>" in none
    hostile = (await viewer.get("/executions/d-3/history/?node=<b>x</b>")).content.decode()
    assert "<b>x</b>" not in hostile
