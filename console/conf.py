"""Flowdeck's settings: one prefix (`FLOWDECK_*`), one typed object, reloaded when tests change settings.

Every `FLOWDECK_*` Django setting is read here and nowhere else (`flowdeck_settings()`). The worker knobs
default to the engine's own `EngineConfig`, so each default is declared once, in the engine. Two kinds stay
outside: the deployment switches that come from the environment (secret key, TLS, login throttling, log
level), read by `console.settings` through `console.deploy` before there are Django settings to read; and
`FLOWDECK_CSP`, the policy the security block of `console.settings` declares and `console.security` applies
(it has no default to fall back on).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from datetime import timedelta
from typing import Any

from django.conf import settings as django_settings
from django.core.signals import setting_changed
from django.dispatch import receiver

from console import retention as retention_policy
from engine.config import EngineConfig

__all__ = ["FlowdeckSettings", "flowdeck_settings"]


@dataclass(frozen=True)
class FlowdeckSettings:
    """The console's settings, each from its `FLOWDECK_*` Django setting (the engine's default when unset).

    - `flow_modules` (`FLOWDECK_FLOW_MODULES`): modules holding flows, besides each app's `flows.py`.
    - `workers`, `lease`, `renew_every`, `batch_size`, `poll_timeout` (`FLOWDECK_WORKERS`,
      `FLOWDECK_LEASE_SECONDS`, `FLOWDECK_RENEW_EVERY_SECONDS`, `FLOWDECK_BATCH_SIZE`,
      `FLOWDECK_POLL_TIMEOUT_SECONDS`): the worker knobs, as `EngineConfig` describes them.
    - `shutdown_grace`: the engine's, with no setting of its own (`runworkers --shutdown-grace` overrides it).
    - `database_alias` (`FLOWDECK_DATABASE_ALIAS`): the Django database executions live in.
    - `heartbeat` (`FLOWDECK_HEARTBEAT_SECONDS`): how often a worker process publishes its health.
    - `demo_stop` (`FLOWDECK_DEMO_STOP_SECONDS`): how long the demo waits for its workers to stop.
    - `demo_previous_flows` (`FLOWDECK_DEMO_PREVIOUS_FLOWS`): the flows module (declaring `FLOWS`, as
      discovery reads it) of the versions no process serves any more, that the demo parks an execution on.
    - `retention` (`FLOWDECK_RETENTION`): what worker processes purge, and how often (`console.retention`);
      None (unset): they purge nothing.
    """

    flow_modules: tuple[str, ...] = ()
    workers: int = EngineConfig.workers
    lease: timedelta = EngineConfig.lease
    renew_every: timedelta = EngineConfig.renew_every
    batch_size: int = EngineConfig.batch_size
    poll_timeout: timedelta = EngineConfig.poll_timeout
    shutdown_grace: timedelta = EngineConfig.shutdown_grace
    database_alias: str = "default"
    heartbeat: timedelta = timedelta(seconds=5)
    demo_stop: timedelta = timedelta(seconds=30)
    demo_previous_flows: str = ""
    retention: retention_policy.RetentionPolicy | None = None
    extra: dict[str, Any] = field(default_factory=dict)

    @classmethod
    def load(cls) -> FlowdeckSettings:
        def setting(name: str, default: Any) -> Any:
            value = getattr(django_settings, f"FLOWDECK_{name}", None)
            return default if value is None else value

        def seconds(name: str, default: timedelta) -> timedelta:
            value = setting(f"{name}_SECONDS", None)
            return default if value is None else timedelta(seconds=float(value))

        return cls(
            flow_modules=tuple(setting("FLOW_MODULES", ())),
            workers=int(setting("WORKERS", cls.workers)),
            lease=seconds("LEASE", cls.lease),
            renew_every=seconds("RENEW_EVERY", cls.renew_every),
            batch_size=int(setting("BATCH_SIZE", cls.batch_size)),
            poll_timeout=seconds("POLL_TIMEOUT", cls.poll_timeout),
            database_alias=str(setting("DATABASE_ALIAS", cls.database_alias)),
            heartbeat=seconds("HEARTBEAT", cls.heartbeat),
            demo_stop=seconds("DEMO_STOP", cls.demo_stop),
            demo_previous_flows=str(setting("DEMO_PREVIOUS_FLOWS", cls.demo_previous_flows)),
            retention=retention_policy.policy_of(setting("RETENTION", None)),
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
