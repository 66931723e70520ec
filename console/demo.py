"""The demo's world: an admin user and executions of the example flows in every interesting state.

`seed` drives each execution with an in-process engine until it settles where the demo wants it:
completed, waiting for a person's approval (a large order, raced against the 24-hour grace period),
sleeping (a follow-up waiting out the delivery window), failed and compensated (a declined card: its
reservations released), refunded (a charged order no carrier takes: refund and releases), stopped (a
bug in the shipping table, F0001), cancelled (a customer changed their mind while waiting for approval:
its reservations released) and parked (started under the previous version of `fulfilment`, which no
process serves any more).

Execution ids are fixed (`demo-…`): seeding again keeps the executions already there.
"""

from __future__ import annotations

import asyncio
import os
import secrets
from collections.abc import Mapping
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any

from django.contrib.auth import get_user_model

from flowdeck.console import discovery, runtime, states
from flowdeck.console.conf import flowdeck_settings
from flowdeck.engine.engine import FlowEngine
from flowdeck.store import spi

__all__ = ["DEMO_USER", "PASSWORD_FILE_SUFFIX", "Seeded", "ensure_admin", "kept_admin", "order", "seed"]

DEMO_USER = "admin"
PASSWORD_FILE_SUFFIX = ".admin-password"


def ensure_admin(username: str = DEMO_USER, password: str | None = None) -> str:
    """Make a superuser `username` whose password is `password` (a fresh random one when None); answers
    the password. A user who already has that password is left as is (a new hash would sign every
    session of it out)."""
    password = password or secrets.token_urlsafe(9)
    user_model = get_user_model()
    user, _ = user_model.objects.get_or_create(
        **{user_model.USERNAME_FIELD: username}, defaults={"email": f"{username}@example.com"}
    )
    if user.is_staff and user.is_superuser and user.check_password(password):
        return password
    user.is_staff = True
    user.is_superuser = True
    user.set_password(password)
    user.save()
    return password


def kept_admin(database: Path, *, new: bool = False) -> tuple[str, Path]:
    """The demo admin with the password kept beside the SQLite file `database` (`<file>.admin-password`,
    readable by its owner only), so the one printed first goes on working: the kept one, or with `new` (or
    none kept yet) a fresh one, written there. Answers the password and its file."""
    path = database.with_name(database.name + PASSWORD_FILE_SUFFIX)
    kept = "" if new else _read_kept(path)
    password = ensure_admin(password=kept or None)
    if password != kept:
        _keep(path, password)
    return password, path


def _read_kept(path: Path) -> str:
    try:
        return path.read_text(encoding="utf-8").strip()
    except FileNotFoundError:
        return ""


