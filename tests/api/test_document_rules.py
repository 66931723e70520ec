"""Where the OpenAPI document's text rules are the server's, both ways (what schemathesis `--checks all`
probes: a schema-valid request the server refused, or the reverse).

The activity range's `from` and `to` (`GET /api/v1/activity`): every text the pattern takes is an instant
the server reads (an age, a calendar date of the years 1000-2999 with an optional time and offset); text
outside it is refused by the same pattern before anything is read, as the 400 naming the parameter. The
executions list's `workflow`: blank or the id rule's characters (no control character, no '/'), at most
200. In process: the document and the query schemas."""

from __future__ import annotations

import functools
import re
from datetime import UTC, datetime, timedelta

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from pydantic import ValidationError

from flowdeck.console import activity, refusals
from flowdeck.console.api import api
from flowdeck.console.api.activity import ActivityQuery
from flowdeck.console.api.executions import ListQuery

NOW = datetime(2026, 12, 4, 12, 0, tzinfo=UTC)


@functools.cache
def _documented(name: str, path: str = "/api/v1/activity") -> str:
    operation = api.get_openapi_schema()["paths"][path]["get"]
    (parameter,) = [p for p in operation["parameters"] if p["name"] == name]
    return str(parameter["schema"]["pattern"])


@pytest.mark.parametrize("name", ["from", "to"])
def test_the_document_says_what_an_instant_is(name: str) -> None:
    pattern = re.compile(_documented(name))
    taken = ["", "2h", "999999s", "99999d", "2026-12-01", "2028-02-29", "2000-02-29T23:59:59.123456-23:59"]
    refused = [
        "bogus",
        "2026-02-29",
        "1900-02-29",
        "2026-13-01",
        "0999-01-01",
        "999999d",
        "2h ",
        "2026-12-01T24:00",
    ]
    assert [text for text in taken if pattern.search(text)] == taken
    assert [text for text in refused if pattern.search(text)] == []


@settings(max_examples=300, deadline=None)
@given(st.from_regex(_documented("from"), fullmatch=True))
def test_every_instant_the_document_takes_is_read(text: str) -> None:
    assert ActivityQuery.model_validate({"from": text, "to": text}).since == text
    if text:
        assert isinstance(activity.parse_time(text, NOW), datetime)


@settings(max_examples=300, deadline=None)
@given(st.text(max_size=40).filter(lambda text: re.search(_documented("from"), text) is None))
def test_text_outside_the_pattern_is_refused_before_it_is_read(text: str) -> None:
    with pytest.raises(ValidationError) as refused:
        ActivityQuery.model_validate({"from": text})
    assert [error["loc"] for error in refused.value.errors()] == [("from",)]


def test_an_instant_reaches_the_database_in_utc() -> None:
    """ISO 8601 offsets run to ±23:59 (the pattern takes them); PostgreSQL refuses a literal beyond ±15:59,
    which answered 500 before the instant was normalized."""
    moment = activity.parse_time("2493-10-06 16:20:00+22:14", NOW)
    assert (moment, moment.utcoffset()) == (datetime(2493, 10, 5, 18, 6, tzinfo=UTC), timedelta(0))


def test_an_age_before_year_1_is_a_clear_refusal_on_the_other_surfaces() -> None:
    """The console page and `flowdeck activity` read the same parser: 999999 days back is no instant."""
    with pytest.raises(ValueError, match="reaches back before year 1"):
        activity.parse_time("999999d", NOW)


def _workflow_pattern() -> str:
    return _documented("workflow", "/api/v1/executions")


@settings(max_examples=300, deadline=None)
@given(st.from_regex(_workflow_pattern(), fullmatch=True).filter(lambda text: len(text) <= 200))
def test_every_workflow_filter_the_document_takes_is_one_the_list_takes(text: str) -> None:
    assert ListQuery.model_validate({"workflow": text}).workflow == text
    assert refusals.check_filter("workflow", text.strip()) == text.strip()


@pytest.mark.parametrize("text", ["pay\x98ment", "pay\nment", "a/b", "\u2028", "x" * 201])
def test_a_workflow_filter_with_a_control_character_is_refused_by_the_document_and_the_server(
    text: str,
) -> None:
    assert re.search(_workflow_pattern(), text) is None or len(text) > 200
    with pytest.raises(ValidationError) as refused:
        ListQuery.model_validate({"workflow": text})
    assert [error["loc"] for error in refused.value.errors()] == [("workflow",)]
