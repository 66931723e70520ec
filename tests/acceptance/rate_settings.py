"""Settings serving the rate limits' SIGKILL loop (`tests.acceptance.rate_flows`)."""

from __future__ import annotations

from tests.settings import *  # noqa: F403

FLOWDECK_FLOW_MODULES = ["tests.acceptance.rate_flows"]
