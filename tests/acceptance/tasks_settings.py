"""Settings of the tasks SIGKILL test: Flowdeck's `django.tasks` backend, and the module of its tasks and
flow (`tests.acceptance.crash_tasks`) served by the workers."""

from __future__ import annotations

from tests.settings import *  # noqa: F403

FLOWDECK_FLOW_MODULES = ["tests.acceptance.crash_tasks"]
TASKS = {
    "default": {
        "BACKEND": "flowdeck.console.tasks.FlowdeckBackend",
        "OPTIONS": {"RETRY_INITIAL": 0.05, "RETRY_MAX": 0.2},
    }
}
