"""Settings serving the flows module named by `FLOWDECK_TEST_FLOWS` besides the examples: a deploy of
`versioned` before (`tests.acceptance.versioned_v1`, v1 alone) and during its migration
(`tests.console.versioned_flows`, v1 and v2)."""

from __future__ import annotations

import os

from flowdeck.console.settings import *  # noqa: F403

FLOWDECK_FLOW_MODULES = [os.environ.get("FLOWDECK_TEST_FLOWS", "tests.console.versioned_flows")]
