from __future__ import annotations

from django.apps import AppConfig


class FlowStoreConfig(AppConfig):
    name = "flowdeck.store.django"
    label = "flowstore"
    verbose_name = "Flowdeck store"
    default_auto_field = "django.db.models.BigAutoField"
