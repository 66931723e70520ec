"""The suite's warm `manage.py` calls (tests/acceptance/warm_manage.py) answer what a plain subprocess does:
the same exit code, stdout and stderr, for a call that succeeds and for calls refused with exit code 2
(one with input that is not ASCII)."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.acceptance.support import manage, ok, sqlite_url


@pytest.mark.parametrize(
    "args",
    [
        ("flowdeck", "ls", "--json"),
        ("flowdeck", "show", "no-such-execution"),
        ("flowdeck", "ls", "--where", "status=bogus"),
        ("flowdeck", "start", "fulfilment", "--input", 'order={"id": "é"}'),
    ],
)
def test_a_warm_call_answers_as_a_cold_one(tmp_path: Path, args: tuple[str, ...]) -> None:
    url = sqlite_url(tmp_path / "warm.sqlite3")
    ok(manage(url, "migrate", "--verbosity", "0", cold=True))
    warm, cold = manage(url, *args), manage(url, *args, cold=True)
    assert (warm.returncode, warm.stdout, warm.stderr) == (cold.returncode, cold.stdout, cold.stderr)
