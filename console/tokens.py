"""`flowdeck token create|list|revoke`: the API tokens of the users, managed from the server's command line.

A token's secret is printed once, by `create`; `list` shows everything else (user, name, created, last used,
expires, state) and never the secret nor its digest. `revoke` takes a token's id or its name (with `--user`
to tell apart two users' tokens of one name); the API refuses a revoked token from the next request on.
Bad input (an unknown user, an unreadable or past expiry, a name matching no token or several) is a
`CommandError` of one line, exit code 2, and nothing is written.
"""

from __future__ import annotations

import argparse
import re
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from typing import Any

from django.contrib.auth import get_user_model
from django.core.management.base import CommandError, CommandParser
from django.utils import timezone

from flowdeck.console.management.commands import _output
from flowdeck.console.models import ApiToken, create_token

__all__ = ["TokenRow", "add_arguments", "parse_expiry", "run"]

NAME_MAX = ApiToken._meta.get_field("name").max_length or 100
_DURATION = re.compile(r"(\d{1,6})([hdw])")
_UNITS = {"h": "hours", "d": "days", "w": "weeks"}


def _usage(message: str) -> CommandError:
    return CommandError(message, returncode=2)


# ------------------------------------------------------------------------------------------ parsing


def add_arguments(token: CommandParser) -> None:
    """The `create`, `list` and `revoke` verbs under `flowdeck token`."""
    actions = token.add_subparsers(dest="token_action", metavar="ACTION", required=True)

    def action(name: str, help: str) -> CommandParser:
        sub = actions.add_parser(name, help=help, description=help)
        # SUPPRESS: a `--json` given before the action (`flowdeck token --json list`) is not reset here
        sub.add_argument("--json", action="store_true", default=argparse.SUPPRESS, help="answer JSON")
        return sub

    create = action("create", "make a token for USER; its secret is printed once")
    create.add_argument("username", metavar="USER")
    create.add_argument("--name", default="cli", help="a name for the token (default: cli)")
    create.add_argument(
        "--expires",
        metavar="WHEN",
        help="refuse it from then on: a duration (12h, 30d, 2w) or an ISO date or time (2027-01-31)",
    )

    listing = action("list", "every token: user, name, created, last used, expires, state (never the secret)")
    listing.add_argument("--user", dest="username", metavar="USER", help="only this user's tokens")

    revoke = action("revoke", "revoke a token (by id, or by name): the API refuses it from now on")
    revoke.add_argument("token", metavar="ID-or-NAME")
    revoke.add_argument("--user", dest="username", metavar="USER", help="only among this user's tokens")


def parse_expiry(text: str, now: datetime) -> datetime:
    """When a token given `--expires TEXT` at `now` stops working. A duration counts from `now`; a date is
    its midnight and a time without an offset is read in the server's time zone (`TIME_ZONE`)."""
    given = text.strip()
    duration = _DURATION.fullmatch(given)
    if duration:
        amount, unit = int(duration[1]), duration[2]
        if amount == 0:
            raise _usage(f"--expires {text!r} is no time at all: give a positive duration such as 30d")
        try:
            return now + timedelta(**{_UNITS[unit]: amount})
        except OverflowError:
            raise _usage(f"--expires {text!r} is past the calendar's end (year 9999)") from None
    try:
        when = datetime.fromisoformat(given)
    except ValueError:
        raise _usage(
            f"--expires {text!r} is neither a duration (12h, 30d, 2w) nor an ISO date or time (2027-01-31)"
        ) from None
    if timezone.is_naive(when):
        when = timezone.make_aware(when, timezone.get_current_timezone())
    try:
        when = when.astimezone(UTC)  # ISO 8601 offsets run to ±23:59, PostgreSQL's to ±15:59
    except OverflowError:
        raise _usage(f"--expires {text!r} is past the calendar's end (year 9999)") from None
    if when <= now:
        raise _usage(f"--expires {text!r} is already past (now is {now.isoformat(timespec='seconds')})")
    return when


def _check_name(name: str) -> str:
    if not name.strip():
        raise _usage("--name must not be blank")
    if len(name) > NAME_MAX:
        raise _usage(f"--name is {len(name)} characters long; at most {NAME_MAX} are kept")
    if not name.isprintable():
        raise _usage(f"--name {_output.escape(name)!r} holds a control character")
    if name.isdigit():
        raise _usage(f"--name {name!r} is only digits, which `flowdeck token revoke` reads as a token's id")
    return name


def _user(username: str) -> Any:
    users = get_user_model()
    try:
        return users.objects.get(**{users.USERNAME_FIELD: username})
    except users.DoesNotExist:
        raise _usage(f"no user {username!r} (create one with `manage.py createsuperuser`)") from None


# ------------------------------------------------------------------------------------------ rows


