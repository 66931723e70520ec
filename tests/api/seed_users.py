"""`python -m tests.api.seed_users`: the callers of the live API tests, printed as JSON.

An operator (`olga`: `console.operate_executions` and `console.run_executions`, as the migration grants
existing operators), a runner (`rita`: `flowdeck_console.run_executions` only), an operator without the run
permission (`otto`) and a viewer (`victor`: no permission, read-only), each with a token; a superuser
(`ada`, for the admin); and sessions of the operator, the runner and the viewer, as cookie values.
"""

from __future__ import annotations

import json
import os

import django


def seed() -> dict[str, str]:
    from django.contrib.auth import BACKEND_SESSION_KEY, HASH_SESSION_KEY, SESSION_KEY, get_user_model
    from django.contrib.auth.models import Permission
    from django.contrib.sessions.backends.db import SessionStore

    from flowdeck.console.models import create_token

    users = get_user_model()
    operator = users.objects.create_user("olga", password="x")
    operator.user_permissions.add(
        *Permission.objects.filter(codename__in=["operate_executions", "run_executions"])
    )
    runner = users.objects.create_user("rita", password="x")
    runner.user_permissions.add(Permission.objects.get(codename="run_executions"))
    viewer = users.objects.create_user("victor", password="x")
    operate_only = users.objects.create_user("otto", password="x")
    operate_only.user_permissions.add(Permission.objects.get(codename="operate_executions"))
    users.objects.create_superuser("ada", password="x")  # staff: the Django admin's pages

    def session_of(user: object) -> str:
        session = SessionStore()
        session[SESSION_KEY] = str(user.pk)  # type: ignore[attr-defined]
        session[BACKEND_SESSION_KEY] = "django.contrib.auth.backends.ModelBackend"
        session[HASH_SESSION_KEY] = user.get_session_auth_hash()  # type: ignore[attr-defined]
        session.create()
        return str(session.session_key)

    return {
        "operator_token": create_token(operator, "tests"),
        "runner_token": create_token(runner, "tests"),
        "viewer_token": create_token(viewer, "tests"),
        "operate_only_token": create_token(operate_only, "tests"),
        "operator_session": session_of(operator),
        "runner_session": session_of(runner),
        "viewer_session": session_of(viewer),
    }


if __name__ == "__main__":
    os.environ.setdefault("DJANGO_SETTINGS_MODULE", "tests.api.settings")
    django.setup()
    print(json.dumps(seed()))