def _keep(path: Path, password: str) -> None:
    """Write `password` to `path`, mode 0600 from the start, replacing any file there in one step."""
    fresh = path.with_name(f"{path.name}.{secrets.token_hex(4)}")
    descriptor = os.open(fresh, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
    with os.fdopen(descriptor, "w", encoding="utf-8") as out:
        out.write(password + "\n")
    os.replace(fresh, path)


def order(order_id: str, *lines: tuple[str, int, int], **extra: Any) -> dict[str, Any]:
    """An order as the shop sends it: (sku, qty, unit price in cents) lines."""
    items = [{"sku": sku, "qty": qty, "price": price} for sku, qty, price in lines]
    return {"id": order_id, "customer": extra.pop("customer", "ada"), "items": items, **extra}


SMALL = (("widget", 3, 400), ("gadget", 1, 250))
LARGE = (("grand-piano", 1, 1_250_000), ("piano-stool", 1, 9_900))


@dataclass(frozen=True)
class Wanted:
    """One demo execution: what to start, and the state it should settle in."""

    execution_id: str
    workflow_id: str
    inputs: Mapping[str, Any]
    settles: str  # "ended", "stopped" or "waiting"
    cancel: str = ""


WANTED: tuple[Wanted, ...] = (
    Wanted("demo-completed", "fulfilment", {"order": order("o-1001", *SMALL)}, "ended"),
    Wanted(
        "demo-awaiting-approval",
        "fulfilment",
        {"order": order("o-1002", *LARGE, customer="grace")},
        "waiting",
    ),
    Wanted("demo-sleeping", "follow_up", {"order": order("o-1001", *SMALL)}, "waiting"),
    Wanted("demo-declined", "fulfilment", {"order": order("o-1003", *SMALL, card="declined")}, "ended"),
    Wanted("demo-refunded", "fulfilment", {"order": order("o-1004", *SMALL, country="AQ")}, "ended"),
    Wanted("demo-stopped", "fulfilment", {"order": order("o-1005", *SMALL, country="Atlantis")}, "stopped"),
    Wanted(
        "demo-cancelled",
        "fulfilment",
        {"order": order("o-1006", *LARGE, customer="linus")},
        "ended",
        cancel="the customer changed their mind",
    ),
)

PARKED = Wanted("demo-parked", "fulfilment", {"order": order("o-0999", *SMALL, customer="old")}, "waiting")


@dataclass(frozen=True)
class Seeded:
    """What seeding left: each demo execution's id and its status word."""

    statuses: Mapping[str, str]


def _settled(state: spi.ExecutionState, wanted: Wanted) -> bool:
    if state.status.terminal:
        return True
    if isinstance(state.status, spi.Stopped):
        return wanted.settles == "stopped"
    # waiting: every row it waits on is a person's input or a far deadline, and nobody holds it
    return wanted.settles == "waiting" and bool(state.waits) and state.executor is None


async def _start_absent(engine: FlowEngine, wanted: Wanted) -> bool:
    if await engine.store.get_execution(wanted.execution_id) is not None:
        return False
    await engine.workflows.start(wanted.workflow_id, execution_id=wanted.execution_id, inputs=wanted.inputs)
    return True


async def seed_parked(store: spi.FlowStore, execution_id: str = PARKED.execution_id) -> None:
    """Start `demo-parked` (or `execution_id`, for a test that needs one of its own) under the previous
    version of `fulfilment` with an engine that runs nothing.

    That version comes from the flows module `FLOWDECK_DEMO_PREVIOUS_FLOWS` names, read by discovery as
    any flows module is. No worker serves it afterwards (they register the current one), so it stays
    parked until an operator resumes it onto the current version (`flowdeck resume demo-parked --go`)."""
    module = flowdeck_settings().demo_previous_flows
    if not module:
        raise discovery.FlowDiscoveryError(
            "FLOWDECK_DEMO_PREVIOUS_FLOWS names no flows module: the demo's parked execution needs one"
        )
    old = FlowEngine(store)
    for workflow_id, versions in discovery.flows_of(module).items():
        for flow in versions:
            await old.register(workflow_id, flow)
    await _start_absent(old, replace(PARKED, execution_id=execution_id))


async def seed(engine: FlowEngine, *, timeout: float = 60.0) -> Seeded:
    """Serve every discovered flow on `engine` (the set every process serves, `runtime.serve`), start every
    demo execution not already there and wait until each settles; `engine` must be running its workers.
    Parked first: registering the current version afterwards makes it the newest again."""
    await seed_parked(engine.store)
    await runtime.serve(engine)
    fresh = [w for w in WANTED if await _start_absent(engine, w)]
    loop = asyncio.get_running_loop()
    deadline = loop.time() + timeout
    pending = list(fresh)
    while pending and loop.time() < deadline:
        still = []
        for wanted in pending:
            state = await engine.store.get_execution(wanted.execution_id)
            assert state is not None
            if wanted.cancel and state.waits and state.executor is None and not state.cancel_requested:
                await engine.executions.cancel(wanted.execution_id, wanted.cancel, actor="demo")
                still.append(wanted)
            elif not _settled(state, wanted):
                still.append(wanted)
        pending = still
        if pending:
            await asyncio.sleep(0.2)
    if pending:
        raise TimeoutError(
            "demo executions did not settle in time: " + ", ".join(w.execution_id for w in pending)
        )
    served = await states.served_by(engine)
    statuses = {}
    for wanted in (*WANTED, PARKED):
        state = await engine.store.get_execution(wanted.execution_id)
        assert state is not None
        standing = states.standing_of(state, served)  # in the console's words, as every surface says it
        parked = " (previous version)" if standing.state is states.ExecState.PARKED else ""
        statuses[wanted.execution_id] = standing.line + parked
    return Seeded(statuses)
