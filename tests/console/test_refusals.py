"""No 500 from the console's pages and forms: hostile input gets the styled 400 page (or its message
fragment for htmx) and records nothing, an address naming nothing gets the styled 404, rows written
before the id rule still list and open, and a signal form works whatever its fields are named."""

from __future__ import annotations

import re
from datetime import UTC, datetime
from urllib.parse import unquote

import pytest
from django.test import AsyncClient
from django.urls import resolve, reverse
from hypothesis import example, given, settings
from hypothesis import strategies as st
from pydantic import BaseModel, Field

from flowdeck.engine import Flow
from flowdeck.engine.engine import FlowEngine
from flowdeck.store import spi
from tests.console.test_views import engine, operator, viewer  # noqa: F401  (fixtures)

pytestmark = pytest.mark.django_db(transaction=True, serialized_rollback=True)

LONG = "x" * 201
MAX_OFFSET = 2**63 - 1  # the largest OFFSET the databases take
MAX_PAGE = MAX_OFFSET // 25 + 1  # 25 rows a page


def _styled(html: str, title: str) -> str:
    """The message of a styled console error page (asserting it is one: the console's header, the title)."""
    assert '<a class="brand"' in html
    assert f"<h1>{title}</h1>" in html
    assert "Traceback" not in html
    found = re.search(r'<p class="message error" role="status">([^<]*)</p>', html)
    assert found is not None, html
    return found[1]


async def _history_sizes(engine: FlowEngine, *ids: str) -> dict[str, int]:  # noqa: F811
    return {eid: len((await engine.executions.history(eid, None)).events) for eid in ids}


@pytest.mark.parametrize(
    ("path", "said"),
    [
        ("/executions/?page=9223372036854775807", f"page: must be a whole number from 1 to {MAX_PAGE}"),
        ("/executions/?page=99999999999999999999", "page: must be a whole number from 1 to"),
        ("/executions/?page=%C2%B2", "page: must be a whole number"),  # '²'.isdigit(), int('²') fails
        ("/executions/?page=0", "page: must be a whole number from 1 to"),
        ("/executions/c-1/history/?offset=99999999999999999999", "offset: must be a whole number from 0 to"),
        ("/executions/c-1/history/?offset=-1", "offset: must be a whole number from 0 to"),
        ("/executions/?q=a%00b", "q: must not contain a NUL character (at position 1)"),
        ("/executions/?status=%00", "status: must not contain a NUL character (at position 0)"),
        ("/executions/a%00b", "path: must not contain a NUL character (at position 13)"),
        ("/workflows/a%00b/", "path: must not contain a NUL character (at position 12)"),
        (f"/executions/?q={LONG}", "q: must be at most 200 characters (got 201)"),
        (f"/executions/?workflow={LONG}", "workflow: must be at most 200 characters (got 201)"),
        (f"/executions/{LONG}", "execution id: must be at most 200 characters (got 201)"),
        (f"/executions/{LONG}/panel/", "execution id: must be at most 200 characters (got 201)"),
        (f"/workflows/{LONG}/", "workflow id: must be at most 200 characters (got 201)"),
        (f"/workflows/{LONG}/diagram/dot/", "workflow id: must be at most 200 characters (got 201)"),
    ],
)
async def test_hostile_query_and_path_get_the_styled_400(
    engine: FlowEngine,  # noqa: F811
    operator: AsyncClient,  # noqa: F811
    caplog: pytest.LogCaptureFixture,
    path: str,
    said: str,
) -> None:
    await engine.workflows.start("counter", execution_id="c-1")
    reply = await operator.get(path)
    assert reply.status_code == 400
    assert _styled(reply.content.decode(), "Bad request").startswith(f"Refused: {said}")
    logged = [(r.levelname, r.getMessage().split(" (")[0], r.exc_info) for r in caplog.records]
    assert [entry for entry in logged if entry[0] != "INFO"] == [
        ("WARNING", "Bad Request: " + path.split("?")[0].replace("%00", r"\x00"), None)
    ]


async def test_the_largest_page_and_offset_are_answered(
    engine: FlowEngine,  # noqa: F811
    operator: AsyncClient,  # noqa: F811
) -> None:
    await engine.workflows.start("counter", execution_id="c-1")
    page = await operator.get(f"/executions/?page={MAX_PAGE}")
    assert page.status_code == 200
    assert '<span id="total">0 of 1</span>' in page.content.decode()
    assert f"page {MAX_PAGE} of 1" in page.content.decode()
    rows = await operator.get(f"/executions/c-1/history/?offset={MAX_OFFSET}")
    assert (rows.status_code, re.findall(r'data-seq="(\d+)"', rows.content.decode())) == (200, [])


