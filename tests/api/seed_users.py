"""`python -m tests.api.seed_users`: the callers of the live API tests, printed as JSON.

An operator (with `console.operate_executions`), a viewer (no permission), each with a token; and a
session of the viewer and one of the operator, as cookie values.
"""

from __future__ import annotations

import json
import os

import django


def seed() -> dict[str, str]:
    from django.contrib.auth import BACKEND_SESSION_KEY, HASH_SESSION_KEY, SESSION_KEY, get_user_model
    from django.contrib.auth.models import Permission
    from django.contrib.sessions.backends.db import SessionStore

    from console.models import create_token

    users = get_user_model()
    operator = users.objects.create_user("olga", password="x")
    operator.user_permissions.add(Permission.objects.get(codename="operate_executions"))
    viewer = users.objects.create_user("victor", password="x")

    def session_of(user: object) -> str:
        session = SessionStore()
        session[SESSION_KEY] = str(user.pk)  # type: ignore[attr-defined]
        session[BACKEND_SESSION_KEY] = "django.contrib.auth.backends.ModelBackend"
        session[HASH_SESSION_KEY] = user.get_session_auth_hash()  # type: ignore[attr-defined]
        session.create()
        return str(session.session_key)

    return {
        "operator_token": create_token(operator, "tests"),
        "viewer_token": create_token(viewer, "tests"),
        "operator_session": session_of(operator),
        "viewer_session": session_of(viewer),
    }


if __name__ == "__main__":
    os.environ.setdefault("DJANGO_SETTINGS_MODULE", "tests.api.settings")
    django.setup()
    print(json.dumps(seed()))
