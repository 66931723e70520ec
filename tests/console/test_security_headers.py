"""The Content-Security-Policy and the other security headers, on pages, API answers and static files;
the console's markup needs no inline script; `/api/docs` is served from the vendored Swagger UI."""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

import pytest
from asgiref.testing import ApplicationCommunicator
from django.contrib.auth import get_user_model
from django.test import Client

from flowdeck.console.asgi import application

ROOT = Path(__file__).resolve().parents[2]

POLICY = (
    "default-src 'self'; script-src 'self'; style-src 'self' 'unsafe-inline'; img-src 'self' data:; "
    "font-src 'self'; connect-src 'self' ws://testserver wss://testserver; object-src 'none'; "
    "base-uri 'self'; form-action 'self'; frame-ancestors 'none'"
)
STATIC_POLICY = POLICY.replace("ws://testserver wss://testserver", "ws://127.0.0.1 wss://127.0.0.1")


async def _get(path: str, scheme: str = "http") -> tuple[int, dict[str, str]]:
    """GET `path` through the project's ASGI application (static files never reach Django's middleware),
    over `scheme` as the server saw it."""
    scope = {
        "type": "http",
        "method": "GET",
        "scheme": scheme,
        "path": path,
        "query_string": b"",
        "headers": [(b"host", b"127.0.0.1")],
        "server": ("127.0.0.1", 443 if scheme == "https" else 80),
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


NEVER_CACHE = "max-age=0, no-cache, no-store, must-revalidate, private"


@pytest.mark.parametrize(
    ("path", "status", "cache"),
    [
        ("/static/flowdeck/console/console.js", 200, "no-cache"),
        ("/static/flowdeck/vendor/swagger-ui/swagger-ui-bundle.js", 200, "no-cache"),
        # the console's 404 page, drawn for its caller as every page is
        ("/static/no-such-file.js", 404, NEVER_CACHE),
    ],
)
async def test_static_files_carry_the_headers_pages_have(path: str, status: int, cache: str) -> None:
    answered, headers = await _get(path)

    assert answered == status
    assert {
        name: headers.get(name)
        for name in ("content-security-policy", "x-content-type-options", "referrer-policy", "cache-control")
    } == {
        "content-security-policy": STATIC_POLICY,
        "x-content-type-options": "nosniff",
        "referrer-policy": "same-origin",
        "cache-control": cache,
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
        '<script src="/static/flowdeck/vendor/swagger-ui/swagger-ui-bundle.js">',
        '<script src="/static/flowdeck/console/api-docs.js">',
    ]
    assert re.findall(r'<link rel="stylesheet" href="([^"]+)">', page) == [
        "/static/flowdeck/vendor/swagger-ui/swagger-ui.css",
        "/static/flowdeck/console/api-docs.css",  # its contrast fixes
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


async def test_static_files_obey_the_https_redirect_and_carry_hsts(settings: Any) -> None:
    settings.SECURE_SSL_REDIRECT = True
    settings.SECURE_HSTS_SECONDS = 3600
    settings.SECURE_HSTS_INCLUDE_SUBDOMAINS = True
    settings.SECURE_HSTS_PRELOAD = False

    plain, plain_headers = await _get("/static/flowdeck/console/console.js", "http")
    secure, secure_headers = await _get("/static/flowdeck/console/console.js", "https")
    missing, missing_headers = await _get("/static/no-such-file.js", "https")

    assert (plain, plain_headers["location"]) == (301, "https://127.0.0.1/static/flowdeck/console/console.js")
    assert "strict-transport-security" not in plain_headers  # HSTS is only ever sent over HTTPS
    assert (secure, missing) == (200, 404)
    assert secure_headers["strict-transport-security"] == "max-age=3600; includeSubDomains"
    assert missing_headers["strict-transport-security"] == "max-age=3600; includeSubDomains"


# transaction=True: a page reads the store (the live cursor) on a thread of its own, which a test's open
# SQLite transaction would lock out.
@pytest.mark.django_db(transaction=True, serialized_rollback=True)
def test_console_pages_and_api_answers_are_never_cached() -> None:
    """Each answer is for one caller (or refuses one): `private, no-store`, whoever asks, whatever came."""
    signed_in = Client()
    signed_in.force_login(get_user_model().objects.create_user("ada", password="x"))
    answers = {
        "page": signed_in.get("/account/"),
        "anonymous page": Client().get("/executions/"),
        "unknown page": signed_in.get("/no-such-page/"),
        "api docs": signed_in.get("/api/docs"),
        "api refusal": Client().get("/api/v1/workflows"),
        "api unknown route": signed_in.get("/api/v1/no-such-route"),
        "api guard refusal": signed_in.get("/api/v1/workflows", {"q": "\x00"}),
        "openapi document": signed_in.get("/api/openapi.json"),
    }
    assert {name: answer.status_code for name, answer in answers.items()} == {
        "page": 200,
        "anonymous page": 302,
        "unknown page": 404,
        "api docs": 200,
        "api refusal": 401,
        "api unknown route": 404,
        "api guard refusal": 400,
        "openapi document": 200,
    }
    for name, answer in answers.items():
        directives = {part.strip() for part in answer.get("Cache-Control", "").split(",")}
        assert {"private", "no-store"} <= directives, (name, answer.get("Cache-Control"))