@pytest.mark.parametrize(
    ("path", "data", "said"),
    [
        ("/executions/c-1/cancel/", {"reason": "a\x00b"}, "reason: must not contain a NUL character"),
        ("/executions/c-1/end/", {"reason": "\x00"}, "reason: must not contain a NUL character"),
        ("/executions/cancel/", {"ids": ["c-1"], "reason": "\x00"}, "reason: must not contain a NUL"),
        ("/executions/cancel/", {"ids": ["c-1", "a\x00b"]}, "ids: must not contain a NUL character"),
        ("/executions/cancel/", {"ids": ["c-1", LONG]}, "execution id: must be at most 200 characters"),
        (
            "/executions/c-1/signal/",
            {"input_name": "count", "n": "1", "note": "a\x00b"},
            "note: must not contain a NUL character",
        ),
        ("/executions/c-1/answer/", {"node": "double", "value": "\x00"}, "value: must not contain a NUL"),
        ("/workflows/counter/start/", {"execution_id": "n\x00"}, "execution_id: must not contain a NUL"),
        (f"/executions/{LONG}/cancel/", {"reason": "r"}, "execution id: must be at most 200 characters"),
        (f"/executions/{LONG}/resume/", {"go": "1"}, "execution id: must be at most 200 characters"),
        (f"/executions/{LONG}/answer/", {"node": "double"}, "execution id: must be at most 200 characters"),
        (f"/executions/{LONG}/end/", {"reason": "r"}, "execution id: must be at most 200 characters"),
        (f"/executions/{LONG}/signal/", {"input_name": "count"}, "execution id: must be at most 200"),
        (f"/workflows/{LONG}/start/", {}, "workflow id: must be at most 200 characters (got 201)"),
        (f"/parked/{LONG}/abc/resume/", {"go": "1"}, "workflow id: must be at most 200 characters"),
        (f"/parked/{LONG}/abc/cancel/", {"reason": "r"}, "workflow id: must be at most 200 characters"),
    ],
)
async def test_a_form_with_hostile_input_is_refused_and_records_nothing(
    engine: FlowEngine,  # noqa: F811
    operator: AsyncClient,  # noqa: F811
    path: str,
    data: dict[str, object],
    said: str,
) -> None:
    await engine.workflows.start("counter", execution_id="c-1")
    before = await _history_sizes(engine, "c-1")
    page = await operator.post(path, data)
    assert page.status_code == 400
    assert _styled(page.content.decode(), "Bad request").startswith(f"Refused: {said}")
    fragment = await operator.post(path, data, headers={"HX-Request": "true"})  # what htmx swaps in
    assert fragment.status_code == 400
    assert re.fullmatch(
        r'<p class="message error" role="status">Refused: [^<]+</p>\s*', fragment.content.decode()
    )
    assert await _history_sizes(engine, "c-1") == before
    assert (await engine.executions.search(None, None, 10, 0)).total == 1


@pytest.mark.parametrize(
    "typed", ['{"n": 1, "note": "a\\u0000b"}', '{"n": 1, "note": "\\udfff"}', '{"n": 1, "\\u0000": 2}']
)
async def test_json_holding_unstorable_text_is_refused_and_records_nothing(
    engine: FlowEngine,  # noqa: F811
    operator: AsyncClient,  # noqa: F811
    typed: str,
) -> None:
    started = await operator.post("/workflows/counter/start/", {"execution_id": "j-1", "input:count": typed})
    assert started.status_code == 400
    assert "count: a string must not contain" in started.content.decode()
    assert (await engine.executions.search(None, None, 10, 0)).total == 0


async def test_an_id_breaking_the_rule_is_refused_at_the_start_form(
    engine: FlowEngine,  # noqa: F811
    operator: AsyncClient,  # noqa: F811
) -> None:
    for bad in (LONG, "a\nb", "a/b", ".."):
        reply = await operator.post("/workflows/counter/start/", {"execution_id": bad})
        assert reply.status_code == 400
        assert "invalid execution id" in reply.content.decode()
    assert (await engine.executions.search(None, None, 10, 0)).total == 0


@pytest.mark.parametrize("path", ["/nope/", "/executions/nope", "/workflows/nope/", "/executions/c/x/y/"])
async def test_an_address_naming_nothing_gets_the_styled_404(
    engine: FlowEngine,  # noqa: F811
    operator: AsyncClient,  # noqa: F811
    path: str,
) -> None:
    reply = await operator.get(path)
    assert reply.status_code == 404
    said = _styled(reply.content.decode(), "Not found")
    assert said in {
        "There is no page at this address.",
        "Not found: no execution &#x27;nope&#x27;.",
        "Not found: no workflow &#x27;nope&#x27;.",
    }


async def test_an_unknown_page_is_the_styled_404_without_a_login() -> None:
    reply = await AsyncClient().get("/no/such/page/")
    assert reply.status_code == 404
    assert _styled(reply.content.decode(), "Not found") == "There is no page at this address."


# ------------------------------------------------------------------ ids written before the id rule

LEGACY = ["legacy\nnewline", "legacy/slash", "50%off", "%2F", "..", "tab\there", "sp ace?#"]


async def _legacy(engine: FlowEngine, eid: str) -> None:  # noqa: F811
    """A row as the store held it before the rule: written through the store, as the engine no longer
    would."""
    info = await engine.workflows.describe("counter")
    created = spi.Event(spi.EventKind.CREATED, "counter", eid, datetime.now(UTC), {})
    assert await engine.store.create_execution_if_absent(
        eid, "counter", info.structural_hash, spi.Running(), created
    )


