"""The Content-Security-Policy and the other security headers, on pages, API answers and static files;
the console's markup needs no inline script; `/api/docs` is served from the vendored Swagger UI."""

from __future__ import annotations

import re
from pathlib import Path

import pytest
from asgiref.testing import ApplicationCommunicator
from django.contrib.auth import get_user_model
from django.test import Client

from console.asgi import application

ROOT = Path(__file__).resolve().parents[2]

POLICY = (
    "default-src 'self'; script-src 'self'; style-src 'self' 'unsafe-inline'; img-src 'self' data:; "
    "font-src 'self'; connect-src 'self' ws://testserver wss://testserver; object-src 'none'; "
    "base-uri 'self'; form-action 'self'; frame-ancestors 'none'"
)
STATIC_POLICY = POLICY.replace("ws://testserver wss://testserver", "ws://127.0.0.1 wss://127.0.0.1")


async def _get(path: str) -> tuple[int, dict[str, str]]:
    """GET `path` through the project's ASGI application (static files never reach Django's middleware)."""
    scope = {
        "type": "http",
        "method": "GET",
        "path": path,
        "query_string": b"",
        "headers": [(b"host", b"127.0.0.1")],
        "server": ("127.0.0.1", 80),
        "client": ("127.0.0.1", 5000),
    }
    communicator = ApplicationCommunicator(application, scope)
    await communicator.send_input({"type": "http.request", "body": b""})
    start = await communicator.receive_output(30)
    while (await communicator.receive_output(30)).get("more_body"):
        pass
    await communicator.wait(30)
    return start["status"], {name.decode().lower(): value.decode() for name, value in start["headers"]}


@pytest.mark.django_db
@pytest.mark.parametrize(
    ("path", "status"),
    [("/login/", 200), ("/executions/", 302), ("/api/v1/workflows", 401), ("/no-such-page/", 404)],
)
def test_every_answer_carries_the_policy(path: str, status: int) -> None:
    response = Client().get(path)

    assert response.status_code == status
    assert response["Content-Security-Policy"] == POLICY
    assert response["X-Content-Type-Options"] == "nosniff"
    assert response["Referrer-Policy"] == "same-origin"


@pytest.mark.parametrize(
    ("path", "status"),
    [
        ("/static/console/console.js", 200),
        ("/static/vendor/swagger-ui/swagger-ui-bundle.js", 200),
        ("/static/no-such-file.js", 404),
    ],
)
async def test_static_files_carry_the_headers_pages_have(path: str, status: int) -> None:
    answered, headers = await _get(path)

    assert answered == status
    assert {
        name: headers.get(name)
        for name in ("content-security-policy", "x-content-type-options", "referrer-policy", "cache-control")
    } == {
        "content-security-policy": STATIC_POLICY,
        "x-content-type-options": "nosniff",
        "referrer-policy": "same-origin",
        "cache-control": "no-cache",
    }


INLINE_SCRIPT = re.compile(r"<script(?![^>]*\bsrc=)(?![^>]*type=\"application/json\")[^>]*>", re.I)
INLINE_HANDLER = re.compile(r"<[^>]+\son[a-z]+\s*=", re.I)
INLINE_STYLE = re.compile(r"<style\b|<[^>]+\sstyle\s*=", re.I)


def test_no_template_needs_inline_script_or_style() -> None:
    offending = {}
    for template in sorted((ROOT / "templates").rglob("*.html")):
        text = template.read_text()
        found = [p.pattern for p in (INLINE_SCRIPT, INLINE_HANDLER, INLINE_STYLE) if p.search(text)]
        if found:
            offending[str(template.relative_to(ROOT))] = found
    assert offending == {}


@pytest.mark.django_db
def test_the_api_docs_come_from_the_vendored_swagger_ui_with_no_inline_script() -> None:
    client = Client()
    client.force_login(get_user_model().objects.create_user("dora"))

    response = client.get("/api/docs")

    assert response.status_code == 200
    page = response.content.decode()
    scripts = re.findall(r"<script[^>]*>", page)
    assert scripts == [
        '<script id="swagger-settings" type="application/json">',
        '<script src="/static/vendor/swagger-ui/swagger-ui-bundle.js">',
        '<script src="/static/console/api-docs.js">',
    ]
    assert re.findall(r'<link rel="stylesheet" href="([^"]+)">', page) == [
        "/static/vendor/swagger-ui/swagger-ui.css",
        "/static/console/api-docs.css",  # its contrast fixes
    ]
    assert "//" not in "".join(re.findall(r'(?:src|href)="([^"]+)"', page))  # nothing from another host
    assert response["Content-Security-Policy"] == POLICY


def test_the_vendored_swagger_ui_is_recorded_with_its_version() -> None:
    versions = (ROOT / "static" / "vendor" / "VERSIONS.md").read_text()
    row = next(line for line in versions.splitlines() if line.startswith("| swagger-ui-dist |"))
    version = row.split("|")[2].strip()
    assert re.fullmatch(r"5\.\d+\.\d+", version)
    for name in ("swagger-ui-bundle.js", "swagger-ui.css", "LICENSE"):
        assert (ROOT / "static" / "vendor" / "swagger-ui" / name).is_file(), name
