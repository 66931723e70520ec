"""Flowdeck's settings: one prefix (`FLOWDECK_*`), one typed object, reloaded when tests change settings.

Every `FLOWDECK_*` Django setting is read here and nowhere else (`flowdeck_settings()`), and checked in one
validation (`_Declared`, pydantic at the edge): a bad value, a setting Flowdeck does not have (a misspelt
name), a database alias the project does not define, a renewal not shorter than the lease. Every problem
is one line naming its setting (`setting_errors.SettingsRefused`); the console's `ready()` reads the
settings, so every process refuses them as it starts (a command: exit 2; the web process:
ImproperlyConfigured). The worker knobs default to the engine's own `EngineConfig`, so each default is
declared once, in the engine. The deployment switches that come from the environment (secret key, TLS, login
throttling, log level) are Flowdeck's own project's, read by `console.settings` through `console.deploy`
before there are Django settings to read.
"""

from __future__ import annotations

import difflib
import os
import re
from collections.abc import Mapping
from dataclasses import dataclass, field
from datetime import timedelta
from typing import Annotated, Any

import pydantic
from django.conf import settings as django_settings
from django.core.signals import setting_changed
from django.dispatch import receiver

from flowdeck.console import csp, deploy, setting_errors
from flowdeck.console import retention as retention_policy
from flowdeck.engine.config import EngineConfig
from flowdeck.engine.rate_limits import RateLimit, limits_of

__all__ = ["FlowdeckSettings", "flowdeck_settings"]

YEAR = 365 * 24 * 3600
_DOTTED = re.compile(r"[A-Za-z_][A-Za-z0-9_]*(\.[A-Za-z_][A-Za-z0-9_]*)*")
_DIRECTIVE = re.compile(r"[a-z][a-z-]*")


def _not_a_bool(value: object) -> object:
    # pydantic takes True for 1: a switch where a number belongs is a mistake, not one worker
    if isinstance(value, bool):
        raise ValueError(f"must be a number, not {value!r}")
    return value


def _module_name(value: str) -> str:
    if not _DOTTED.fullmatch(value):
        raise ValueError(f"{value[:60]!r} is not a dotted module name (like 'shop.flows')")
    return value


def _module_or_none(value: str) -> str:
    return value and _module_name(value)


def _rate_limits(value: dict[str, Any]) -> dict[str, Any]:
    return limits_of("FLOWDECK_RATE_LIMITS", value)


def _directive(value: str) -> str:
    if not _DIRECTIVE.fullmatch(value):
        raise ValueError(f"{value[:60]!r} is not a CSP directive name (like 'img-src')")
    return value


def _source(value: str) -> str:
    if not value or any(c.isspace() or c in ";," or not c.isprintable() for c in value):
        raise ValueError(f"{value[:60]!r} is not one CSP source (one word, no ';' or ',')")
    return value


Count = Annotated[int, pydantic.BeforeValidator(_not_a_bool), pydantic.Field(ge=1)]
Seconds = Annotated[
    float, pydantic.BeforeValidator(_not_a_bool), pydantic.Field(gt=0, le=YEAR, allow_inf_nan=False)
]
ModuleName = Annotated[str, pydantic.AfterValidator(_module_name)]
Directive = Annotated[str, pydantic.AfterValidator(_directive)]
Source = Annotated[str, pydantic.AfterValidator(_source)]


def _console_policy() -> dict[str, tuple[str, ...]]:
    return {name: tuple(sources) for name, sources in csp.CONSOLE_POLICY.items()}


