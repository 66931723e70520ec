"""`python manage.py demo` (`flowdeck demo`): Flowdeck with something to look at, on the embedded SQLite
database. The command is `flowdeck_demo`, so that a host's `manage.py help` lists every Flowdeck command
under a name that says whose it is; Flowdeck's own `manage.py` and the `flowdeck` script take `demo` for it.

It migrates, makes an admin user (printing a fresh password), starts the example executions in every
interesting state (see `flowdeck.console.demo`), then runs the engine's workers in this process (serving every
discovered flow, the set every process serves) and serves the console and the API (HTTP and websockets,
with daphne) on 127.0.0.1:8000. Ctrl-C stops both: the web server first, then the workers, which finish or
hand back what they hold.

It runs only in Flowdeck's own project (its settings, `flowdeck.console.settings`), never in a host's.

`--database PATH` uses another SQLite file (the process restarts itself with DATABASE_URL pointing at it,
so every part of Django sees the same database); `--port` picks the port; `--no-serve` seeds and exits.

Without `FLOWDECK_SECRET_KEY` the demo makes a key and keeps it beside its SQLite file (mode 0600), so its
next run and the operator CLI on the same database use it too (see `flowdeck.console.deploy`).
"""

from __future__ import annotations

import asyncio
import contextlib
import os
import sys
import threading
from datetime import timedelta
from pathlib import Path
from typing import Any

from django.conf import settings
from django.core.management import call_command
from django.core.management.base import BaseCommand, CommandParser
from django.db import connections

from flowdeck.console import demo, deploy, heartbeat, runtime
from flowdeck.console.conf import flowdeck_settings
from flowdeck.console.management.commands._common import engine_logging, usage_error
from flowdeck.engine import maintenance, scheduler
from flowdeck.engine.engine import FlowEngine

HOST = "127.0.0.1"
# Flowdeck's own project is the one whose root URLconf is its own: the demo makes a superuser, migrates and
# serves that project, so in a host project (its own URLs, its own users) it refuses to start.
OWN_URLCONF = "flowdeck.console.project_urls"


