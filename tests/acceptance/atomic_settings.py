"""Settings serving the SIGKILL loop's flow (`tests.acceptance.atomic_flows`) besides the examples."""

from __future__ import annotations

from tests.settings import *  # noqa: F403

FLOWDECK_FLOW_MODULES = ["tests.acceptance.atomic_flows"]
