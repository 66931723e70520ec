"""The console's `login_required`: an anonymous caller goes to the console's own login page, wherever the
console is mounted, whatever the project's `LOGIN_URL` (a host keeps its own for its own pages)."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, TypeVar

from django.contrib.auth import decorators
from django.urls import reverse_lazy

__all__ = ["login_required"]

V = TypeVar("V", bound=Callable[..., Any])

LOGIN = reverse_lazy("flowdeck:login")


def login_required(view: V) -> V:
    """Django's `login_required`, sending the caller to `flowdeck:login`."""
    return decorators.login_required(view, login_url=LOGIN)  # type: ignore[return-value]
