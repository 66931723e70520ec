"""`python manage.py flowdeck_workers`: this process's share of the engine's workers, in the foreground.

Run as many as you like, on as many hosts, against one database: claims are leased, so each execution
runs in one place at a time and a dead process's work is picked up once its lease lapses. The first
SIGTERM or SIGINT stops polling and gives running attempts `--shutdown-grace` seconds to finish; what is
still running then is handed back (its claim lapses after the lease). A second signal stops at once.
"""

from __future__ import annotations

import asyncio
import os
from typing import Any

from django.core.exceptions import ImproperlyConfigured
from django.core.management.base import BaseCommand, CommandError, CommandParser
from django.db import connections

from flowdeck.console import discovery, durations, heartbeat, retention, runtime
from flowdeck.console.conf import FlowdeckSettings, flowdeck_settings
from flowdeck.console.management.commands._common import (
    bounded_body_threads,
    build_engine,
    checked_settings,
    engine_logging,
    flows_to_serve,
    stop_on_signals,
)
from flowdeck.engine import event_loop, heap, maintenance, scheduler
from flowdeck.engine.engine import FlowEngine
from flowdeck.store.spi import FlowStoreError


class Command(BaseCommand):
    help = "Run the engine's workers in the foreground until SIGTERM/SIGINT."

    def add_arguments(self, parser: CommandParser) -> None:
        try:
            conf = flowdeck_settings()
        except ImproperlyConfigured:  # `handle` says what is wrong; `--help` still shows the defaults
            conf = FlowdeckSettings()
        parser.add_argument("--workers", type=int, help=f"worker loops (default {conf.workers})")
        parser.add_argument(
            "--lease",
            type=float,
            help=f"seconds a claim lasts without renewal (default {conf.lease.total_seconds():g})",
        )
        parser.add_argument(
            "--renew-every",
            type=float,
            help=f"seconds between claim renewals (default {conf.renew_every.total_seconds():g})",
        )
        parser.add_argument(
            "--batch-size", type=int, help=f"executions claimed per poll (default {conf.batch_size})"
        )
        parser.add_argument(
            "--shutdown-grace",
            type=float,
            help="seconds running attempts may finish after a stop signal "
            f"(default {conf.shutdown_grace.total_seconds():g})",
        )
        parser.add_argument(
            "--flows", help="comma-separated workflow ids to serve (default: every discovered one)"
        )

    def handle(self, *args: Any, **options: Any) -> None:
        checked_settings()
        flows = flows_to_serve(options.get("flows"))
        engine = build_engine(options)
        heap.freeze_startup_heap()
        heap.widen_young_generation()
        with engine_logging(options["verbosity"], self.stderr._out):
            try:
                event_loop.run(self.serve(engine, flows))
            except FlowStoreError as error:
                raise CommandError(
                    f"the database could not be used ({error}); is it reachable and migrated "
                    "(`python manage.py migrate`)?"
                ) from None

    async def serve(self, engine: FlowEngine, flows: list[str]) -> None:
        bounded_body_threads(engine.config.workers * engine.config.batch_size)
        await runtime.serve(engine, flows)
        stop = asyncio.Event()
        with stop_on_signals(stop, on_second=lambda: self._stop_now(engine)):
            async with engine:
                config = engine.config
                self.stdout.write(
                    f"flowdeck workers {engine.executor_id}: {config.workers} worker(s) serving "
                    f"{_served(flows)} on {_database()} (lease {config.lease.total_seconds():g}s, "
                    f"renew every {config.renew_every.total_seconds():g}s, batch {config.batch_size})"
                )
                self.stdout.flush()
                async with (
                    heartbeat.publishing(engine),
                    maintenance.running(self.chores(engine), engine.clock),
                ):
                    await stop.wait()
                held = engine.health().claims_held
                self.stdout.write(
                    f"stopping: {len(held)} attempt(s) running, "
                    f"{config.shutdown_grace.total_seconds():g}s to finish"
                )
                self.stdout.flush()
        self.stdout.write("stopped")

    def chores(self, engine: FlowEngine) -> list[maintenance.Chore]:
        """The maintenance this process runs beside its workers: the schedules' ticker, always; on
        PostgreSQL the history's partitions prepared ahead; retention, when FLOWDECK_RETENTION is set."""
        chores = [scheduler.Scheduler(engine).chore()]
        history = runtime.history_chore(engine.store, engine.clock)
        if history is not None:  # PostgreSQL: the history's day partitions, prepared ahead
            chores.append(history)
        policy = flowdeck_settings().retention
        if policy is None:
            return chores
        age, every = durations.show_age(policy.older_than), durations.show_age(policy.every)
        self.stdout.write(
            f"retention: purging {', '.join(policy.statuses)} executions ended more than {age} ago, "
            f"every {every}, {policy.batch} per batch"
        )
        return [*chores, retention.chore(engine.store, policy, engine.clock)]

    def _stop_now(self, engine: FlowEngine) -> None:
        held = engine.health().claims_held
        self.stderr.write(
            f"second signal: stopping now; {len(held)} claim(s) lapse after the lease "
            f"({engine.config.lease.total_seconds():g}s)"
        )
        self.stderr.flush()
        os._exit(1)


def _served(flows: list[str]) -> str:
    """The workflow ids served, each with its number of versions when it serves more than one."""
    versions = discovery.flow_versions()
    counts = {w: len(versions.get(w, ())) for w in flows}
    return ", ".join(w if counts[w] <= 1 else f"{w} ({counts[w]} versions)" for w in flows)


def _database() -> str:
    settings = connections[flowdeck_settings().database_alias].settings_dict
    if connections[flowdeck_settings().database_alias].vendor == "sqlite":
        return f"sqlite:{settings['NAME']}"
    return f"{connections['default'].vendor}://{settings.get('HOST') or 'localhost'}/{settings['NAME']}"