class _Declared(pydantic.BaseModel):
    """The `FLOWDECK_*` Django settings a project may set, each checked; a field is its setting's name."""

    model_config = pydantic.ConfigDict(extra="forbid", frozen=True)

    FLOWDECK_FLOW_MODULES: tuple[ModuleName, ...] = ()
    FLOWDECK_WORKERS: Count = EngineConfig.workers
    FLOWDECK_LEASE_SECONDS: Seconds = EngineConfig.lease.total_seconds()
    FLOWDECK_RENEW_EVERY_SECONDS: Seconds = EngineConfig.renew_every.total_seconds()
    FLOWDECK_BATCH_SIZE: Count = EngineConfig.batch_size
    FLOWDECK_POLL_TIMEOUT_SECONDS: Seconds = EngineConfig.poll_timeout.total_seconds()
    FLOWDECK_DATABASE_ALIAS: str = "default"
    FLOWDECK_TRANSACTION_POOLER: pydantic.StrictBool = False
    FLOWDECK_LISTEN_DATABASE_ALIAS: str | None = None
    FLOWDECK_WRITES_DATABASE_ALIAS: str | None = None
    FLOWDECK_READ_REPLICA_ALIAS: str | None = None
    FLOWDECK_HEARTBEAT_SECONDS: Seconds = 5
    FLOWDECK_DEMO_STOP_SECONDS: Seconds = 30
    FLOWDECK_DEMO_PREVIOUS_FLOWS: Annotated[str, pydantic.AfterValidator(_module_or_none)] = ""
    FLOWDECK_RETENTION: retention_policy.Setting | None = None
    FLOWDECK_CSP: dict[Directive, tuple[Source, ...]] = pydantic.Field(default_factory=_console_policy)
    FLOWDECK_RATE_LIMITS: Annotated[dict[str, Any], pydantic.AfterValidator(_rate_limits)] = pydantic.Field(
        default_factory=dict
    )

    @pydantic.field_validator(
        "FLOWDECK_DATABASE_ALIAS",
        "FLOWDECK_LISTEN_DATABASE_ALIAS",
        "FLOWDECK_WRITES_DATABASE_ALIAS",
        "FLOWDECK_READ_REPLICA_ALIAS",
    )
    @classmethod
    def _defined(cls, alias: str | None, info: pydantic.ValidationInfo) -> str | None:
        databases = (info.context or {}).get("databases", ())
        if alias is not None and alias not in databases:
            raise ValueError(f"{alias!r} is not in DATABASES (it has {', '.join(map(repr, databases))})")
        return alias

    @pydantic.model_validator(mode="after")
    def _listening_in_a_session(self) -> _Declared:
        # LISTEN through a transaction-mode pool hears nothing: workers would wait out every poll timeout
        if self.FLOWDECK_TRANSACTION_POOLER and self.FLOWDECK_LISTEN_DATABASE_ALIAS is None:
            raise ValueError(
                "FLOWDECK_TRANSACTION_POOLER is set: FLOWDECK_LISTEN_DATABASE_ALIAS must name a database "
                "alias that keeps a session for the LISTEN connection (direct to PostgreSQL, or a "
                "session-mode pool entry; docs/pooling.md)"
            )
        return self

    @pydantic.model_validator(mode="after")
    def _renewed_in_time(self) -> _Declared:
        if self.FLOWDECK_RENEW_EVERY_SECONDS >= self.FLOWDECK_LEASE_SECONDS:
            raise ValueError(
                f"FLOWDECK_RENEW_EVERY_SECONDS ({self.FLOWDECK_RENEW_EVERY_SECONDS:g}) must be shorter than "
                f"FLOWDECK_LEASE_SECONDS ({self.FLOWDECK_LEASE_SECONDS:g}), or claims lapse between renewals"
            )
        return self


def _given() -> dict[str, Any]:
    """The `FLOWDECK_*` settings this project sets (None is unset, as if absent)."""
    names = [name for name in dir(django_settings) if name.startswith("FLOWDECK_")]
    return {name: value for name in names if (value := getattr(django_settings, name)) is not None}


def _unknown(given: Mapping[str, Any]) -> list[str]:
    """A line per setting Flowdeck does not have: a misspelt name would otherwise be ignored in silence."""
    known = list(_Declared.model_fields)
    lines = []
    for name in given:
        if name not in known:
            close = difflib.get_close_matches(name, known, n=1, cutoff=0.8)
            hint = f" (did you mean {close[0]}?)" if close else f" (Flowdeck's are {', '.join(known)})"
            lines.append(f"{name}: not a Flowdeck setting{hint}")
    return lines


def _declared() -> _Declared:
    """The project's settings, checked at once; SettingsRefused lists every problem, a line each."""
    given = _given()
    problems = _unknown(given) + deploy.event_loop_problems(os.environ)
    known = {name: value for name, value in given.items() if name in _Declared.model_fields}
    try:
        declared = _Declared.model_validate(known, context={"databases": list(django_settings.DATABASES)})
    except pydantic.ValidationError as error:
        problems += setting_errors.problem_lines(error)
    if problems:
        raise setting_errors.SettingsRefused(problems)
    return declared


