"""For real: the console's pages read from a streaming replica (issue 32, point 4).

A private primary and its standby (bench/standby.py); the web process's `DATABASE_URL` is the primary and
`FLOWDECK_READ_REPLICA_DATABASE_URL` the standby. The standby's replay is paused to tell the two apart: an
execution started then is on the primary (the API, which stays there, finds it) and missing from the
executions list, which reads the replica and says how far behind it is; replay resumed, the list shows it.
The standby stopped, the list reads the primary and says the replica is not answering; never an error page.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from bench import standby
from tests.acceptance.standby_support import SETTINGS, answers, page, pair, prepare, query, start, until, web
from tests.acceptance.support import environment
from tests.api.client import ApiClient
from tests.api.conftest import _free_port

pytestmark = [pytest.mark.postgres, pytest.mark.slow]
__all__ = ["pair"]  # the fixture

DATABASE = "flowdeck_replica"
NOTICE = 'id="replica-notice"'
NOTICE_START = '<p class="message warn replica-notice" id="replica-notice"'
SLOT = '<div id="replica-slot"'
REFRESHED = ("/overview/numbers/", "/executions/?partial=rows")


def test_the_list_reads_the_replica_says_its_lag_and_falls_back_to_the_primary(
    pair: standby.Pair, tmp_path: Path
) -> None:
    pair.create_database(DATABASE)
    primary = pair.primary.url(DATABASE)
    replica = pair.standby.url(DATABASE)
    env = environment(primary, DJANGO_SETTINGS_MODULE=SETTINGS, FLOWDECK_LOG_LEVEL="WARNING")
    env["FLOWDECK_READ_REPLICA_DATABASE_URL"] = replica
    credentials = prepare(primary, env, 2, "seen")
    session, port = credentials["operator_session"], _free_port()
    server = web(env, tmp_path, port)
    api = ApiClient(f"http://127.0.0.1:{port}", token=credentials["operator_token"])

    def fragment(path: str) -> str:
        status, html = page(port, path, session)
        assert status == 200, html[-2000:] + server.explain()
        return html

    def listed() -> str:
        status, html = page(port, "/executions/", session)
        assert status == 200, html[-2000:] + server.explain()
        return html

    try:
        until(lambda: answers(port, credentials["operator_token"]), 60, "the web process did not answer")
        pair.replayed()
        html = listed()
        assert "seen-0000" in html
        assert NOTICE not in html  # caught up: nothing to say

        query(replica, "SELECT pg_wal_replay_pause()")
        start(primary, env, 1, "late")
        assert api.get("/executions/late-0000").status == 200  # the API's describe reads the primary
        until(lambda: NOTICE in listed(), 30, "the list did not say the replica is behind")
        html = listed()
        assert "late-0000" not in html  # the list read the replica, which has not replayed the start
        assert "behind the primary" in html
        status, overview = page(port, "/", session)
        assert status == 200
        assert NOTICE in overview
        # The parts the pages refresh on their own carry the notice out of band, so it comes and goes
        # without a reload: the overview's numbers and the list's rows.
        for refreshed in REFRESHED:
            assert f'{SLOT} hx-swap-oob="true">{NOTICE_START}' in fragment(refreshed), refreshed

        query(replica, "SELECT pg_wal_replay_resume()")
        pair.replayed()
        html = listed()
        assert "late-0000" in html
        assert NOTICE not in html
        for refreshed in REFRESHED:
            assert f'{SLOT} hx-swap-oob="true"></div>' in fragment(refreshed), refreshed  # the notice gone

        pair.standby.kill()
        html = listed()  # the replica refuses: the same list, read from the primary
        assert "late-0000" in html
        assert "The read replica is not answering" in html
    finally:
        server.close()
