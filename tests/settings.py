"""Settings of the test suite: the project's, with a secret key of its own.

The project refuses to start without `FLOWDECK_SECRET_KEY` (no published fallback). The key is put in the
environment before the project's settings load, so that every process a test starts (manage.py
subprocesses, the live servers and their workers, the bench) inherits it. Tests that check the refusal
remove it from their child's environment.
"""

from __future__ import annotations

import os

os.environ.setdefault("FLOWDECK_SECRET_KEY", "flowdeck-test-suite-key-never-used-outside-the-tests-3f9a1c7e")

from django.conf import global_settings

from flowdeck.console.settings import *  # noqa: F403

# Hashing passwords at the production cost (PBKDF2, a million iterations: about a third of a second of CPU)
# is the bulk of creating a user or logging in; the suite does both hundreds of times, in this process and in
# its live servers (whose settings import these). The hasher is not what the tests are about. Django's own
# hashers stay listed after it, so a password hashed by a process on the project's settings still checks.
PASSWORD_HASHERS = [
    "django.contrib.auth.hashers.MD5PasswordHasher",
    *global_settings.PASSWORD_HASHERS,
]
