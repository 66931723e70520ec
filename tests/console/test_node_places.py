"""Every node has its own identity (issue 29 point 2), on the demo's executions run for real (SQLite file,
the truth table's seeding): the three `decision` outputs of the fulfilment race share one durable path, and
the node panel tells them apart by their place (`decision@<drawn id>`), each showing only what its own arm
recorded; a key naming the path alone opens the place its record is; gateways open a panel of their own
(which arms, who won, when), whose badge agrees with the diagram."""

from __future__ import annotations

import json
import re
from collections.abc import Iterator
from typing import Any

import pytest
from django.test import AsyncClient

from flowdeck.engine.engine import FlowEngine

# the truth table's demo seeding, on its module's SQLite file
from tests.console.test_truth_table import migrated_sqlite_file, operator, seeded  # noqa: F401

pytestmark = pytest.mark.django_db(transaction=True, serialized_rollback=True, databases="__all__")


@pytest.fixture(scope="module")
def sqlite_file(
    tmp_path_factory: pytest.TempPathFactory, django_db_setup: None, django_db_blocker: Any
) -> Iterator[str]:
    """A migrated SQLite file of this module's own, as the truth table has (an alias of its own: the truth
    table's is gone with its module)."""
    yield from migrated_sqlite_file("places_sqlite", tmp_path_factory, django_db_blocker)


@pytest.fixture
def backend(settings: Any, sqlite_file: str) -> str:
    """The truth table's seeding on SQLite only: places are the engine's, not the backend's."""
    settings.FLOWDECK_DATABASE_ALIAS = sqlite_file
    settings.DATABASE_ROUTERS = ["tests.console.test_truth_table.LedgerRouter"]
    return "sqlite"


async def _drawing(client: AsyncClient, execution_id: str) -> list[dict[str, Any]]:
    reply = await client.get(f"/api/v1/executions/{execution_id}/diagram?format=json")
    assert reply.status_code == 200
    return json.loads(reply.content)["nodes"]


async def _panel(client: AsyncClient, execution_id: str, key: str, status: int = 200) -> str:
    reply = await client.get(f"/executions/{execution_id}/nodes/{key}")
    assert reply.status_code == status, (key, reply.status_code)
    return reply.content.decode()


def _head(panel: str) -> tuple[str, str]:
    """The key the panel shows and its state."""
    found = re.search(r'data-node-key="([^"]*)" data-node-status="([a-z]+)"', panel)
    assert found is not None, panel[:300]
    return found[1], found[2]


def _ids(nodes: list[dict[str, Any]], **match: str) -> list[str]:
    return [n["id"] for n in nodes if all(n.get(k) == v for k, v in match.items())]


async def _decision_places(client: AsyncClient) -> None:
    drawn = await _drawing(client, "demo-awaiting-approval")
    auto, person, timed_out = _ids(drawn, path="decision")
    # The automatic decision was refused (a person decides): its place holds the failed attempt.
    panel = await _panel(client, "demo-awaiting-approval", f"decision@{auto}")
    assert _head(panel) == (f"decision@{auto}", "lost")
    assert "in race 1 branch 1" in panel
    assert "NeedsApproval" in panel
    assert 'class="attempts"' in panel
    # The person's decision has not run: none of the automatic one's record shows there.
    panel = await _panel(client, "demo-awaiting-approval", f"decision@{person}")
    assert _head(panel) == (f"decision@{person}", "pending")
    assert "in race 1 branch 2 › race 2 branch 1" in panel
    assert "Nothing ran at this place" in panel
    assert "NeedsApproval" not in panel
    assert 'class="attempts"' not in panel
    # Each lists the path's other places, linked by their own keys.
    assert f'data-node-link="decision@{auto}"' in panel
    assert f'data-node-link="decision@{timed_out}"' in panel
    # The path alone (a link from the timeline) opens the place its record is.
    assert _head(await _panel(client, "demo-awaiting-approval", "decision"))[0] == f"decision@{auto}"
    # Once the race is decided, the value is the winner's alone.
    drawn = await _drawing(client, "demo-completed")
    won, lost, _ = _ids(drawn, path="decision")
    panel = await _panel(client, "demo-completed", f"decision@{won}")
    assert _head(panel) == (f"decision@{won}", "won")
    assert "Recorded value" in panel
    assert "auto-approved" in panel
    panel = await _panel(client, "demo-completed", f"decision@{lost}")
    assert _head(panel) == (f"decision@{lost}", "lost")
    assert "Recorded value" not in panel
    assert "auto-approved" not in panel
    # A node's own path stays its key where no other place carries it.
    assert _head(await _panel(client, "demo-completed", "ship")) == (
        "ship",
        "won" if False else "completed",
    )


def _arms(panel: str) -> dict[str, str]:
    return dict(re.findall(r'data-arm="(\d)" data-arm-state="([a-z]+)"', panel))


async def _gateways(client: AsyncClient) -> None:
    drawn = await _drawing(client, "demo-awaiting-approval")
    outer, inner = _ids(drawn, kind="race-fork")
    panel = await _panel(client, "demo-awaiting-approval", f"@{outer}")
    painted = {n["id"]: n["status"] for n in drawn}
    assert _head(panel) == (f"@{outer}", painted[outer]) == (f"@{outer}", "waiting")
    assert "undecided: the race goes on" in panel
    assert _arms(panel) == {"1": "lost", "2": "waiting"}
    panel = await _panel(client, "demo-awaiting-approval", f"@{inner}")
    assert "in race 1 branch 2" in panel
    assert dict(re.findall(r'data-arm="(\d)" data-arm-state="([a-z]+)"', panel)) == {
        "1": "waiting",
        "2": "sleeping",
    }
    drawn = await _drawing(client, "demo-completed")
    outer_join = _ids(drawn, kind="race-join")[0]
    panel = await _panel(client, "demo-completed", f"@{outer_join}")
    assert _head(panel) == (f"@{outer_join}", "completed")
    assert re.search(r"won by branch 1 at <time datetime=", panel)
    assert _arms(panel) == {"1": "won", "2": "lost"}
    # The inner race sat in the losing branch: lost with it, not "undecided".
    panel = await _panel(client, "demo-completed", f"@{_ids(drawn, kind='race-fork')[1]}")
    assert _head(panel)[1] == "lost"
    assert "lost: it sits in a branch that lost its race" in panel
    assert "undecided" not in panel
    # A race the cancel cut short will never be decided.
    drawn = await _drawing(client, "demo-cancelled")
    panel = await _panel(client, "demo-cancelled", f"@{_ids(drawn, kind='race-fork')[1]}")
    assert "never decided: the execution ended first" in panel


async def _no_place(client: AsyncClient) -> None:
    drawn = await _drawing(client, "demo-completed")
    approval = _ids(drawn, path="approval")[0]
    total = _ids(drawn, path="total")[0]
    for key in (f"decision@{approval}", f"@{total}", "@n9999", "decision@", "@"):
        panel = await _panel(client, "demo-completed", key, status=404)
        assert "no such" in panel
        assert "Traceback" not in panel


async def test_every_node_and_gateway_opens_its_own_panel(
    seeded: FlowEngine,  # noqa: F811
    operator: AsyncClient,  # noqa: F811
) -> None:
    # One case: the seeding is the costly part, and a transactional case's flush empties the SQLite file's
    # migrated rows for any case after it in this module.
    await _decision_places(operator)
    await _gateways(operator)
    await _no_place(operator)
