"""Flowdeck's settings: one prefix (`FLOWDECK_*`), one typed object, reloaded when tests change settings."""

from __future__ import annotations

from dataclasses import dataclass, field
from datetime import timedelta
from typing import Any

from django.conf import settings as django_settings
from django.core.signals import setting_changed
from django.dispatch import receiver

__all__ = ["FlowdeckSettings", "flowdeck_settings"]


@dataclass(frozen=True)
class FlowdeckSettings:
    """Worker knobs default to the engine's; `flow_modules` are extra modules holding flows."""

    flow_modules: tuple[str, ...] = ()
    workers: int = 2
    lease: timedelta = timedelta(seconds=30)
    renew_every: timedelta = timedelta(seconds=10)
    batch_size: int = 4
    poll_timeout: timedelta = timedelta(seconds=30)
    database_alias: str = "default"
    extra: dict[str, Any] = field(default_factory=dict)

    @classmethod
    def load(cls) -> FlowdeckSettings:
        def seconds(name: str, default: timedelta) -> timedelta:
            value = getattr(django_settings, name, None)
            return default if value is None else timedelta(seconds=float(value))

        return cls(
            flow_modules=tuple(getattr(django_settings, "FLOWDECK_FLOW_MODULES", ())),
            workers=int(getattr(django_settings, "FLOWDECK_WORKERS", cls.workers)),
            lease=seconds("FLOWDECK_LEASE_SECONDS", cls.lease),
            renew_every=seconds("FLOWDECK_RENEW_EVERY_SECONDS", cls.renew_every),
            batch_size=int(getattr(django_settings, "FLOWDECK_BATCH_SIZE", cls.batch_size)),
            poll_timeout=seconds("FLOWDECK_POLL_TIMEOUT_SECONDS", cls.poll_timeout),
            database_alias=str(getattr(django_settings, "FLOWDECK_DATABASE_ALIAS", "default")),
        )


_current: FlowdeckSettings | None = None


def flowdeck_settings() -> FlowdeckSettings:
    global _current
    if _current is None:
        _current = FlowdeckSettings.load()
    return _current


@receiver(setting_changed)
def _reload(setting: str, **kwargs: object) -> None:
    global _current
    if setting.startswith("FLOWDECK_"):
        _current = None
