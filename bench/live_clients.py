"""W12's websocket clients: `python -m bench.live_clients --port P --session KEY --count 100 --after N …`.

One process holding `count` websocket connections to the console's live feed, each as the executions
list opens it (`/ws/live/?after=N`: no filter, every event after id N), logged in with the session cookie
and the console's own origin. Each client notes, for every event message, the event's id and the wall
clock (epoch ms) when the message was handed to it; nothing else runs on the receiving path.

It speaks with the coordinator (`bench.live_list`) over its stdin and stdout:

1. connects every client, then prints `BENCH_READY {"connect_s": …}`;
2. waits for a line `drain` on stdin (the coordinator's W1 is over and its workers stopped), then reads
   every committed event after N from the database (its id and its timestamp, which the worker stamps
   just before the write that commits it) and waits, at most `--drain-timeout` seconds, until every
   client holds every one of them;
3. prints one `BENCH_RESULT` line: per-client counts, the events any client missed or heard twice, and
   commit → receive latencies over every client as a histogram of whole milliseconds (rounds merge
   exactly), then exits. It gives up on its own after `--timeout` seconds in all.
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import json
import math
import os
import sys
import threading
import time
from collections import Counter
from collections.abc import Iterator
from typing import Any

from bench import pg, protocol, stats
from flowdeck.engine import event_loop


class Client:
    """One connection's record: event ids and receive times (epoch ms), in arrival order."""

    def __init__(self) -> None:
        # (first id, last id, receive ms) per run heard: a list page hears runs of ids, and expanding
        # them while the workers run would spend the cores W1 is measured on (browsers run elsewhere)
        self.runs: list[tuple[int, int, float]] = []
        self.count = 0
        self.lost: str | None = None  # why the connection ended before the measurement did
        self.task: asyncio.Future[None] | None = None

    def note(self, first: int, last: int, at: float) -> None:
        self.runs.append((first, last, at))
        self.count += last - first + 1

    def heard(self) -> Iterator[tuple[int, float]]:
        """Every event id heard, with when (ms), in the order heard."""
        for first, last, at in self.runs:
            for event_id in range(first, last + 1):
                yield event_id, at

    async def listen(self, socket: Any) -> None:
        from websockets.exceptions import ConnectionClosed

        try:
            async for message in socket:
                now = time.time() * 1000
                doc = json.loads(message)
                if doc.get("type") == "events":  # the replay at connect: each event
                    for event in doc["events"]:
                        self.note(int(event["id"]), int(event["id"]), now)
                elif doc.get("type") == "changes":  # the list's message: the ids changed, in runs
                    for first, last in doc["ids"]:
                        self.note(int(first), int(last), now)
            self.lost = f"closed by the server ({socket.close_code})"
        except ConnectionClosed as closed:
            self.lost = f"closed ({closed})"


async def connect_all(ns: argparse.Namespace, clients: list[Client]) -> list[Any]:
    """Every client's connection, open (handshakes 20 at a time, as pages arrive, not all at once)."""
    from websockets.asyncio.client import connect

    base = f"127.0.0.1:{ns.port}"
    url = f"ws://{base}/ws/live/?after={ns.after}"
    headers = {"Cookie": f"sessionid={ns.session}"}
    gate = asyncio.Semaphore(20)

    async def one(client: Client) -> Any:
        async with gate:
            socket = await connect(
                url,
                origin=f"http://{base}",  # type: ignore[arg-type]
                additional_headers=headers,
                proxy=None,
                ping_interval=None,  # a page sends no pings; daphne's own are answered
                open_timeout=60,
            )
        client.task = asyncio.ensure_future(client.listen(socket))
        return socket

    return await asyncio.gather(*(one(client) for client in clients))


def committed(database: str, after: int) -> dict[int, float]:
    """Every event committed after id `after`: id → its timestamp, epoch ms."""
    with pg.connect(database) as conn:
        rows = conn.execute(
            "select id, extract(epoch from timestamp) * 1000 from flowstore_event where id > %s", (after,)
        ).fetchall()
    return {int(event_id): float(at) for event_id, at in rows}


