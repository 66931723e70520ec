from __future__ import annotations

from django.apps import AppConfig


class ConsoleConfig(AppConfig):
    name = "flowdeck.console"
    label = "flowdeck_console"  # a label no host app is likely to have (was "console" in 0.1)
    verbose_name = "Flowdeck console"
    default_auto_field = "django.db.models.BigAutoField"

    def ready(self) -> None:
        # Flows live in each installed app's `flows.py` (Django's autodiscover convention) and in the
        # modules named by FLOWDECK_FLOW_MODULES; finding them here means every process (web, workers,
        # CLI) serves the same set.
        from django.contrib.auth.signals import user_logged_out
        from django.core import checks

        from flowdeck.console import conf, discovery, setting_errors, socket_sessions, upgrade

        checks.register(upgrade.check_labels, checks.Tags.database)
        # Every FLOWDECK_* setting is checked as the process starts, so no command (`check` and `migrate`
        # included) and no web process runs on a bad one: a command exits 2, a line per problem.
        try:
            conf.flowdeck_settings()
        except setting_errors.SettingsRefused as refused:
            setting_errors.refuse(refused)
        discovery.discover()
        # a logout closes the websockets its session opened in this process (others notice on re-reading)
        user_logged_out.connect(socket_sessions.logged_out, dispatch_uid="flowdeck-socket-sessions")
