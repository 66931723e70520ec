"""The console's own rows: API tokens (stored hashed) and the operator permission.

A token is shown once, when `create_token` makes it; only its SHA-256 digest is kept, so a leaked database
does not leak working credentials. `flow token create USER` (the CLI) calls `create_token`.
"""

from __future__ import annotations

import hashlib
import secrets

from django.conf import settings
from django.db import models
from django.utils import timezone

__all__ = ["OPERATE_PERMISSION", "ApiToken", "Operations", "create_token", "token_digest"]

# What an operator verb needs (cancel, cancel-all, resume --go, answer, end), as `has_perm` spells it.
OPERATE_PERMISSION = "console.operate_executions"

TOKEN_PREFIX = "fd_"


def token_digest(token: str) -> str:
    """The stored form of a token: its SHA-256, hex."""
    return hashlib.sha256(token.encode()).hexdigest()


class ApiToken(models.Model):
    """A bearer token of one user, for `Authorization: Bearer <token>` on the REST API."""

    user = models.ForeignKey(settings.AUTH_USER_MODEL, on_delete=models.CASCADE, related_name="api_tokens")
    name = models.CharField(max_length=100)
    key_hash = models.CharField(max_length=64, unique=True)
    created = models.DateTimeField(default=timezone.now)
    last_used = models.DateTimeField(null=True, blank=True)

    class Meta:
        ordering = ["-created"]
        verbose_name = "API token"

    def __str__(self) -> str:
        return f"{self.name} ({self.user})"


class Operations(models.Model):
    """No table: the holder of the operator permission (Django permissions hang off a model)."""

    class Meta:
        managed = False
        default_permissions = ()
        permissions = [("operate_executions", "Can cancel, resume, answer and end executions")]


def create_token(user: models.Model, name: str) -> str:
    """Make a token for `user` named `name`; answers the plaintext, which is never stored or shown again."""
    token = TOKEN_PREFIX + secrets.token_urlsafe(32)
    ApiToken.objects.create(user=user, name=name, key_hash=token_digest(token))
    return token