async def drained(clients: list[Client], want: int, timeout: float) -> float | None:
    """Seconds until every client has heard `want` events, None if some had not after `timeout`."""
    began = time.perf_counter()
    while min(c.count for c in clients) < want:
        if time.perf_counter() - began > timeout:
            return None
        await asyncio.sleep(0.02)
    return time.perf_counter() - began


def summary(clients: list[Client], commits: dict[int, float]) -> dict[str, Any]:
    """Counts, misses, duplicates and the latency histogram over every client."""
    histogram: Counter[int] = Counter()
    worst, missed, twice, unknown = -math.inf, 0, 0, 0
    received = []
    for client in clients:
        pairs = list(client.heard())
        heard = {event_id for event_id, _ in pairs}
        received.append(len(heard & commits.keys()))
        missed += len(commits.keys() - heard)
        twice += len(pairs) - len(heard)
        unknown += len(heard - commits.keys())
        for event_id, at in pairs:
            commit = commits.get(event_id)
            if commit is not None:
                ms = at - commit
                worst = max(worst, ms)
                histogram[max(0, math.ceil(ms))] += 1
    return {
        "clients": len(clients),
        "committed": len(commits),
        "received_min": min(received, default=0),
        "received_max": max(received, default=0),
        "clients_missing_events": sum(1 for n in received if n < len(commits)),
        "missed": missed,  # (client, event) pairs never heard
        "duplicates": twice,
        "connections_lost": [c.lost for c in clients if c.lost is not None],
        "unknown": unknown,  # heard, but not in the database: never expected
        "latency_histogram_ms": {str(ms): n for ms, n in sorted(histogram.items())},
        "ms": stats.from_histogram(histogram),
        "max_ms": None if worst == -math.inf else worst,
    }


def stdin_line() -> asyncio.Future[str]:
    """The next line of stdin, read on a daemon thread (a blocked executor thread would keep
    `asyncio.run` from returning when the run is abandoned)."""
    loop = asyncio.get_running_loop()
    line: asyncio.Future[str] = loop.create_future()

    def read() -> None:
        text = sys.stdin.readline()
        with contextlib.suppress(RuntimeError):  # the loop closed: the process is leaving
            loop.call_soon_threadsafe(line.set_result, text)

    threading.Thread(target=read, name="bench-stdin", daemon=True).start()
    return line


async def run(ns: argparse.Namespace) -> dict[str, Any]:
    clients = [Client() for _ in range(ns.count)]
    began = time.perf_counter()
    sockets = await connect_all(ns, clients)
    protocol.announce_ready(json.dumps({"connect_s": time.perf_counter() - began}))
    loop = asyncio.get_running_loop()
    line = await stdin_line()
    if line.strip() != "drain":
        raise RuntimeError(f"expected 'drain' from the coordinator, read {line!r}")
    commits = await loop.run_in_executor(None, committed, ns.database, ns.after)
    drain_s = await drained(clients, len(commits), ns.drain_timeout)
    result = summary(clients, commits) | {"drain_s": drain_s, "drain_timeout_s": ns.drain_timeout}
    for socket in sockets:
        socket.transport.abort()  # no closing handshakes: the measurement is over
    return result


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(prog="bench.live_clients")
    parser.add_argument("--port", type=int, required=True)
    parser.add_argument("--session", required=True)
    parser.add_argument("--database", required=True)
    parser.add_argument("--count", type=int, default=100)
    parser.add_argument("--after", type=int, default=0, help="the newest event id before the clients")
    parser.add_argument("--drain-timeout", type=float, default=120.0)
    parser.add_argument("--timeout", type=float, default=900.0, help="give up after this many seconds")
    ns = parser.parse_args(argv)

    async def bounded() -> dict[str, Any]:
        return await asyncio.wait_for(run(ns), ns.timeout)

    try:
        # on uvloop where installed, as the workers run: the clients stand in for browsers elsewhere, so
        # the less of the machine's cores they take, the nearer W1 is to what a real deployment sees
        result = event_loop.run(bounded())
    except TimeoutError:
        print(f"bench.live_clients: gave up after {ns.timeout:g} s", file=sys.stderr, flush=True)
        os._exit(3)
    protocol.emit(result)
    sys.stdout.flush()
    os._exit(0)  # the stdin reader thread must not hold the process open


if __name__ == "__main__":
    main()
