from __future__ import annotations

from django.apps import AppConfig


class AccountsConfig(AppConfig):
    name = "flowdeck.console.accounts"
    label = "flowdeck_accounts"
    verbose_name = "Flowdeck accounts"
