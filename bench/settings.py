"""Django settings for the bench: the project's, with only the apps the store needs.

Every bench process starts Django; the console's apps (daphne, channels, the console and its flow
discovery) cost more than a second of imports each time and play no part in a benchmark of the engine
and its store.

A bench process serves no page and signs nothing, so it brings a key of its own when none is set (the
project refuses to start without one).
"""

from __future__ import annotations

import os

os.environ.setdefault("FLOWDECK_SECRET_KEY", "flowdeck-bench-key-the-bench-serves-no-page-and-signs-nothing")

from flowdeck.console.settings import *  # noqa: F403  (DATABASES comes from DATABASE_URL, set by bench.flowdeck_env)

INSTALLED_APPS = [
    "django.contrib.contenttypes",
    "flowdeck.store.django.apps.FlowStoreConfig",
]
MIDDLEWARE: list[str] = []
ROOT_URLCONF = None