@dataclass(frozen=True)
class TokenRow:
    """A token as `list` shows it: everything but the secret."""

    id: int
    user: str
    name: str
    created: datetime
    last_used: datetime | None
    expires: datetime | None
    revoked: datetime | None
    state: str

    @classmethod
    def of(cls, token: ApiToken, now: datetime) -> TokenRow:
        return cls(
            token.pk,
            token.user.get_username(),
            token.name,
            token.created,
            token.last_used,
            token.expires,
            token.revoked,
            token.state(now),
        )

    def to_json(self) -> dict[str, Any]:
        iso = _iso
        return {
            "id": self.id,
            "user": self.user,
            "name": self.name,
            "created": iso(self.created),
            "last_used": iso(self.last_used),
            "expires": iso(self.expires),
            "revoked": iso(self.revoked),
            "state": self.state,
        }

    def cells(self) -> tuple[str, ...]:
        def minute(value: datetime | None, never: str = "never") -> str:
            return f"{timezone.localtime(value):%Y-%m-%d %H:%M}" if value else never

        return (
            str(self.id),
            _output.escape(self.user),
            _output.escape(self.name),
            minute(self.created),
            minute(self.last_used),
            minute(self.expires),
            self.state if self.revoked is None else f"revoked {minute(self.revoked)}",
        )


def _iso(value: datetime | None) -> str | None:
    return value.isoformat() if value else None


def _resolve(given: str, username: str | None) -> ApiToken:
    """The one token `given` names: the token of that id (digits), else the one unrevoked token of
    that name."""
    tokens = ApiToken.objects.select_related("user")
    if username is not None:
        tokens = tokens.filter(user=_user(username))
    if given.isdigit() and len(given) < 19:  # a bigint; longer digit strings are no id
        found = tokens.filter(pk=int(given)).first()
        if found is not None:
            return found
    named = list(tokens.filter(name=given, revoked__isnull=True).order_by("pk"))
    if len(named) == 1:
        return named[0]
    if named:
        ids = ", ".join(str(t.pk) for t in named)
        raise _usage(f"{len(named)} unrevoked tokens are named {given!r} (ids {ids}): revoke one by its id")
    whose = f" of user {username!r}" if username is not None else ""
    raise _usage(
        f"no unrevoked token{whose} has the id or name {_output.escape(given)!r} (see `flowdeck token list`)"
    )


# ------------------------------------------------------------------------------------------ verbs

Emit = Callable[[Any, str], None]


def run(options: Mapping[str, Any], emit: Emit) -> None:
    """Do `flowdeck token ACTION …`; `emit(json, text)` prints the answer as the command was asked."""
    verbs = {"create": _create, "list": _list, "revoke": _revoke}
    verbs[options["token_action"]](options, emit, timezone.now())


def _create(o: Mapping[str, Any], emit: Emit, now: datetime) -> None:
    name = _check_name(o["name"])
    expires = parse_expiry(o["expires"], now) if o["expires"] is not None else None
    user = _user(o["username"])
    token = create_token(user, name, expires=expires)
    until = f"; it expires {expires.isoformat(timespec='seconds')}" if expires else ""
    emit(
        {"user": o["username"], "name": name, "token": token, "expires": _iso(expires)},
        f"{token}\n(shown once: send it as `Authorization: Bearer <token>`{until})",
    )


def _list(o: Mapping[str, Any], emit: Emit, now: datetime) -> None:
    tokens = ApiToken.objects.select_related("user").order_by("user__username", "created", "pk")
    if o["username"] is not None:
        tokens = tokens.filter(user=_user(o["username"]))
    rows = [TokenRow.of(t, now) for t in tokens]
    headers = ("id", "user", "name", "created", "last used", "expires", "state")
    emit({"items": [r.to_json() for r in rows]}, _table(headers, [r.cells() for r in rows]))


def _revoke(o: Mapping[str, Any], emit: Emit, now: datetime) -> None:
    token = _resolve(o["token"], o["username"])
    already = token.revoked is not None
    if not already:
        # conditional: a revoke racing another keeps the first instant
        ApiToken.objects.filter(pk=token.pk, revoked__isnull=True).update(revoked=now)
        token.refresh_from_db()
    row = TokenRow.of(token, now)
    said = "was already revoked" if already else "revoked"
    emit(
        row.to_json() | {"already_revoked": already},
        f"{said}: token {row.id} ({_output.escape(row.name)}, of {_output.escape(row.user)}); "
        "the API refuses it",
    )


def _table(headers: Sequence[str], rows: Sequence[Sequence[str]]) -> str:
    widths = [max([len(h), *(len(r[i]) for r in rows)]) for i, h in enumerate(headers)]
    lines = ["  ".join(h.upper().ljust(w) for h, w in zip(headers, widths, strict=True)).rstrip()]
    lines += ["  ".join(c.ljust(w) for c, w in zip(r, widths, strict=True)).rstrip() for r in rows]
    lines.append(f"{len(rows)} token(s)")
    return "\n".join(lines)