class Command(BaseCommand):
    help = "Seed example executions in every state, then run workers and serve the console on :8000."

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument("--database", metavar="PATH", help="the SQLite file to use")
        parser.add_argument("--port", type=int, default=8000, help="HTTP port on 127.0.0.1 (default 8000)")
        parser.add_argument("--no-serve", action="store_true", help="seed, print the states, and exit")
        parser.add_argument("--workers", type=int, default=2, help="worker loops (default 2)")
        parser.add_argument(
            "--new-password",
            action="store_true",
            help="a new admin password (else the one kept beside the SQLite file, <file>.admin-password)",
        )

    def handle(self, *args: Any, **options: Any) -> None:
        if settings.ROOT_URLCONF != OWN_URLCONF:
            raise usage_error(
                "demo runs only in Flowdeck's own project (DJANGO_SETTINGS_MODULE=flowdeck.console.settings);"
                f" this one's ROOT_URLCONF is {settings.ROOT_URLCONF!r}"
            )
        if options["database"]:
            self._use_database(Path(options["database"]).resolve())
        if connections["default"].vendor != "sqlite":
            self.stdout.write(
                self.style.WARNING("note: the demo runs on the configured (non-SQLite) database")
            )
        if not 0 < options["port"] < 65536:
            raise usage_error(f"--port must be between 1 and 65535 (got {options['port']})")
        self.stdout.write(f"database: {connections['default'].settings_dict['NAME']}")
        self._keep_secret_key()
        call_command("migrate", interactive=False, verbosity=0)
        password, kept = self._admin(options["new_password"])
        engine = FlowEngine(
            runtime.store(),
            workers=options["workers"],
            lease=timedelta(seconds=15),
            renew_every=timedelta(seconds=5),
            poll_timeout=timedelta(seconds=5),
            shutdown_grace=timedelta(seconds=5),
            transient=runtime.TRANSIENT,
        )
        if not options["no_serve"]:
            # Importing the ASGI application sets Django up again (logging included): do it before
            # engine_logging configures the engine's loggers.
            from flowdeck.console import asgi  # noqa: F401
        with engine_logging(max(options["verbosity"] - 1, 0), self.stderr._out):
            if options["no_serve"]:
                seeded = asyncio.run(self._seed_only(engine))
                self._print_states(seeded)
                self._print_login(password, kept, None)
                return
            self._serve(engine, options["port"], password, kept)

    # ------------------------------------------------------------------------------------ database

    def _use_database(self, path: Path) -> None:
        url = f"sqlite:///{path}"
        if os.environ.get("DATABASE_URL") == url:
            return
        if not path.parent.is_dir():
            raise usage_error(f"--database: no folder {path.parent}")
        os.environ["DATABASE_URL"] = url
        self.stdout.flush()
        os.execv(sys.executable, [sys.executable, *sys.argv])

    def _admin(self, new: bool) -> tuple[str, Path | None]:
        """The admin's password: kept beside the SQLite file from one run to the next (a new one when
        asked); on another database, where nothing lies beside it, a fresh one each run."""
        if connections["default"].vendor != "sqlite":
            return demo.ensure_admin(), None
        return demo.kept_admin(Path(connections["default"].settings_dict["NAME"]), new=new)

    def _keep_secret_key(self) -> None:
        """Keep the key this process made (or read) beside the SQLite file; a key from the environment is
        the operator's and is never written anywhere."""
        if (
            os.environ.get(deploy.SECRET_KEY_VARIABLE, "").strip()
            or connections["default"].vendor != "sqlite"
        ):
            return
        deploy.keep_demo_key(Path(connections["default"].settings_dict["NAME"]), settings.SECRET_KEY)

    # -------------------------------------------------------------------------------------- seeding

    async def _seed_only(self, engine: FlowEngine) -> demo.Seeded:
        async with engine:
            return await demo.seed(engine)

    def _print_states(self, seeded: demo.Seeded) -> None:
        width = max(len(eid) for eid in seeded.statuses)
        self.stdout.write("executions:")
        for eid, word in seeded.statuses.items():
            self.stdout.write(f"  {eid.ljust(width)}  {word}")

    def _print_login(self, password: str, kept: Path | None, url: str | None) -> None:
        self.stdout.write(f"login: {demo.DEMO_USER} / {password}")
        if kept is not None:
            self.stdout.write(f"       (kept in {kept} for the next run; --new-password makes a new one)")
        if url:
            self.stdout.write(f"Flowdeck demo running at {url}  (Ctrl-C stops it)")
        self.stdout.flush()

    # -------------------------------------------------------------------------------------- serving

    def _serve(self, engine: FlowEngine, port: int, password: str, kept: Path | None) -> None:
        """Workers on their own event loop in a thread; daphne in the main thread (it owns the signals)."""
        from daphne.endpoints import build_endpoint_description_strings
        from daphne.server import Server

        from flowdeck.console.asgi import application

        workers = _Workers(engine)
        workers.start()
        seeded = workers.wait_seeded()
        if seeded is None:
            workers.stop()
            raise usage_error(f"seeding the demo failed: {workers.error}")
        self._print_states(seeded)
        url = f"http://{HOST}:{port}/"

        def announce(listening: object) -> object:
            self._print_login(password, kept, url)
            return listening

        def ready() -> None:
            for listener in server.listeners:
                listener.addCallback(announce)

        server = Server(
            application=application,
            endpoints=build_endpoint_description_strings(host=HOST, port=port),
            signal_handlers=True,
            ready_callable=ready,
            verbosity=0,
        )
        try:
            server.run()
        finally:
            self.stdout.write("stopping the workers…")
            self.stdout.flush()
            workers.stop()
        if not server.listening_addresses:
            raise usage_error(f"could not listen on {HOST}:{port} (is the port in use? try --port)")
        self.stdout.write("stopped")


class _Workers(threading.Thread):
    """The demo's engine, seeding and then working until asked to stop."""

    def __init__(self, engine: FlowEngine) -> None:
        super().__init__(name="flowdeck-demo-workers", daemon=True)
        self.engine = engine
        self.error: BaseException | None = None
        self._seeded: demo.Seeded | None = None
        self._settled = threading.Event()
        self._loop: asyncio.AbstractEventLoop | None = None
        self._stopping: asyncio.Event | None = None

    def run(self) -> None:
        asyncio.run(self._main())

    async def _main(self) -> None:
        self._loop = asyncio.get_running_loop()
        self._stopping = asyncio.Event()
        try:
            async with self.engine:
                try:
                    self._seeded = await demo.seed(self.engine)
                except Exception as error:
                    self.error = error
                    return
                finally:
                    self._settled.set()
                ticker = scheduler.Scheduler(self.engine).chore()  # the schedules tick here too
                async with (
                    heartbeat.publishing(self.engine),
                    maintenance.running([ticker], self.engine.clock),
                ):
                    await self._stopping.wait()
        except Exception as error:  # the engine could not start (database unusable)
            self.error = error
        finally:
            self._settled.set()
            connections.close_all()

    def wait_seeded(self) -> demo.Seeded | None:
        self._settled.wait()
        return self._seeded

    def stop(self) -> None:
        if self._loop is not None and self._stopping is not None and not self._loop.is_closed():
            with contextlib.suppress(RuntimeError):  # the loop already ended
                self._loop.call_soon_threadsafe(self._stopping.set)
        self.join(timeout=flowdeck_settings().demo_stop.total_seconds())
