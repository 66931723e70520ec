"""Run under the host project's settings (`python -m tests.console.host.probe`): migrate its SQLite file,
ask the host's pages and the console's, and print what came back as JSON (status, headers, body) by name.
"""

from __future__ import annotations

import json
import os

os.environ.setdefault("DJANGO_SETTINGS_MODULE", "tests.console.host.settings")

import django

django.setup()

from django.contrib.admin import site  # noqa: E402
from django.contrib.auth import get_user_model  # noqa: E402
from django.core.management import call_command  # noqa: E402
from django.test import Client  # noqa: E402


def _answer(response: object) -> dict[str, object]:
    return {
        "status": response.status_code,  # type: ignore[attr-defined]
        "headers": dict(response.headers),  # type: ignore[attr-defined]
        "body": response.content.decode(errors="replace"),  # type: ignore[attr-defined]
    }


def main() -> None:
    call_command("migrate", verbosity=0, interactive=False)
    anonymous = Client(raise_request_exception=False)
    operator = Client(raise_request_exception=False)
    operator.force_login(get_user_model().objects.create_user("olga"))
    answers = {
        "home": anonymous.get("/"),
        "admin login": anonymous.get("/admin/login/"),
        "console login": anonymous.get("/ops/login/"),
        "console anonymous": anonymous.get("/ops/executions/"),
        "console page": operator.get("/ops/executions/"),
        "console unstorable": operator.get("/ops/executions/", {"q": "a\x00b"}),
        "api anonymous": anonymous.get("/ops/api/v1/workflows"),
        "api no route": operator.get("/ops/api/v1/no-such-route"),
        "api nul": operator.get("/ops/api/v1/workflows", {"q": "\x00"}),
        "api too large": operator.post(
            "/ops/api/v1/executions/search",
            data=b"",
            content_type="application/json",
            CONTENT_LENGTH=str(10**9),
        ),
    }
    print(json.dumps({"site_header": str(site.site_header), **{k: _answer(v) for k, v in answers.items()}}))


if __name__ == "__main__":
    main()
