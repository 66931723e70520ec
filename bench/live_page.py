"""W10: a node's commit → the browser's DOM shows it (`python -m bench.live_page w10 --steps 50 --gap 0.3`).

A live console as in production: daphne serving the console, and a worker process (`live_page workers`)
running `bench.live_flows.ticker`, on a PostgreSQL database of its own. Headless Chromium (Playwright,
/usr/bin/chromium) opens the execution's page, a MutationObserver (installed into the page, recording
`performance.timeOrigin + performance.now()`) notes when each step's node is first painted completed in
the diagram, and only then is the flow let go. Each step `sN` then sleeps `gap` seconds and completes.

The commit time is the StepCompleted event's timestamp, read back from the store: the worker stamps it
when the step's body returns, just before the write that commits it, so the latency measured includes
the commit itself. Both clocks are this machine's wall clock.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import subprocess
import sys
import tempfile
import time
from datetime import datetime
from pathlib import Path
from typing import Any

from bench import live_flows, pg, protocol, stats

CHROMIUM = "/usr/bin/chromium"
EXECUTION = "w10"
DATABASE = f"flowdeck_bench_live{pg.SUFFIX}"

# Runs in the page: note when each step's node first shows completed (the legend's green, or a class
# saying so), whatever redraws the diagram.
OBSERVER = """() => {
  window.__w10 = {};
  const look = () => {
    const now = performance.timeOrigin + performance.now();
    document.querySelectorAll("#diagram g.node").forEach((g) => {
      const texts = [...g.querySelectorAll("text")].map((t) => t.textContent.trim());
      const label = texts.find((t) => /^s\\d+$/.test(t));
      if (!label || label in window.__w10) return;
      const shape = g.querySelector("polygon, path, ellipse, rect");
      const fill = (shape && shape.getAttribute("fill") || "").toLowerCase();
      if (fill === "#90ee90" || /completed/.test(g.getAttribute("class") || "")) window.__w10[label] = now;
    });
  };
  new MutationObserver(look).observe(document.body, { subtree: true, childList: true, attributes: true });
  look();
  // where the time goes: when the page heard each StepCompleted on its websocket, by the event's seq
  window.__w10_heard = {};
  performance.setResourceTimingBufferSize(100000);
  const jsonFetches = () =>
    performance.getEntriesByType("resource").filter((e) => e.name.includes("format=json")).length;
  window.__w10_json = () => jsonFetches() - before;
  const before = jsonFetches();
  document.addEventListener("flowdeck:live", (e) => {
    const now = performance.timeOrigin + performance.now();
    if (e.detail.kind === "StepCompleted") window.__w10_heard[e.detail.seq] = now;
  });
}"""


def _env(ns: argparse.Namespace, go: Path) -> dict[str, str]:
    return protocol.child_env() | {
        "DATABASE_URL": pg.url(DATABASE),
        "DJANGO_SETTINGS_MODULE": "bench.web_settings",
        "FLOWDECK_LOG_LEVEL": "WARNING",
        live_flows.STEPS_ENV: str(ns.steps),
        live_flows.GAP_ENV: str(ns.gap),
        live_flows.GO_ENV: str(go),
    }


def _setup() -> None:
    import django

    django.setup()


def login_session(username: str = "bench") -> str:
    """A user and a logged-in session in the configured database (Django set up); answers the session
    key, the `sessionid` cookie a page or a websocket client sends."""
    from django.contrib.auth import BACKEND_SESSION_KEY, HASH_SESSION_KEY, SESSION_KEY, get_user_model
    from django.contrib.sessions.backends.db import SessionStore

    user = get_user_model().objects.create_user(username, password="x")
    session = SessionStore()
    session[SESSION_KEY] = str(user.pk)
    session[BACKEND_SESSION_KEY] = "django.contrib.auth.backends.ModelBackend"
    session[HASH_SESSION_KEY] = user.get_session_auth_hash()
    session.create()
    assert session.session_key is not None
    return session.session_key


def cmd_seed(ns: argparse.Namespace) -> dict[str, Any]:
    """A user with a session, and the execution (left for the worker process to claim)."""
    _setup()
    from flowdeck.console import runtime

    session = login_session()

    async def start() -> None:
        engine = await runtime.engine()
        await engine.workflows.start("ticker", execution_id=EXECUTION)

    asyncio.run(start())
    return {"session": session}


def cmd_workers(ns: argparse.Namespace) -> None:
    """The engine's workers until SIGTERM, as `flowdeck_workers` runs them."""
    _setup()
    import signal

    from flowdeck.console import heartbeat, runtime

    async def serve() -> None:
        stop = asyncio.Event()
        asyncio.get_running_loop().add_signal_handler(signal.SIGTERM, stop.set)
        async with runtime.make_engine() as engine, heartbeat.publishing(engine):
            await stop.wait()

    asyncio.run(serve())


def _committed(steps: int) -> dict[str, tuple[int, float]]:
    """Each step's StepCompleted event: its seq and its timestamp, epoch ms."""
    with pg.connect(DATABASE) as conn:
        found = conn.execute(
            "select data, timestamp, seq from flowstore_event"
            " where execution_id = %s and kind = 'StepCompleted'",
            (EXECUTION,),
        ).fetchall()
    stamps = {}
    for data, at, seq in found:
        name = json.loads(data).get("step_name", "")
        if isinstance(at, datetime) and name.startswith("s"):
            stamps[name] = (int(seq), at.timestamp() * 1000)
    return stamps


def free_port() -> int:
    import socket

    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


def spawn_logged(env: dict[str, str], log: Path, *args: str) -> subprocess.Popen[bytes]:
    with log.open("ab") as out:
        return subprocess.Popen([sys.executable, *args], cwd=protocol.ROOT, env=env, stdout=out, stderr=out)


