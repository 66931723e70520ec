"""For real: the database fails over to its standby while workers run a load (issue 32, point 2).

A private primary and its synchronous streaming standby (bench/standby.py). Two `flowdeck_workers`
processes, a web process (daphne: the health endpoint, the live feed) and the operator's calls all use ONE
multi-host DATABASE_URL naming both clusters with `target_session_attrs=read-write`. While the workers run
`atomic-ledger` executions (tests/acceptance/atomic_flows.py), the primary is killed (an immediate stop, as a
crash), the health endpoint must say 503 while no primary answers, and the standby is promoted; then the
same processes, never restarted, must carry on against the new primary: health 200, the live feed's open
websocket hearing events again, every execution completed.

Nothing lost or doubled: every execution completed exactly once, exactly one row per atomic node, and no
node whose completion was recorded started again (the record is what a replay skips).
"""

from __future__ import annotations

import threading
import time
from pathlib import Path

import pytest
from websockets.sync.client import connect as websocket

from bench import standby
from tests.acceptance import sigkill
from tests.acceptance import test_atomic_sigkill as atomic
from tests.acceptance.standby_support import SETTINGS, answers, health, pair, prepare, query, until, web
from tests.acceptance.support import Background, environment
from tests.api.conftest import _free_port

pytestmark = [pytest.mark.postgres, pytest.mark.slow]
__all__ = ["pair"]  # the fixture

EXECUTIONS = 150
DATABASE = "flowdeck_failover"
ENDED = "SELECT count(*) FROM flowstore_execution WHERE status_kind IN ('completed', 'failed', 'cancelled')"


class Listener:
    """A live-feed websocket of everything, its messages' arrival times noted on a thread of its own."""

    def __init__(self, port: int, session: str) -> None:
        self.heard: list[float] = []
        self.closed: str | None = None
        self._address = f"ws://127.0.0.1:{port}/ws/live/"
        self._headers = {"Cookie": f"sessionid={session}", "Origin": f"http://127.0.0.1:{port}"}
        self._open = threading.Event()
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._listen, daemon=True)
        self._thread.start()
        assert self._open.wait(30), self.closed or "the live feed's websocket did not open"

    def _listen(self) -> None:
        try:
            with websocket(self._address, additional_headers=self._headers) as socket:
                self._open.set()
                while not self._stop.is_set():
                    try:
                        socket.recv(timeout=0.2)
                    except TimeoutError:
                        continue
                    self.heard.append(time.monotonic())
        except Exception as error:  # noted: the assertion says how it ended
            self.closed = repr(error)

    def close(self) -> None:
        self._stop.set()
        self._thread.join(5)


def test_workers_web_and_live_feed_ride_a_failover_without_loss(pair: standby.Pair, tmp_path: Path) -> None:
    pair.create_database(DATABASE)
    url = pair.url(DATABASE)
    env = environment(url, DJANGO_SETTINGS_MODULE=SETTINGS, FLOWDECK_LOG_LEVEL="WARNING")
    credentials = prepare(url, env, EXECUTIONS)
    token = credentials["operator_token"]
    port = _free_port()
    server = web(env, tmp_path, port)
    workers = [
        Background.manage(
            f"workers-{i}",
            url,
            tmp_path,
            "flowdeck_workers",
            *atomic.WORKER_ARGS,
            DJANGO_SETTINGS_MODULE=SETTINGS,
            FLOWDECK_LOG_LEVEL="WARNING",
        )
        for i in (1, 2)
    ]
    listener: Listener | None = None

    def ended() -> int:
        return int(query(url, ENDED)[0][0])

    def logs() -> str:
        return "\n".join(p.explain() for p in (server, *workers))

    try:
        until(lambda: answers(port, token), 60, "the web process did not answer")
        listener = Listener(port, credentials["operator_session"])
        until(lambda: ended() >= EXECUTIONS // 4, 60, "the workers did not end a quarter of the load")

        before = ended()
        pair.kill_primary()
        killed = time.monotonic()
        until(lambda: health(port, token) == 503, 30, "health did not say 503 with no primary")
        # the standby is promoted only once every worker process has met the outage (its wake listener
        # lost its connection), so each of them runs through it rather than past it
        lost = "wake listener lost its connection"
        until(lambda: all(lost in w.stderr for w in workers), 30, "a worker did not notice the outage")
        pair.promote()
        promoted = time.monotonic()
        until(lambda: health(port, token) == 200, 60, "health did not come back to 200 on the new primary")
        back = time.monotonic()

        sigkill.while_progressing(ended, EXECUTIONS)
        assert ended() == EXECUTIONS, logs()
        assert all(w.process.poll() is None for w in workers), logs()  # the same processes carried on
        assert not listener.closed, listener.closed
        assert any(at > promoted for at in listener.heard), "the live feed heard nothing after the promotion"

        _assert_nothing_lost_or_doubled(url)
        print(
            f"\nfailover: {before}/{EXECUTIONS} ended at the kill; promoted {promoted - killed:.1f}s after "
            f"it; health 200 again {back - promoted:.1f}s after the promotion; {EXECUTIONS} completed once"
        )
    finally:
        if listener is not None:
            listener.close()
        for process in (*workers, server):
            process.close()


def _assert_nothing_lost_or_doubled(url: str) -> None:
    statuses = query(url, "SELECT status_kind, count(*) FROM flowstore_execution GROUP BY status_kind")
    assert statuses == [("completed", EXECUTIONS)]
    completed = query(
        url,
        "SELECT execution_id, count(*) FROM flowstore_event WHERE kind = 'Completed' GROUP BY execution_id",
    )
    assert len(completed) == EXECUTIONS
    assert {n for _, n in completed} == {1}, completed
    rows = query(url, "SELECT execution_id, node, count(*) FROM fulfilment_posting GROUP BY 1, 2")
    doubled = [(eid, node, n) for eid, node, n in rows if node in ("post", "tally") and n != 1]
    assert doubled == []
    assert sum(1 for _, node, _ in rows if node in ("post", "tally")) == 2 * EXECUTIONS
    # a node whose completion is recorded never starts again: no StepStarted after its StepCompleted
    rerun = query(
        url,
        "SELECT s.execution_id, s.data::jsonb->>'step_name' FROM flowstore_event s"
        " JOIN flowstore_event c ON c.execution_id = s.execution_id AND c.kind = 'StepCompleted'"
        "  AND c.data::jsonb->>'step_name' = s.data::jsonb->>'step_name' AND c.seq < s.seq"
        " WHERE s.kind = 'StepStarted'",
    )
    assert rerun == []
    twice = query(
        url,
        "SELECT execution_id, data::jsonb->>'step_name', count(*) FROM flowstore_event"
        " WHERE kind = 'StepCompleted' GROUP BY 1, 2 HAVING count(*) > 1",
    )
    assert twice == []
