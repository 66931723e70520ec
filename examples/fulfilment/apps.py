from __future__ import annotations

from django.apps import AppConfig


class FulfilmentConfig(AppConfig):
    name = "examples.fulfilment"
    label = "fulfilment"
    verbose_name = "Order fulfilment (example)"
    default_auto_field = "django.db.models.BigAutoField"
