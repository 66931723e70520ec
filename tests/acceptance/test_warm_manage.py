"""The suite's warm `manage.py` calls (tests/acceptance/warm_manage.py) answer what a plain subprocess does:
the same exit code, stdout and stderr, for a call that succeeds and for calls refused with exit code 2
(one with input that is not ASCII)."""

from __future__ import annotations

import pytest

from tests.acceptance.support import manage, ok, sqlite_url


@pytest.fixture(scope="module")
def url(tmp_path_factory: pytest.TempPathFactory) -> str:
    """One migrated database for every case: each compares a warm and a cold call on the same state, and one
    environment keeps one warm parent for them all."""
    migrated = sqlite_url(tmp_path_factory.mktemp("warm") / "warm.sqlite3")
    ok(manage(migrated, "migrate", "--verbosity", "0"))
    return migrated


@pytest.mark.parametrize(
    "args",
    [
        ("flowdeck", "ls", "--json"),
        ("flowdeck", "show", "no-such-execution"),
        ("flowdeck", "ls", "--where", "status=bogus"),
        ("flowdeck", "start", "fulfilment", "--input", 'order={"id": "é"}'),
    ],
)
def test_a_warm_call_answers_as_a_cold_one(url: str, args: tuple[str, ...]) -> None:
    warm, cold = manage(url, *args), manage(url, *args, cold=True)
    assert (warm.returncode, warm.stdout, warm.stderr) == (cold.returncode, cold.stdout, cold.stderr)
