"""A version row written before the store kept graphs (its `info` JSON has no `graph` key) still reads,
with no graph; and a registration keeps the version's graph document in the row, on SQLite and PostgreSQL."""

from __future__ import annotations

import json
from datetime import UTC, datetime

from asgiref.sync import sync_to_async
from django.db import connections

from flowdeck.engine import graph_document, schema
from flowdeck.store.django import models
from flowdeck.store.django.store import DjangoStore
from tests.diagrams.sample_flows import every_kind
from tests.store.django_support import backend_alias, database_access, postgres_alias, sqlite_alias

__all__ = ["backend_alias", "database_access", "postgres_alias", "sqlite_alias"]


def _old_row(alias: str, info: dict[str, object]) -> None:
    now = datetime(2025, 1, 1, tzinfo=UTC)
    try:
        workflow = models.Workflow.objects.using(alias).create(
            id=info["id"], latest_hash=info["structural_hash"], updated=now
        )
        models.WorkflowVersion.objects.using(alias).create(
            workflow=workflow, hash=info["structural_hash"], info=json.dumps(info), registered=now
        )
    finally:
        connections[alias].close()  # sync_to_async's thread outlives the test; its connection must not


def _stored_info(alias: str, workflow_id: str) -> str:
    try:
        return models.WorkflowVersion.objects.using(alias).get(workflow_id=workflow_id).info
    finally:
        connections[alias].close()


async def test_a_row_from_before_graphs_reads_with_no_graph(backend_alias: str) -> None:
    info = json.loads(schema.workflow_info("old-kind", every_kind).model_dump_json())
    del info["graph"]
    await sync_to_async(_old_row)(backend_alias, info)
    store = DjangoStore(backend_alias, pool_size=1, listen=False)
    try:
        found = await store.get_workflow("old-kind")
        assert found is not None
        assert found.graph is None
        assert [n.name for n in found.nodes][:3] == ["order", "total", "cool"]
    finally:
        store.close()


async def test_a_registration_keeps_the_graph_document_in_the_row(backend_alias: str) -> None:
    store = DjangoStore(backend_alias, pool_size=1, listen=False)
    try:
        await store.put_workflow(schema.workflow_info("kinds", every_kind))
    finally:
        store.close()
    row = await sync_to_async(_stored_info)(backend_alias, "kinds")
    assert json.loads(row)["graph"] == graph_document.document_of(every_kind)
