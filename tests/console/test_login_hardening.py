"""Login hardening: repeated failures lock one username at one address out (django-axes), with the
console's styled page; tokens keep working; Django's password validators refuse weak passwords."""

from __future__ import annotations

import pytest
from asgiref.sync import sync_to_async
from django.conf import settings
from django.contrib.auth import get_user_model
from django.contrib.auth.password_validation import validate_password
from django.core.exceptions import ValidationError
from django.test import AsyncClient, Client

from flowdeck.console import demo, runtime
from flowdeck.console.discovery import discover
from flowdeck.console.models import create_token

pytestmark = pytest.mark.django_db

RIGHT = "correct horse battery staple"


@pytest.fixture(autouse=True)
def quick_hashing(settings: object) -> None:
    """Many logins per test: a fast hasher (the project's is deliberately slow)."""
    settings.PASSWORD_HASHERS = ["django.contrib.auth.hashers.MD5PasswordHasher"]  # type: ignore[attr-defined]


@pytest.fixture
def lena() -> object:
    return get_user_model().objects.create_user("lena", password=RIGHT)


def _login(client: Client, username: str, password: str) -> object:
    return client.post("/login/", {"username": username, "password": password, "next": "/executions/"})


def _fail_until_locked(client: Client, username: str) -> list[int]:
    return [_login(client, username, "wrong").status_code for _ in range(settings.AXES_FAILURE_LIMIT)]


def test_after_the_failure_limit_the_right_password_is_refused_with_a_styled_page(lena: object) -> None:
    client = Client()

    statuses = _fail_until_locked(client, "lena")
    refused = _login(client, "lena", RIGHT)

    assert settings.AXES_FAILURE_LIMIT == 5
    assert statuses == [200, 200, 200, 200, 429]
    assert refused.status_code == 429
    page = refused.content.decode()
    assert "Too many failed logins for lena from this address (5 in a row)" in page
    assert "refused for the next 15 minutes, even with the right password" in page
    assert "/static/flowdeck/console/console.css" in page  # the console's own page, not a bare text answer
    assert refused["Content-Type"] == "text/html; charset=utf-8"
    assert client.get("/executions/").status_code == 302  # still logged out


def test_the_failures_before_the_limit_show_the_usual_message_and_a_success_clears_them(lena: object) -> None:
    client = Client()
    for _ in range(settings.AXES_FAILURE_LIMIT - 1):
        assert "did not match" in _login(client, "lena", "wrong").content.decode()

    assert _login(client, "lena", RIGHT).status_code == 302
    client.post("/logout/")
    # the count started again: as many failures as before are still not a lockout
    assert {_login(client, "lena", "wrong").status_code for _ in range(settings.AXES_FAILURE_LIMIT - 1)} == {
        200
    }


def test_the_lockout_is_per_username_and_address(lena: object) -> None:
    get_user_model().objects.create_user("otto", password=RIGHT)
    _fail_until_locked(Client(), "lena")

    assert _login(Client(), "otto", RIGHT).status_code == 302  # another user, the same address
    assert _login(Client(REMOTE_ADDR="10.9.8.7"), "lena", RIGHT).status_code == 302  # another address
    assert _login(Client(), "lena", RIGHT).status_code == 429


# as in test_views.py: the engine runs in threads; the serialized rollback keeps the content types whole
@pytest.mark.django_db(transaction=True, serialized_rollback=True)
async def test_a_locked_out_user_s_api_token_still_works() -> None:
    user = await get_user_model().objects.acreate_user("lena", password=RIGHT)
    token = await sync_to_async(create_token)(user, "ci")
    await sync_to_async(_fail_until_locked)(Client(), "lena")
    discover(["tests.console.flows"])
    runtime.reset()
    await runtime.engine()
    try:
        response = await AsyncClient().get("/api/v1/workflows", headers={"Authorization": f"Bearer {token}"})
    finally:
        runtime.reset()

    assert response.status_code == 200
    assert "counter" in {workflow["id"] for workflow in response.json()}


@pytest.mark.parametrize(
    ("password", "problem"),
    [
        ("short1!", "This password is too short. It must contain at least 12 characters."),
        ("password1234", "This password is too common."),
        ("738290164572", "This password is entirely numeric."),
        ("lena-the-user", "The password is too similar to the username."),
    ],
)
def test_the_password_validators_refuse_weak_passwords(password: str, problem: str) -> None:
    user = get_user_model()(username="lena-the-user")

    with pytest.raises(ValidationError) as refused:
        validate_password(password, user)

    assert problem in refused.value.messages


def test_a_strong_password_and_the_demo_s_admin_password_pass_the_validators() -> None:
    validate_password(RIGHT, get_user_model()(username="lena"))
    password = demo.ensure_admin()
    validate_password(password, get_user_model().objects.get(username=demo.DEMO_USER))
