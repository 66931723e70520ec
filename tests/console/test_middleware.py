from __future__ import annotations

import pytest
from django.conf import settings
from django.test import Client


@pytest.mark.django_db
@pytest.mark.parametrize("cookie", ["abc\x00def", "../../etc", "x" * 200])
def test_an_implausible_session_cookie_is_an_anonymous_visit_not_a_server_error(cookie: str) -> None:
    client = Client()
    client.cookies[settings.SESSION_COOKIE_NAME] = cookie
    response = client.get("/executions/")
    assert response.status_code == 302
    assert response["Location"].startswith(settings.LOGIN_URL)
