"""A Flowdeck worker process: `python -m bench.worker [options]`.

Serves every bench flow from the bench database until its stdin closes (the coordinator's way of saying
"leave"), or until it is killed (W6). W1's multi-process variant and W6 and W9 run these as real OS
processes, so that a kill is a real crash and a process's memory is its own.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import sys
from datetime import timedelta

from bench import flowdeck_env, pg, protocol, traced
from flowdeck.engine import event_loop, heap


def engine_options(args: argparse.Namespace) -> dict[str, object]:
    return {
        "workers": args.workers,
        "batch_size": args.batch_size,
        "lease": timedelta(seconds=args.lease),
        "renew_every": timedelta(seconds=args.renew_every),
        "poll_timeout": timedelta(seconds=args.poll_timeout),
        "shutdown_grace": timedelta(seconds=1),
    }


def add_engine_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--backend", choices=["postgres", "sqlite"], default="postgres")
    parser.add_argument("--database", default=pg.FLOWDECK_DB)
    parser.add_argument("--workers", type=int, default=8)
    parser.add_argument("--batch-size", type=int, default=4)
    parser.add_argument("--lease", type=float, default=30.0)
    parser.add_argument("--renew-every", type=float, default=10.0)
    parser.add_argument("--poll-timeout", type=float, default=5.0)


async def serve(args: argparse.Namespace) -> None:
    from bench.flows import KEYED_ENV, all_flows, keyed, rate_limits
    from flowdeck.engine.engine import FlowEngine

    store = flowdeck_env.make_store()
    flows = all_flows()
    if os.environ.get(KEYED_ENV):  # W14's limited arm: only its workers serve a limited flow
        flows.append(keyed(int(os.environ[KEYED_ENV])))
    options = engine_options(args)
    engine = FlowEngine(store, flows, rate_limits=rate_limits(), **options)  # type: ignore[arg-type]
    ready = json.dumps({"executor_id": engine.executor_id, "pid": os.getpid()})
    if args.wait_go:
        # W1: everything imported and configured, the database not yet touched; the clock starts at "go".
        protocol.announce_ready(ready)
        await asyncio.get_running_loop().run_in_executor(None, sys.stdin.readline)
    async with engine:
        if not args.wait_go:
            protocol.announce_ready(ready)
        await asyncio.get_running_loop().run_in_executor(None, sys.stdin.read)


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(prog="bench.worker")
    add_engine_arguments(parser)
    parser.add_argument("--profile", help="write a pyinstrument HTML profile of this process here")
    parser.add_argument("--wait-go", action="store_true", help="enter the engine only after a line on stdin")
    args = parser.parse_args(argv)
    if os.environ.get(traced.TRACING):  # W18's traced rounds (bench/traced_w1.py)
        traced.install_tracing()
    flowdeck_env.start_django(args.backend, args.database)
    heap.freeze_startup_heap()  # as `flowdeck_workers` does
    heap.widen_young_generation()
    if args.profile:
        from pyinstrument import Profiler

        profiler = Profiler(interval=0.0005, async_mode="disabled")
        profiler.start()
        try:
            event_loop.run(serve(args))
        finally:
            profiler.stop()
            with open(args.profile, "w") as out:
                out.write(profiler.output_html())
            with open(args.profile + ".txt", "w") as out:
                out.write(profiler.output_text(unicode=False, color=False, show_all=False))
    else:
        event_loop.run(serve(args))  # the loop `flowdeck_workers` runs on


if __name__ == "__main__":
    main()
