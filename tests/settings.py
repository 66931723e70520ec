"""Settings of the test suite: the project's, with a secret key of its own.

The project refuses to start without `FLOWDECK_SECRET_KEY` (no published fallback). The key is put in the
environment before the project's settings load, so that every process a test starts (manage.py
subprocesses, the live servers and their workers, the bench) inherits it. Tests that check the refusal
remove it from their child's environment.
"""

from __future__ import annotations

import os

os.environ.setdefault("FLOWDECK_SECRET_KEY", "flowdeck-test-suite-key-never-used-outside-the-tests-3f9a1c7e")

from console.settings import *  # noqa: F403
