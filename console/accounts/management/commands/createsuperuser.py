"""`createsuperuser` as Django's, except that `--noinput` with `DJANGO_SUPERUSER_PASSWORD` runs the password
validators too: a weak password is refused (exit 2, listing every problem) and nobody is created."""

from __future__ import annotations

import os
from typing import Any

from django.contrib.auth.management.commands import createsuperuser
from django.contrib.auth.password_validation import validate_password
from django.core.exceptions import ValidationError
from django.core.management.base import CommandError


class Command(createsuperuser.Command):
    def handle(self, *args: Any, **options: Any) -> None:
        password = os.environ.get("DJANGO_SUPERUSER_PASSWORD")
        if not options["interactive"] and password is not None:
            fields = {self.UserModel.USERNAME_FIELD: options.get(self.UserModel.USERNAME_FIELD) or ""}
            if options.get("email"):
                fields["email"] = options["email"]
            try:
                validate_password(password, self.UserModel(**fields))
            except ValidationError as refused:
                problems = "\n".join(f"  {message}" for message in refused.messages)
                raise CommandError(
                    f"DJANGO_SUPERUSER_PASSWORD is refused:\n{problems}", returncode=2
                ) from None
        super().handle(*args, **options)
