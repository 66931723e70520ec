"""Tokens over their life, against the live server: made, listed (never the secret), used (its last use
recorded at most once a minute), expired and revoked (refused at once, 401 JSON). The CLI runs beside the
server on its database, as an operator runs it; `tests.api.age_token` stands in for time passing."""

from __future__ import annotations

import hashlib
import json
import urllib.error
import urllib.request
import uuid
from datetime import datetime, timedelta
from typing import Any

from tests.api.client import ApiClient, Live
from tests.api.test_errors import refused


def cli(live: Live, *args: str) -> Any:
    return json.loads(live.run("manage.py", "flowdeck", "token", *args, "--json"))


def make(live: Live, *extra: str) -> tuple[str, str]:
    """A new token of the viewer: (its name, its secret)."""
    name = f"t-{uuid.uuid4().hex[:10]}"
    return name, cli(live, "create", "victor", "--name", name, *extra)["token"]


def row(live: Live, name: str) -> dict[str, Any]:
    (found,) = [r for r in cli(live, "list", "--user", "victor")["items"] if r["name"] == name]
    return found


def when(text: str | None) -> datetime:
    assert text is not None
    return datetime.fromisoformat(text)


def document_status(live: Live, token: str) -> int:
    """The status of the OpenAPI document (guarded outside ninja) for this token."""
    request = urllib.request.Request(
        f"{live.base}/api/openapi.json", headers={"Authorization": f"Bearer {token}"}
    )
    try:
        with urllib.request.urlopen(request, timeout=30) as reply:
            return int(reply.status)
    except urllib.error.HTTPError as error:
        return error.code


def test_a_revoked_token_is_refused_at_once(live: Live) -> None:
    name, token = make(live)
    caller = ApiClient(live.base, token=token)
    assert caller.get("/workflows").status == 200
    assert document_status(live, token) == 200

    revoked = cli(live, "revoke", name)
    assert (revoked["name"], revoked["user"], revoked["state"], revoked["already_revoked"]) == (
        name,
        "victor",
        "revoked",
        False,
    )

    refused(caller.get("/workflows"), 401, "unauthenticated")
    refused(caller.post("/executions/search", {}), 401, "unauthenticated")
    assert document_status(live, token) == 401
    assert row(live, name)["state"] == "revoked"
    again = cli(live, "revoke", str(revoked["id"]))
    assert (again["already_revoked"], again["revoked"]) == (True, revoked["revoked"])


def test_the_list_never_shows_the_secret(live: Live) -> None:
    name, token = make(live, "--expires", "30d")
    listed = live.run("manage.py", "flowdeck", "token", "list")
    as_json = live.run("manage.py", "flowdeck", "token", "list", "--json")
    digest = hashlib.sha256(token.encode()).hexdigest()
    for text in (listed, as_json):
        assert token not in text
        assert token.removeprefix("fd_") not in text
        assert digest not in text
    assert listed.splitlines()[0].split() == [
        "ID",
        "USER",
        "NAME",
        "CREATED",
        "LAST",
        "USED",
        "EXPIRES",
        "STATE",
    ]
    (line,) = [ln for ln in listed.splitlines() if f" {name} " in ln]
    assert line.split()[1:3] == ["victor", name]
    assert line.split()[-1] == "active"
    assert set(row(live, name)) == {
        "id",
        "user",
        "name",
        "created",
        "last_used",
        "expires",
        "revoked",
        "state",
    }


def test_an_expired_token_is_refused(live: Live) -> None:
    name, token = make(live, "--expires", "1h")
    made = row(live, name)
    assert abs(when(made["expires"]) - when(made["created"]) - timedelta(hours=1)) < timedelta(seconds=5)
    assert (made["state"], made["revoked"]) == ("active", None)
    caller = ApiClient(live.base, token=token)
    assert caller.get("/workflows").status == 200

    assert live.run("-m", "tests.api.age_token", name, "3601").strip() == "1"

    refused(caller.get("/workflows"), 401, "unauthenticated")
    assert document_status(live, token) == 401
    assert row(live, name)["state"] == "expired"


def test_last_use_is_recorded_at_most_once_a_minute(live: Live) -> None:
    name, token = make(live)
    caller = ApiClient(live.base, token=token)
    assert row(live, name)["last_used"] is None

    assert caller.get("/workflows").status == 200
    first = when(row(live, name)["last_used"])
    assert first >= when(row(live, name)["created"])
    for _ in range(3):
        assert caller.get("/workflows").status == 200
    assert when(row(live, name)["last_used"]) == first  # within the minute: no write

    live.run("-m", "tests.api.age_token", name, "61")
    aged = when(row(live, name)["last_used"])
    assert aged == first - timedelta(seconds=61)
    assert caller.get("/workflows").status == 200
    assert when(row(live, name)["last_used"]) > aged + timedelta(seconds=60)
