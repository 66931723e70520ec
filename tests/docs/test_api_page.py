"""The REST API page names the routes the API serves: every route of its table is in the OpenAPI document
with that method, and every documented operation of the document is in the table."""

from __future__ import annotations

import re

import pytest

from tests.docs.fences import DOCS

ROUTE = re.compile(r"^\| `(GET|POST) (/[^`]*)` \|", re.MULTILINE)
# Routes the page leaves to others' pages on purpose (none yet: each new route needs a row or a reason).
NOT_ON_THE_PAGE: frozenset[tuple[str, str]] = frozenset()


def documented() -> set[tuple[str, str]]:
    from flowdeck.console.api import api

    document = api.get_openapi_schema(path_prefix="")
    return {
        (method.upper(), re.sub(r"^.*?/v1/", "/", path))
        for path, operations in document["paths"].items()
        for method in operations
        if method in ("get", "post")
    }


@pytest.mark.django_db
def test_the_route_table_is_the_api() -> None:
    page = (DOCS / "api.md").read_text()
    table = set(ROUTE.findall(page.split("## Routes", 1)[1].split("\n## ", 1)[0]))
    served = documented()
    assert table - served == set(), "the page lists routes the API does not serve"
    assert served - table - NOT_ON_THE_PAGE == set(), "the API serves routes the page does not list"
