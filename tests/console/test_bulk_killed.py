"""A bulk operation killed mid-way (SIGKILL, in another process) leaves a record equal to its effects: the
executions the operation's record names are exactly those it acted on (a cancel requested, a resume
written, an end written), on SQLite and on PostgreSQL (issue 27, item 4). The process is killed inside a
batch, after some of its writes were made and before their commit; then a second run takes up what the
record does not name."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import uuid
from pathlib import Path
from typing import Any

import pytest

from flowdeck.console import bulk
from flowdeck.console.models import Activity
from flowdeck.store import spi
from flowdeck.store.django.models import Event, Execution
from tests.store.django_support import (  # noqa: F401  (fixtures)
    database_access,
    database_url,
    postgres_alias,
    sqlite_alias,
)

ROOT = Path(__file__).resolve().parents[2]
EXECUTIONS = 120
KILLED_AT = 75  # in the second batch of `bulk.FLUSH_EVERY` (50)


@pytest.fixture(params=["sqlite", pytest.param("postgres", marks=pytest.mark.postgres)])
def alias(request: pytest.FixtureRequest, database_access: None) -> str:  # noqa: F811
    return str(request.getfixturevalue(f"{request.param}_alias"))


def _line(process: subprocess.Popen[str]) -> dict[str, Any]:
    assert process.stdout is not None
    line = process.stdout.readline()
    assert line, "the bulk process ended before saying so"
    return dict(json.loads(line))


def _process(url: str, *args: str) -> subprocess.Popen[str]:
    env = {**os.environ, "DATABASE_URL": url, "DJANGO_SETTINGS_MODULE": "tests.console.settings"}
    env |= {"PYTHONPATH": str(ROOT), "FLOWDECK_LOG_LEVEL": "WARNING"}
    return subprocess.Popen(
        [sys.executable, "-m", "tests.console.bulk_killed", *args],
        cwd=ROOT,
        env=env,
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        stderr=subprocess.DEVNULL,
        text=True,
    )


def _ended(process: subprocess.Popen[str], kill: bool) -> None:
    if kill:
        process.send_signal(signal.SIGKILL)
    process.wait(timeout=60)
    for pipe in (process.stdin, process.stdout):
        assert pipe is not None
        pipe.close()


def _killed_mid_way(url: str, verb: str, prefix: str) -> int:
    """Run the bulk operation in another process and SIGKILL it once it has made KILLED_AT writes."""
    process = _process(url, verb, prefix, str(EXECUTIONS), str(KILLED_AT))
    try:
        op_id = int(_line(process)["operation"])
        assert _line(process) == {"written": KILLED_AT}
    finally:
        _ended(process, kill=True)
    return op_id


def _run_again(url: str, op_id: int) -> None:
    process = _process(url, "--again", str(op_id))
    try:
        assert _line(process) == {"finished": True}
    finally:
        _ended(process, kill=False)


def _effects(alias: str, verb: str, prefix: str) -> set[str]:
    """The executions the verb acted on, as the store shows it."""
    mine = {"id__startswith": f"{prefix}-"}
    if verb == "cancel":
        return set(
            Execution.objects.using(alias).filter(cancel_requested=True, **mine).values_list("id", flat=True)
        )
    kind = spi.EventKind.RESUMED if verb == "resume:go" else spi.EventKind.ENDED
    events = Event.objects.using(alias).filter(
        kind=kind.value, **{f"execution__{k}": v for k, v in mine.items()}
    )
    written = list(events.values_list("execution_id", flat=True))
    assert len(written) == len(set(written)), "an execution acted on twice"
    return set(written)


def _record_and_effects(alias: str, verb: str, op_id: int, prefix: str) -> tuple[dict[str, str], set[str]]:
    detail = Activity.objects.using(alias).get(pk=op_id).detail
    return dict(detail["outcomes"]), _effects(alias, verb, prefix)


@pytest.mark.parametrize("verb", ["cancel", "resume:go", "end"])
def test_a_bulk_operation_killed_mid_way_records_exactly_what_it_did(alias: str, verb: str) -> None:
    prefix = f"killed-{uuid.uuid4().hex[:8]}"
    url = database_url(alias)
    op_id = _killed_mid_way(url, verb, prefix)
    outcomes, written = _record_and_effects(alias, verb, op_id, prefix)
    assert set(outcomes) == written
    assert (len(written), set(outcomes.values())) == (bulk.FLUSH_EVERY, {"accepted"})
    assert Activity.objects.using(alias).get(pk=op_id).detail["done"] == bulk.FLUSH_EVERY

    _run_again(url, op_id)  # it takes up exactly the executions the record does not name
    outcomes, written = _record_and_effects(alias, verb, op_id, prefix)
    assert (set(outcomes) == written, len(written)) == (True, EXECUTIONS)
    assert list(outcomes.values()).count("accepted") == EXECUTIONS
    assert Activity.objects.using(alias).get(pk=op_id).outcome == "accepted"
