"""The token pieces that need no server: reading `--expires`, the bearer check refusing revoked and
expired tokens, and the last-use write throttled to once a minute."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

import pytest
from asgiref.sync import sync_to_async as sync
from django.contrib.auth import get_user_model
from django.core.management.base import CommandError
from django.test import RequestFactory
from django.utils import timezone

from flowdeck.console import tokens
from flowdeck.console.auth import BearerToken
from flowdeck.console.models import ApiToken, create_token

NOW = datetime(2026, 12, 1, 9, 30, tzinfo=UTC)


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("12h", NOW + timedelta(hours=12)),
        ("30d", NOW + timedelta(days=30)),
        ("2w", NOW + timedelta(weeks=2)),
        ("2027-01-31", datetime(2027, 1, 31, tzinfo=UTC)),
        ("2027-01-31T08:00", datetime(2027, 1, 31, 8, tzinfo=UTC)),  # TIME_ZONE is UTC
        ("2027-01-31T08:00:00+02:00", datetime(2027, 1, 31, 6, tzinfo=UTC)),
    ],
)
def test_expiry_reads_durations_and_iso_instants(text: str, expected: datetime) -> None:
    assert tokens.parse_expiry(text, NOW) == expected


def test_an_expiry_reaches_the_database_in_utc() -> None:
    """ISO 8601 offsets run to ±23:59; PostgreSQL refuses a literal beyond ±15:59."""
    expiry = tokens.parse_expiry("2027-01-31T08:00+22:14", NOW)
    assert (expiry, expiry.utcoffset()) == (datetime(2027, 1, 30, 9, 46, tzinfo=UTC), timedelta(0))


@pytest.mark.parametrize(
    ("text", "says"),
    [
        (
            "soon",
            "--expires 'soon' is neither a duration (12h, 30d, 2w) nor an ISO date or time (2027-01-31)",
        ),
        ("30", "--expires '30' is neither a duration (12h, 30d, 2w) nor an ISO date or time (2027-01-31)"),
        ("0h", "--expires '0h' is no time at all: give a positive duration such as 30d"),
        (
            "2026-12-01T09:30",
            "--expires '2026-12-01T09:30' is already past (now is 2026-12-01T09:30:00+00:00)",
        ),
        ("999999w", "--expires '999999w' is past the calendar's end (year 9999)"),
        (
            "9999-12-31T23:00-05:00",
            "--expires '9999-12-31T23:00-05:00' is past the calendar's end (year 9999)",
        ),
    ],
)
def test_a_bad_expiry_is_refused_in_one_line(text: str, says: str) -> None:
    with pytest.raises(CommandError) as refused:
        tokens.parse_expiry(text, NOW)
    assert (str(refused.value), refused.value.returncode) == (says, 2)


async def _caller(token: str) -> object:
    request = RequestFactory().get("/api/v1/workflows", HTTP_AUTHORIZATION=f"Bearer {token}")
    return await BearerToken()(request)


@pytest.mark.django_db(transaction=True, serialized_rollback=True)
async def test_revoked_and_expired_tokens_name_nobody() -> None:
    user = await get_user_model().objects.acreate(username="tess")
    token = await sync(create_token)(user, "ci", timezone.now() + timedelta(hours=1))
    assert await _caller(token) == user
    await ApiToken.objects.aupdate(expires=timezone.now() - timedelta(seconds=1))
    assert await _caller(token) is None
    await ApiToken.objects.aupdate(expires=None, revoked=timezone.now())
    assert await _caller(token) is None


@pytest.mark.django_db(transaction=True, serialized_rollback=True)
async def test_last_use_is_written_at_most_once_a_minute() -> None:
    user = await get_user_model().objects.acreate(username="tess")
    token = await sync(create_token)(user, "ci")
    await _caller(token)
    first = (await ApiToken.objects.aget()).last_used
    assert first is not None
    await _caller(token)
    assert (await ApiToken.objects.aget()).last_used == first
    recent = timezone.now() - timedelta(seconds=50)
    await ApiToken.objects.aupdate(last_used=recent)
    await _caller(token)
    assert (await ApiToken.objects.aget()).last_used == recent  # 50 s ago: still fresh, not written
    stale = timezone.now() - timedelta(seconds=61)
    await ApiToken.objects.aupdate(last_used=stale)
    await _caller(token)
    assert (await ApiToken.objects.aget()).last_used > stale + timedelta(seconds=60)
