"""The order in which xdist hands the suite's files out: the most expensive first.

The suite runs with `--dist loadfile` (a file's tests stay in one process, so its browser, live server or
migrated database is built once): each file is one unit of work, given to whichever process is free, in the
order of the collection. xdist's own reorder puts the files with the most tests first, which sent the
costliest files of one or two tests (the SIGKILL loops, the bench's smoke run, the wheel projects) to the
end, where one process ran them alone while the others had nothing left to do. Handing the longest out
first (`--no-loadscope-reorder` keeps this order) bounds that tail by the cost of the last small files.

`COSTS` are the seconds each file took in a whole-suite run on the 2-core machine while it was loaded by
other work (quiet, about half): only their order matters. A file not listed costs less than the last one
listed; those keep xdist's rule, most tests first. A new file that takes more than that belongs here (the
durations printed at the end of every run show it).
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Sequence

import pytest

__all__ = ["COSTS", "longest_first"]

COSTS: dict[str, int] = {
    "tests/console/test_browser_polish.py": 451,
    "tests/acceptance/test_wheel_project.py": 262,
    "tests/acceptance/test_warm_manage.py": 236,
    "tests/bench/test_bench_smoke.py": 229,
    "tests/diagrams/test_hostile_names.py": 223,
    "tests/acceptance/test_shop.py": 206,
    "tests/acceptance/test_atomic_sigkill.py": 193,
    "tests/console/test_browser_layout.py": 183,
    "tests/console/test_settings_refused.py": 178,
    "tests/store/test_django_conformance.py": 166,
    "tests/console/test_browser.py": 153,
    "tests/console/test_bulk_killed.py": 149,
    "tests/acceptance/test_cli_installed.py": 138,
    "tests/console/test_browser_panel.py": 129,
    "tests/acceptance/test_demo.py": 123,
    "tests/store/test_pgbouncer_conformance.py": 122,
    "tests/acceptance/test_plain_sqlite.py": 114,
    "tests/store/test_stateful.py": 105,
    "tests/console/test_truth_table.py": 104,
    "tests/acceptance/test_deploy_settings.py": 103,
    "tests/acceptance/test_multiprocess_postgres.py": 97,
    "tests/console/test_rate_limit_surfaces.py": 97,
    "tests/api/test_schemathesis.py": 93,
    "tests/console/test_browser_diagram.py": 92,
    "tests/console/test_browser_timeline.py": 91,
    "tests/api/test_health_outage.py": 87,
    "tests/console/test_upgrade_0_1.py": 85,
    "tests/acceptance/test_runworkers.py": 80,
    "tests/acceptance/test_cli_project.py": 80,
    "tests/acceptance/test_pooled_sigkill.py": 75,
    "tests/acceptance/test_cli.py": 73,
    "tests/console/test_browser_livepaint.py": 68,
    "tests/acceptance/test_user_passwords.py": 65,
    "tests/console/test_tasks_console.py": 65,
    "tests/diagrams/test_painting_forks.py": 65,
    "tests/console/test_timeline_views.py": 63,
    "tests/console/test_admin.py": 61,
    "tests/diagrams/test_mermaid_browser.py": 60,
    "tests/api/test_lifecycle.py": 59,
    "tests/console/test_metrics.py": 55,
    "tests/bench/test_w12.py": 55,
    "tests/diagrams/test_painting_counts.py": 51,
    "tests/docs/test_examples.py": 50,
    "tests/api/test_errors.py": 49,
    "tests/bench/test_w17.py": 48,
    "tests/console/test_activity_migration.py": 48,
    "tests/console/test_live_progress.py": 45,
    "tests/console/test_overview.py": 42,
    "tests/bench/test_w19.py": 42,
    "tests/console/test_purge.py": 42,
    "tests/console/test_live.py": 41,
    "tests/api/test_hardening.py": 40,
    "tests/engine/test_scheduler.py": 38,
    "tests/console/test_client.py": 38,
    "tests/store/test_postgres_processes.py": 38,
    "tests/console/test_list_surfaces.py": 37,
    "tests/diagrams/test_operator_states.py": 36,
    "tests/console/test_tasks_contract.py": 36,
    "tests/console/test_browser_csp.py": 36,
    "tests/store/test_sqlite_safety.py": 33,
    "tests/acceptance/test_schedule_sigkill.py": 33,
    "tests/engine/test_interpreter.py": 33,
    "tests/acceptance/test_wheel.py": 32,
    "tests/store/test_django_specific.py": 31,
    "tests/api/test_tokens.py": 31,
    "tests/engine/test_seed_examples.py": 30,
    "tests/acceptance/test_limits_sigkill.py": 29,
    "tests/console/test_tasks.py": 29,
    "tests/bench/test_w18.py": 27,
    "tests/bench/test_w14.py": 27,
    "tests/diagrams/test_painting_nested.py": 25,
    "tests/console/test_bulk_console.py": 25,
    "tests/acceptance/test_tasks_sigkill.py": 25,
    "tests/console/test_list_triage.py": 23,
    "tests/console/test_tasks_commit.py": 23,
    "tests/console/test_browser_parked.py": 23,
    "tests/console/test_browser_overview.py": 21,
    "tests/console/test_browser_list.py": 21,
    "tests/console/test_refusals.py": 20,
    # files added after that run, by their own runs' times
    "tests/acceptance/test_failover.py": 45,
    "tests/acceptance/test_replica_reads.py": 30,
    "tests/acceptance/test_rate_sigkill.py": 25,
}


def longest_first(items: Sequence[pytest.Item]) -> list[pytest.Item]:
    """`items` with their files in order of cost, highest first (a file's own tests keep their order)."""
    tests_in = Counter(_file_of(item) for item in items)
    return sorted(items, key=lambda item: _cost(_file_of(item), tests_in))


def _file_of(item: pytest.Item) -> str:
    return item.nodeid.split("::", 1)[0]


def _cost(file: str, tests_in: Counter[str]) -> tuple[int, int, str]:
    # measured seconds first, then the unmeasured by their number of tests; the path keeps a file together
    return (-COSTS.get(file, 0), -tests_in[file], file)
