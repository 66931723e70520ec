"""The console's own rows: API tokens (stored hashed) and the permissions of the people who act.

A token is shown once, when `create_token` makes it; only its SHA-256 digest is kept, so a leaked database
does not leak working credentials. A token may carry an expiry and may be revoked; either way the API
refuses it at once (`ApiToken.objects.usable`). `flowdeck token create|list|revoke` (the CLI, see
`flowdeck.console.tokens`) manages them.

Two permissions, independent of each other (neither implies the other; a superuser holds both):
`console.run_executions` starts executions and signals their inputs; `console.operate_executions` runs the
operator verbs. A user with neither can read everything and change nothing.

`Activity` is the record of what people did: one row per operator action (a bulk action is one row naming
every execution it touched, through `ActivityExecution`), written by `flowdeck.console.activity` alone.

`SavedView` is a person's named filter of the executions list (its query string), listed on that page.
"""

from __future__ import annotations

import hashlib
import secrets
from datetime import datetime, timedelta

from django.conf import settings
from django.db import models
from django.db.models import Q
from django.utils import timezone

__all__ = [
    "OPERATE_PERMISSION",
    "RUN_PERMISSION",
    "TOUCH_EVERY",
    "Activity",
    "ActivityExecution",
    "ApiToken",
    "Operations",
    "SavedView",
    "create_token",
    "new_secret",
    "token_digest",
]

# What an operator verb needs (cancel, cancel-all, resume --go, answer, end), as `has_perm` spells it.
OPERATE_PERMISSION = "flowdeck_console.operate_executions"
# What starting an execution and signalling an input need.
RUN_PERMISSION = "flowdeck_console.run_executions"

TOKEN_PREFIX = "fd_"
# A token's `last_used` is written at most this often: a busy client does not write on every request.
TOUCH_EVERY = timedelta(minutes=1)


def token_digest(token: str) -> str:
    """The stored form of a token: its SHA-256, hex."""
    return hashlib.sha256(token.encode()).hexdigest()


class ApiTokenQuerySet(models.QuerySet["ApiToken"]):
    def usable(self, now: datetime) -> ApiTokenQuerySet:
        """Tokens the API accepts at `now`: not revoked, not expired, of an active user."""
        return self.filter(revoked__isnull=True, user__is_active=True).filter(
            Q(expires__isnull=True) | Q(expires__gt=now)
        )


class ApiToken(models.Model):
    """A bearer token of one user, for `Authorization: Bearer <token>` on the REST API."""

    user = models.ForeignKey(settings.AUTH_USER_MODEL, on_delete=models.CASCADE, related_name="api_tokens")
    name = models.CharField(max_length=100)
    key_hash = models.CharField(max_length=64, unique=True)
    created = models.DateTimeField(default=timezone.now)
    last_used = models.DateTimeField(null=True, blank=True)
    expires = models.DateTimeField(null=True, blank=True, help_text="refused from this instant on")
    revoked = models.DateTimeField(null=True, blank=True, help_text="when it was revoked (refused since)")

    objects = ApiTokenQuerySet.as_manager()

    class Meta:
        ordering = ["-created"]
        verbose_name = "API token"

    def __str__(self) -> str:
        return f"{self.name} ({self.user})"

    def state(self, now: datetime) -> str:
        """`active`, `expired` or `revoked` (revoked wins: it is what a person did)."""
        if self.revoked is not None:
            return "revoked"
        if self.expires is not None and self.expires <= now:
            return "expired"
        return "active"


class Operations(models.Model):
    """No table: the holder of the console's permissions (Django permissions hang off a model)."""

    class Meta:
        managed = False
        default_permissions = ()
        permissions = [
            ("operate_executions", "Can cancel, resume, answer and end executions"),
            ("run_executions", "Can start executions and signal their inputs"),
        ]


def create_token(user: models.Model, name: str, expires: datetime | None = None) -> str:
    """Make a token for `user` named `name` (refused from `expires` on, if given); answers the plaintext,
    which is never stored or shown again."""
    token = new_secret()
    ApiToken.objects.create(user=user, name=name, key_hash=token_digest(token), expires=expires)
    return token


def new_secret() -> str:
    """A fresh token's plaintext (store only its `token_digest`)."""
    return TOKEN_PREFIX + secrets.token_urlsafe(32)


class Activity(models.Model):
    """One action a person took (start, signal, cancel, resume, answer, end, a bulk cancel), from the
    console, the API or the CLI, with what came of it. Never a signal's or an answer's value: those may
    hold personal data, so `detail` keeps the input's name and the value's size only."""

    at = models.DateTimeField(default=timezone.now)
    actor = models.CharField(max_length=150, help_text="a username; for the CLI, --as USER or cli:<os user>")
    source = models.CharField(max_length=10, help_text="console, api or cli")
    action = models.CharField(max_length=40, help_text="start, signal, cancel, resume:dry-run, …")
    workflow_id = models.CharField(max_length=200, blank=True)
    outcome = models.CharField(max_length=20, help_text="accepted, already-requested, refused, invalid, …")
    code = models.CharField(max_length=40, blank=True, help_text="why it was refused (an API error code)")
    message = models.TextField(blank=True, help_text="the refusal's or the error's text")
    detail = models.JSONField(default=dict, blank=True)

    class Meta:
        ordering = ["-at", "-id"]
        indexes = [
            models.Index(fields=["-at", "-id"], name="activity_newest"),
            models.Index(fields=["actor", "-at"], name="activity_actor"),
            models.Index(fields=["action", "-at"], name="activity_action"),
        ]
        verbose_name_plural = "activity"

    def __str__(self) -> str:
        return f"{self.at:%Y-%m-%d %H:%M:%S} {self.actor} {self.action} {self.outcome}"


class ActivityExecution(models.Model):
    """An execution an action named (its id as given, so a refused unknown id is recorded too)."""

    activity = models.ForeignKey(Activity, on_delete=models.CASCADE, related_name="targets")
    execution_id = models.CharField(max_length=200, db_index=True)

    class Meta:
        ordering = ["id"]


class SavedView(models.Model):
    """A named view of the executions list, one person's: the list's query string (its filters and sort,
    without the page), so opening it is opening that URL."""

    user = models.ForeignKey(settings.AUTH_USER_MODEL, on_delete=models.CASCADE, related_name="saved_views")
    name = models.CharField(max_length=80)
    query = models.CharField(max_length=2000, blank=True, help_text="the list's query string, without '?'")
    created = models.DateTimeField(default=timezone.now)

    class Meta:
        ordering = ["name", "id"]
        constraints = [models.UniqueConstraint(fields=["user", "name"], name="saved_view_unique_name")]

    def __str__(self) -> str:
        return f"{self.name} ({self.user_id})"
