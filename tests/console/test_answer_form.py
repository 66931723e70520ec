"""The answer form tells the operator what to type (each node's declared type, how its text is read, an
example) and takes a text node's value as typed: `PostNL` for a `str` node, while every other node still
takes JSON. The CLI's `answer` reads a value the same way (`console.answers`)."""

from __future__ import annotations

import html as html_lib
import json
import re
from typing import Any

import pytest
from django.test import AsyncClient
from pydantic import BaseModel

from flowdeck.console import answers
from flowdeck.engine import Flow
from flowdeck.engine.engine import FlowEngine
from tests.console.test_outcomes import HTMX, _message, _stopped, client, web, workers  # noqa: F401
from tests.engine.engine_support import until

pytestmark = pytest.mark.django_db(transaction=True, serialized_rollback=True)


class Parcel(BaseModel):
    carrier: str
    weight: int


typed = (
    Flow.init("typed")
    .output("carrier", lambda ctx: "x", type=str)
    .output("weight", lambda ctx: 1, type=int)
    .output("parcel", lambda ctx: None, type=Parcel)
    .output("free", lambda ctx: None)
    .step("notify", lambda ctx: None)
)


def test_each_node_has_its_type_how_it_reads_and_an_example() -> None:
    shown = {h.node: (h.tag, h.reads, h.example) for h in answers.hints(typed)}

    assert shown == {
        "carrier": ("str", "text", "some text"),
        "weight": ("int", "json", "42"),
        "parcel": ("Parcel", "json", '{"carrier": "some text", "weight": 42}'),
        "free": ("json", "json", '{"any": "JSON"}'),
        "notify": ("none", "none", ""),
    }
    words = {h.node: h.words for h in answers.hints(typed)}
    assert words["weight"] == "int · JSON, e.g. 42"
    assert words["notify"] == "none · leave empty: this node records no value"


@pytest.mark.parametrize(
    ("node", "text", "value"),
    [
        ("carrier", "PostNL", "PostNL"),  # a bare string for a text node
        ("carrier", "  a courier, by hand ", "a courier, by hand"),
        ("carrier", '"PostNL"', "PostNL"),  # JSON still reads as JSON: nothing accepted before changes
        ("carrier", '"42"', "42"),  # quoted to be text
        ("carrier", "42", 42),  # JSON: the engine refuses it as not a valid str
        ("carrier", "", None),
        ("weight", "42", 42),
        ("parcel", '{"carrier": "DHL", "weight": 2}', {"carrier": "DHL", "weight": 2}),
    ],
)
def test_text_is_read_by_the_node_type(node: str, text: str, value: Any) -> None:
    assert answers.read(text, answers.hint_for(typed, node)) == value


@pytest.mark.parametrize(("node", "text"), [("weight", "PostNL"), ("free", "PostNL"), ("nope", "PostNL")])
def test_other_nodes_still_take_json(node: str, text: str) -> None:
    with pytest.raises(ValueError, match="not JSON"):
        answers.read(text, answers.hint_for(typed, node))


def test_a_bare_string_is_held_to_the_store_rules() -> None:
    with pytest.raises(ValueError, match="NUL"):
        answers.read("Post\x00NL", answers.hint_for(typed, "carrier"))


async def test_the_form_shows_the_type_and_takes_postnl(
    workers: FlowEngine,  # noqa: F811
    client: AsyncClient,  # noqa: F811
) -> None:
    eid = await workers.workflows.start("ships")
    await until(workers.store, eid, _stopped)
    page = (await client.get(f"/executions/{eid}")).content.decode()
    hint = re.search(r'<span class="help" id="answer-hint" data-answer-hint>([^<]*)</span>', page)
    assert hint is not None, page
    said = html_lib.unescape(hint[1])
    assert said == 'str · text as typed, e.g. some text (quote text that reads as JSON: "42")'
    options = re.findall(r'<option value="(\w+)" data-hint="([^"]*)" data-example="[^"]*" ?(selected)?', page)
    assert [(n, selected) for n, _, selected in options] == [("carrier", "selected"), ("parcels", "")]
    assert html_lib.unescape(options[1][1]) == "int · JSON, e.g. 42"  # the hint when parcels is chosen
    assert "parcels (int)" in page

    refused = await client.post(f"/executions/{eid}/answer/", {"node": "parcels", "value": "one"}, **HTMX)
    assert refused.status_code == 400
    assert _message(refused.content.decode())[1].startswith("value: not JSON")

    answered = await client.post(f"/executions/{eid}/answer/", {"node": "carrier", "value": "PostNL"}, **HTMX)
    assert _message(answered.content.decode()) == (
        "ok",
        "Answer recorded for carrier (its value PostNL); resume the execution to go on.",
    )
    fields = await workers.store.get_all_fields(eid)
    assert json.loads(fields["carrier"].value) == "PostNL"
