"""`manage.py flowdeck_upgrade`: move a Flowdeck 0.1 database's console to its new app label, before
`migrate` (see `flowdeck.console.upgrade`). Nothing to do answers so and exits 0."""

from __future__ import annotations

from typing import Any

from django.core.management.base import BaseCommand, CommandError, CommandParser

from flowdeck.console import upgrade


class Command(BaseCommand):
    help = "Upgrade a database from Flowdeck 0.1 (the console's app label console -> flowdeck_console)."
    requires_system_checks: list[str] = []  # its own check is what this command answers

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument("--database", default="default", help="the database alias (default: default)")

    def handle(self, *args: Any, **options: Any) -> None:
        try:
            done = upgrade.upgrade(options["database"])
        except upgrade.UpgradeRefused as refused:
            raise CommandError(str(refused), returncode=2) from None
        if not done:
            self.stdout.write("nothing to upgrade: no Flowdeck 0.1 console in this database")
            return
        for line in done:
            self.stdout.write(line)
        self.stdout.write("upgraded from Flowdeck 0.1; now run migrate")
