"""Settings serving the concurrency limits' SIGKILL loop (`tests.acceptance.limit_flows`)."""

from __future__ import annotations

from tests.settings import *  # noqa: F403

FLOWDECK_FLOW_MODULES = ["tests.acceptance.limit_flows"]
