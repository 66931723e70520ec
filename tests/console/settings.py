"""Settings of the console tests: the project's, serving the fulfilment examples and `tests.console.flows`.

`DATABASE_URL` (set by the browser tests to their own PostgreSQL database) picks the database.
"""

from __future__ import annotations

from tests.settings import *  # noqa: F403

FLOWDECK_FLOW_MODULES = ["tests.console.flows"]
FLOWDECK_POLL_TIMEOUT_SECONDS = 1
FLOWDECK_WORKERS = 2
