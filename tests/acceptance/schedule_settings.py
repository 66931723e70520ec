"""Settings serving the schedules' SIGKILL loop (`tests.acceptance.schedule_flows`) besides the examples."""

from __future__ import annotations

from tests.settings import *  # noqa: F403

FLOWDECK_FLOW_MODULES = ["tests.acceptance.schedule_flows"]