async def test_ids_written_before_the_rule_are_listed_and_open(
    engine: FlowEngine,  # noqa: F811
    operator: AsyncClient,  # noqa: F811
) -> None:
    for eid in LEGACY:
        await _legacy(engine, eid)
    listing = await operator.get("/executions/")
    assert listing.status_code == 200
    html = listing.content.decode()
    links = re.findall(r'<td class="eid"><a href="(/executions/[^"]+)">', html)
    assert len(links) == len(LEGACY)
    assert "/executions/legacy%0Anewline" in links
    assert '">legacy\\nnewline</a>' in html  # the newline shows as an escape, not as a space
    for link in links:
        page = await operator.get(link)
        assert page.status_code == 200, link
        eid = re.search(r'data-execution-id="([^"]*)"', page.content.decode())
        assert eid is not None
    for eid in LEGACY:
        panel = await operator.get(reverse("flowdeck:console-execution-panel", args=[eid]))
        assert panel.status_code == 200, eid
        history = await operator.get(reverse("flowdeck:console-execution-history", args=[eid]))
        assert re.findall(r'data-seq="(\d+)"', history.content.decode()) == ["1"], eid


async def test_an_operator_cancels_a_row_written_before_the_rule(
    engine: FlowEngine,  # noqa: F811
    operator: AsyncClient,  # noqa: F811
) -> None:
    await _legacy(engine, "legacy\nnewline")
    one = await operator.post(
        reverse("flowdeck:console-execution-cancel", args=["legacy\nnewline"]), {"reason": "r"}
    )
    assert one.status_code == 200
    assert (await engine.executions.describe("legacy\nnewline")).cancel_requested is True


_DOT_SEGMENTS = {".", "..", "%2e", "%2e%2e", ".%2e", "%2e."}  # what a browser resolves away (WHATWG URL)


@settings(deadline=None)
@given(st.text(st.characters(exclude_categories=("Cs",), exclude_characters="\x00"), min_size=1))
@example("legacy\nnewline")
@example("a/b")
@example("..")
@example("%2e")
@example("50%off")
def test_every_stored_id_round_trips_through_its_address(eid: str) -> None:
    for name in (
        "flowdeck:console-execution",
        "flowdeck:console-execution-panel",
        "flowdeck:console-execution-signal",
    ):
        address = reverse(name, args=[eid])
        assert not _DOT_SEGMENTS & {part.lower() for part in address.split("/")}, address
        # what the browser sends, as the server decodes it (PATH_INFO)
        assert resolve(unquote(address)).kwargs == {"execution_id": eid}, address


def test_an_id_keeping_the_rule_is_written_as_it_is() -> None:
    assert reverse("flowdeck:console-execution", args=["order-17_a:b@c"]) == "/executions/order-17_a:b@c"


# ------------------------------------------------------------------------- signal form field names


class Basket(BaseModel):
    items: int = Field(ge=1)
    keys: str = ""
    values: str = ""


basket = Flow.init("basket").input("basket", Basket).output("n", lambda ctx: ctx.basket.items, type=int)


async def test_a_signal_form_works_whatever_its_fields_are_named(
    engine: FlowEngine,  # noqa: F811
    operator: AsyncClient,  # noqa: F811
) -> None:
    await engine.register("basket", basket)
    await engine.workflows.start("basket", execution_id="b-1")
    page = (await operator.get("/executions/b-1")).content.decode()
    assert re.findall(r'name="(items|keys|values)"', page) == ["items", "keys", "values"]
    bad = await operator.post("/executions/b-1/signal/", {"input_name": "basket", "items": "0"})
    assert bad.status_code == 400
    errors = re.findall(r'data-error-for="([^"]+)">([^<]+)<', bad.content.decode())
    assert errors == [("items", "Input should be greater than or equal to 1")]
    assert (await engine.executions.describe("b-1")).inputs[0].delivered is False
    good = await operator.post("/executions/b-1/signal/", {"input_name": "basket", "items": "3"})
    assert good.status_code == 200
    assert (await engine.store.get_all_fields("b-1"))["basket"].decode() == {
        "items": 3,
        "keys": "",
        "values": "",
    }


async def test_django_s_own_refusal_gets_the_styled_400(
    engine: FlowEngine,  # noqa: F811
    operator: AsyncClient,  # noqa: F811
) -> None:
    await engine.workflows.start("counter", execution_id="c-1")
    fields = {f"f{n}": "x" for n in range(1001)}  # past DATA_UPLOAD_MAX_NUMBER_FIELDS: TooManyFieldsSent
    reply = await operator.post("/executions/c-1/cancel/", {"reason": "r", **fields})
    assert reply.status_code == 400
    said = _styled(reply.content.decode(), "Bad request")
    assert said == "The request was refused: it is malformed or too large."
    assert (await engine.executions.describe("c-1")).cancel_requested is False