@dataclass(frozen=True)
class FlowdeckSettings:
    """The console's settings, each from its `FLOWDECK_*` Django setting (the engine's default when unset).

    - `flow_modules` (`FLOWDECK_FLOW_MODULES`): modules holding flows, besides each app's `flows.py`.
    - `workers`, `lease`, `renew_every`, `batch_size`, `poll_timeout` (`FLOWDECK_WORKERS`,
      `FLOWDECK_LEASE_SECONDS`, `FLOWDECK_RENEW_EVERY_SECONDS`, `FLOWDECK_BATCH_SIZE`,
      `FLOWDECK_POLL_TIMEOUT_SECONDS`): the worker knobs, as `EngineConfig` describes them.
    - `shutdown_grace`: the engine's, with no setting of its own (`runworkers --shutdown-grace` overrides it).
    - `database_alias` (`FLOWDECK_DATABASE_ALIAS`): the Django database executions live in.
    - `transaction_pooler` (`FLOWDECK_TRANSACTION_POOLER`): that alias goes through a transaction-mode
      pooler (PgBouncer): the store prepares no statement and sends no session options.
    - `listen_database_alias` (`FLOWDECK_LISTEN_DATABASE_ALIAS`): the alias the LISTEN connection uses
      (None: `database_alias`); required with `transaction_pooler` (docs/pooling.md).
    - `writes_database_alias` (`FLOWDECK_WRITES_DATABASE_ALIAS`): the alias group commit's connections
      (claims, the writes under a claim) use (None: `database_alias`); one that keeps a session lets them
      prepare their statements behind a transaction pooler.
    - `read_replica_alias` (`FLOWDECK_READ_REPLICA_ALIAS`): a streaming replica of `database_alias` the
      console's list, overview, search, timeline and history read from (None: they read the primary);
      starts, signals, operator actions and the live feed stay on the primary (docs/failover.md).
    - `heartbeat` (`FLOWDECK_HEARTBEAT_SECONDS`): how often a worker process publishes its health.
    - `demo_stop` (`FLOWDECK_DEMO_STOP_SECONDS`): how long the demo waits for its workers to stop.
    - `demo_previous_flows` (`FLOWDECK_DEMO_PREVIOUS_FLOWS`): the flows module (declaring `FLOWS`, as
      discovery reads it) of the versions no process serves any more, that the demo parks an execution on.
    - `retention` (`FLOWDECK_RETENTION`): what worker processes purge, and how often (`console.retention`);
      None (unset): they purge nothing.
    - `rate_limits` (`FLOWDECK_RATE_LIMITS`): named rate limits, name to `RateLimit` or to its fields
      (`{"carrier-api": {"count": 50, "per": "minute"}}`), beside (and over) the flows modules' own.
    - `csp` (`FLOWDECK_CSP`): the Content-Security-Policy of the console's answers (`console.csp`'s by
      default), directive name to sources.
    """

    flow_modules: tuple[str, ...] = ()
    workers: int = EngineConfig.workers
    lease: timedelta = EngineConfig.lease
    renew_every: timedelta = EngineConfig.renew_every
    batch_size: int = EngineConfig.batch_size
    poll_timeout: timedelta = EngineConfig.poll_timeout
    shutdown_grace: timedelta = EngineConfig.shutdown_grace
    database_alias: str = "default"
    transaction_pooler: bool = False
    listen_database_alias: str | None = None
    writes_database_alias: str | None = None
    read_replica_alias: str | None = None
    heartbeat: timedelta = timedelta(seconds=5)
    demo_stop: timedelta = timedelta(seconds=30)
    demo_previous_flows: str = ""
    retention: retention_policy.RetentionPolicy | None = None
    csp: Mapping[str, tuple[str, ...]] = field(default_factory=_console_policy)
    rate_limits: Mapping[str, RateLimit] = field(default_factory=dict)

    @classmethod
    def load(cls) -> FlowdeckSettings:
        """The project's settings, checked; SettingsRefused (an ImproperlyConfigured) names every problem."""
        d = _declared()
        return cls(
            flow_modules=d.FLOWDECK_FLOW_MODULES,
            workers=d.FLOWDECK_WORKERS,
            lease=timedelta(seconds=d.FLOWDECK_LEASE_SECONDS),
            renew_every=timedelta(seconds=d.FLOWDECK_RENEW_EVERY_SECONDS),
            batch_size=d.FLOWDECK_BATCH_SIZE,
            poll_timeout=timedelta(seconds=d.FLOWDECK_POLL_TIMEOUT_SECONDS),
            database_alias=d.FLOWDECK_DATABASE_ALIAS,
            transaction_pooler=d.FLOWDECK_TRANSACTION_POOLER,
            listen_database_alias=d.FLOWDECK_LISTEN_DATABASE_ALIAS,
            writes_database_alias=d.FLOWDECK_WRITES_DATABASE_ALIAS,
            read_replica_alias=d.FLOWDECK_READ_REPLICA_ALIAS,
            heartbeat=timedelta(seconds=d.FLOWDECK_HEARTBEAT_SECONDS),
            demo_stop=timedelta(seconds=d.FLOWDECK_DEMO_STOP_SECONDS),
            demo_previous_flows=d.FLOWDECK_DEMO_PREVIOUS_FLOWS,
            retention=None if d.FLOWDECK_RETENTION is None else retention_policy.policy(d.FLOWDECK_RETENTION),
            csp=d.FLOWDECK_CSP,
            rate_limits=d.FLOWDECK_RATE_LIMITS,
        )


_current: FlowdeckSettings | None = None


def flowdeck_settings() -> FlowdeckSettings:
    """The settings of this process, read once and again after a test changes a `FLOWDECK_*` setting."""
    global _current
    if _current is None:
        _current = FlowdeckSettings.load()
    return _current


@receiver(setting_changed)
def _reload(setting: str, **kwargs: object) -> None:
    global _current
    if setting.startswith("FLOWDECK_"):
        _current = None
