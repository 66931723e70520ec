"""Django settings of W10's live console: the project's, serving `bench.live_flows`, one worker."""

from __future__ import annotations

import os

os.environ.setdefault("FLOWDECK_SECRET_KEY", "flowdeck-bench-key-w10-serves-only-a-throwaway-database")

from flowdeck.console.settings import *  # noqa: F403  (DATABASES comes from DATABASE_URL)

FLOWDECK_FLOW_MODULES = ["bench.live_flows"]
FLOWDECK_WORKERS = 1
