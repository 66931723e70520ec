"""Settings of the live API server and its workers in the tests: the project's, serving tests.api.flows.

`DATABASE_URL` (set by the test session to its own PostgreSQL database) picks the database.
"""

from __future__ import annotations

from tests.settings import *  # noqa: F403

FLOWDECK_FLOW_MODULES = ["tests.api.flows"]
FLOWDECK_POLL_TIMEOUT_SECONDS = 1
FLOWDECK_WORKERS = 2
