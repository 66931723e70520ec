"""Retention: the `FLOWDECK_RETENTION` policy, and the chore that worker processes run to apply it.

    FLOWDECK_RETENTION = {
        "older_than": "30d",                      # required: how long after its end an execution is kept
        "statuses": ["completed", "cancelled"],   # the ended kinds purged (default: every ended kind)
        "every": "1h",                            # how often a worker process purges (default 1h)
        "batch": 500,                             # executions per transaction (default 500)
        "pause": "1s",                            # the pause between two batches (default 1s)
    }

Unset (the default), nothing is purged but by `flow purge`. Set, every `runworkers` process purges once
at start and then every `every`: the executions whose status is one of `statuses` and that ended more than
`older_than` ago, `batch` at a time (each batch one short transaction, `FlowStore.purge_ended`), pausing
between batches, until a batch comes back short. An unended execution (running, waiting, stopped,
compensating) is never touched. Several processes may purge at once: on PostgreSQL a batch skips the rows
another one holds, on SQLite their writes take turns.

A purge by the workers is logged (`console.retention`, action `retention`), not recorded in the activity
record, which keeps what people did; `flowdeck purge` is recorded there. Activity rows that name a purged
execution stay, as the record of what was done: the id they name no longer resolves.
"""

from __future__ import annotations

import logging
from collections.abc import Mapping
from dataclasses import dataclass
from datetime import timedelta
from typing import Any

import pydantic

from flowdeck.console import durations, setting_errors
from flowdeck.engine import maintenance
from flowdeck.store import retention, spi
from flowdeck.store.clock import Clock

__all__ = ["RetentionPolicy", "Setting", "apply", "chore", "policy", "policy_of"]

logger = logging.getLogger(__name__)


@dataclass(frozen=True)
class RetentionPolicy:
    """`FLOWDECK_RETENTION`, checked (see the module docstring)."""

    older_than: timedelta
    statuses: tuple[str, ...] = retention.ENDED
    every: timedelta = timedelta(hours=1)
    batch: int = 500
    pause: timedelta = timedelta(seconds=1)


def _age(value: str) -> timedelta:
    return durations.parse_age(value)


class Setting(pydantic.BaseModel):
    """`FLOWDECK_RETENTION` as written, checked field by field (`flowdeck.console.conf` validates it with
    every other setting; `policy` turns it into the policy)."""

    model_config = pydantic.ConfigDict(extra="forbid", frozen=True)

    older_than: str
    statuses: tuple[str, ...] = ()
    every: str = "1h"
    batch: int = pydantic.Field(500, ge=1, le=10_000, strict=True)
    pause: str = "1s"

    @pydantic.field_validator("older_than", "every", "pause")
    @classmethod
    def _duration(cls, value: str) -> str:
        _age(value)
        return value

    @pydantic.field_validator("every")
    @classmethod
    def _some_time(cls, value: str) -> str:
        if _age(value) <= timedelta(0):
            raise ValueError("must be longer than 0s")
        return value

    @pydantic.field_validator("statuses")
    @classmethod
    def _ended(cls, value: tuple[str, ...]) -> tuple[str, ...]:
        return retention.ended_kinds(value)


def policy(checked: Setting) -> RetentionPolicy:
    """The policy a checked setting asks for (no statuses given: every ended kind)."""
    statuses = retention.ended_kinds(checked.statuses)
    every = _age(checked.every)
    return RetentionPolicy(_age(checked.older_than), statuses, every, checked.batch, _age(checked.pause))


def policy_of(setting: Mapping[str, Any] | None) -> RetentionPolicy | None:
    """The policy `FLOWDECK_RETENTION` asks for (None when unset); ImproperlyConfigured naming every
    problem, one line each, when it is malformed."""
    if setting is None:
        return None
    try:
        return policy(Setting.model_validate(setting))
    except pydantic.ValidationError as error:
        problems = setting_errors.problem_lines(error, "FLOWDECK_RETENTION")
        raise setting_errors.SettingsRefused(problems) from None


async def apply(store: spi.FlowStore, policy: RetentionPolicy, clock: Clock) -> int:
    """One round of the policy: purge what ended more than `older_than` ago; answers how many went."""
    what = retention.Purge(store.now() - policy.older_than, policy.statuses)
    purged = await retention.purge(store, what, batch=policy.batch, pause=policy.pause, clock=clock)
    if purged:
        logger.info(
            "retention purged %d execution(s) ended before %s",
            purged,
            what.ended_before.isoformat(),
            extra={"action": "retention", "purged": purged},
        )
    return purged


def chore(store: spi.FlowStore, policy: RetentionPolicy, clock: Clock) -> maintenance.Chore:
    """The policy as a maintenance chore of a worker process (`flowdeck.engine.maintenance.running`)."""
    return maintenance.Chore("retention", policy.every, lambda: apply(store, policy, clock))
