from __future__ import annotations

from django.apps import AppConfig


class ConsoleConfig(AppConfig):
    name = "console"
    label = "console"
    verbose_name = "Flowdeck console"
    default_auto_field = "django.db.models.BigAutoField"

    def ready(self) -> None:
        # Flows live in each installed app's `flows.py` (Django's autodiscover convention) and in the
        # modules named by FLOWDECK_FLOW_MODULES; finding them here means every process (web, workers,
        # CLI) serves the same set.
        from console import discovery

        discovery.discover()
