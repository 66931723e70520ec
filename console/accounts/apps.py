from __future__ import annotations

from django.apps import AppConfig


class AccountsConfig(AppConfig):
    name = "console.accounts"
    label = "flowdeck_accounts"
    verbose_name = "Flowdeck accounts"