def daphne(env: dict[str, str], log: Path, port: int) -> subprocess.Popen[bytes]:
    """daphne serving the console on 127.0.0.1:port, its output appended to `log` (never a pipe: a full
    pipe nobody reads would stall it)."""
    return spawn_logged(
        env, log, "-m", "daphne", "-b", "127.0.0.1", "-p", str(port), "flowdeck.console.asgi:application"
    )


def wait_up(port: int, server: subprocess.Popen[bytes], log: Path) -> None:
    import socket

    deadline = time.monotonic() + 60
    while time.monotonic() < deadline:
        if server.poll() is not None:
            raise RuntimeError(f"daphne exited: {log.read_text()[-2000:]}")
        try:
            with socket.create_connection(("127.0.0.1", port), timeout=1):
                return
        except OSError:
            time.sleep(0.1)
    raise RuntimeError("daphne did not come up")


def stop(proc: subprocess.Popen[bytes]) -> None:
    if proc.poll() is None:
        proc.terminate()
        try:
            proc.wait(timeout=15)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait()


def _watch(base: str, session: str, go: Path, steps: int, timeout: float) -> dict[str, float]:
    """Open the page, install the observer, let the flow go; answer when each node showed completed."""
    from playwright.sync_api import sync_playwright

    with sync_playwright() as playwright:
        browser = playwright.chromium.launch(executable_path=CHROMIUM, args=["--no-sandbox", "--disable-gpu"])
        try:
            # The CSP refuses eval, which wait_for_function uses; the page's own scripts are unchanged.
            context = browser.new_context(viewport={"width": 1400, "height": 900}, bypass_csp=True)
            context.add_cookies([{"name": "sessionid", "value": session, "url": base}])
            page = context.new_page()
            page.goto(f"{base}/executions/{EXECUTION}")
            # The DOT drawing: Graphviz's SVG carries each node's fill as an attribute.
            page.click('#diagram-formats button[data-format="dot"]')
            page.wait_for_selector('#diagram .drawing[data-format="dot"] svg', timeout=30_000)
            page.wait_for_selector("#live-state.on", timeout=30_000)
            page.evaluate(OBSERVER)
            go.touch()
            page.wait_for_function(
                f"Object.keys(window.__w10).length >= {steps}", timeout=timeout * 1000, polling=200
            )
            shown = dict(page.evaluate("window.__w10"))
            shown["__heard"] = page.evaluate("window.__w10_heard")
            # where the time goes: each diagram fetch's duration, as the browser timed it
            shown["__fetch_ms"] = page.evaluate(
                "performance.getEntriesByType('resource').filter((e) => e.name.includes('/diagram/dot/'))"
                ".map((e) => e.duration)"
            )
            shown["__json"] = page.evaluate("window.__w10_json()")  # the progress fetched, not pushed
            return shown
        finally:
            browser.close()


def cmd_w10(ns: argparse.Namespace) -> dict[str, Any]:
    pg.recreate(DATABASE)
    work = Path(tempfile.mkdtemp(prefix="flowdeck-w10-"))
    go, log = work / "go", work / "processes.log"
    env = _env(ns, go)
    subprocess.run(
        [sys.executable, "manage.py", "migrate", "-v", "0"], cwd=protocol.ROOT, env=env, check=True
    )
    seeded = subprocess.run(
        [sys.executable, "-m", "bench.live_page", "seed"], cwd=protocol.ROOT, env=env, check=True,
        capture_output=True, text=True,
    )  # fmt: skip
    session = json.loads(seeded.stdout.strip().splitlines()[-1].removeprefix(protocol.MARK))["session"]
    port = free_port()
    server = daphne(env, log, port)
    workers = spawn_logged(env, log, "-m", "bench.live_page", "workers")
    try:
        wait_up(port, server, log)
        timeout = min(ns.timeout, ns.steps * ns.gap + 60)
        shown = _watch(f"http://127.0.0.1:{port}", session, go, ns.steps, timeout)
    finally:
        stop(workers)
        stop(server)
    committed = _committed(ns.steps)
    pg.clear(DATABASE)  # emptied, not dropped: see pg.recreate
    fetches = shown.pop("__fetch_ms")
    json_fetches = shown.pop("__json")
    heard_at = {int(seq): at for seq, at in shown.pop("__heard").items()}
    order = sorted(committed, key=lambda name: int(name[1:]))
    latencies = [shown[name] - committed[name][1] for name in order if name in shown]
    heard = [heard_at[seq] - at for seq, at in (committed[name] for name in order) if seq in heard_at]
    return {
        "system": "flowdeck",
        "backend": "postgres",
        "updates": len(latencies),
        "gap_s": ns.gap,
        "ms": stats.p50_p95(latencies),
        "max_ms": max(latencies) if latencies else None,
        "samples_ms": [round(x, 1) for x in latencies],
        "diagram_fetch_ms": stats.p50_p95(fetches) if fetches else None,
        # commit → the page's websocket message: the feed's part; the rest of `ms` is the page's
        "heard_ms": stats.p50_p95(heard) if heard else None,
        "json_fetches": json_fetches,
    }


COMMANDS = {"seed": cmd_seed, "workers": cmd_workers, "w10": cmd_w10}


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(prog="bench.live_page")
    parser.add_argument("command", choices=sorted(COMMANDS))
    parser.add_argument("--steps", type=int, default=50)
    parser.add_argument("--gap", type=float, default=0.3, help="seconds each step takes")
    parser.add_argument("--timeout", type=float, default=300.0)
    ns = parser.parse_args(argv)
    result = COMMANDS[ns.command](ns)
    if result is not None:
        protocol.emit(result)
    sys.stdout.flush()
    os._exit(0)


if __name__ == "__main__":
    main()
