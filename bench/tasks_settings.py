"""Django settings of W17 (`bench/tasks_load.py`): the project's, with `TASKS` on Flowdeck's backend or on
`django-tasks-db`'s (`FLOWDECK_BENCH_TASKS=flowdeck|db`), each on a PostgreSQL database of its own
(`DATABASE_URL`). The console's apps stay: `flowdeck_workers` is the console's command, as a project runs
it; `db_worker` is django-tasks-db's."""

from __future__ import annotations

import os

os.environ.setdefault("FLOWDECK_SECRET_KEY", "flowdeck-bench-key-the-bench-serves-no-page-and-signs-nothing")

from flowdeck.console.settings import *  # noqa: F403

SYSTEM = os.environ.get("FLOWDECK_BENCH_TASKS", "flowdeck")

if SYSTEM == "db":
    INSTALLED_APPS = [*INSTALLED_APPS, "django_tasks_db"]  # noqa: F405
    TASKS = {"default": {"BACKEND": "django_tasks_db.DatabaseBackend"}}
    # db_worker closes "old" connections twice per task: with the project's CONN_MAX_AGE of 0 that is a
    # new connection per task. A deployment of it keeps them (persistent, health-checked), and so does this.
    DATABASES["default"]["CONN_MAX_AGE"] = None  # noqa: F405
    DATABASES["default"]["CONN_HEALTH_CHECKS"] = True  # noqa: F405
else:
    TASKS = {"default": {"BACKEND": "flowdeck.console.tasks.FlowdeckBackend"}}
    FLOWDECK_FLOW_MODULES = ["bench.tasks_funcs"]
