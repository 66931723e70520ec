"""Workflow metadata: registered versions and the latest one."""

from __future__ import annotations

from typing import Any

from flowdeck.store import spi
from flowdeck.store.conformance.case import StoreCase
from flowdeck.store.conformance.support import StoreFixture

# A version's graph document as engine/graph_document.py writes it; the store keeps it as given.
GRAPH: dict[str, Any] = {
    "format": 1,
    "name": 'orders <&> "quoted"',
    "nodes": [
        {"kind": "input", "name": "order", "type": "Order", "tag": "Order", "tags": ["shop"]},
        {
            "kind": "parallel",
            "parallel": "race",
            "branches": [
                {"name": "a", "nodes": [{"kind": "sleep", "name": "grace", "seconds": 0.5}]},
                {"name": "b", "nodes": [{"kind": "step", "name": "é 🙂", "description": "ünïcode"}]},
            ],
        },
        {"kind": "foreach", "name": "items", "type": "", "tag": "json", "concurrency": None},
    ],
}


class WorkflowCases(StoreCase):
    """Workflow metadata: put_workflow, get_workflow, list_workflows and every version by its hash."""

    # ------------------------------------------------------------------------ workflow metadata

    def workflow(self, version: str = "1.0", id: str = "wf1", hash: str = "abc123") -> spi.WorkflowInfo:
        return spi.WorkflowInfo(
            id=id,
            meta=spi.WorkflowMeta(description="orders", tags=("shop",), version=version),
            nodes=(spi.NodeInfo(name="order", node_type="input", tag="Order"),),
            inputs=(spi.InputInfo(name="order", tag="Order"),),
            outputs=("total",),
            structural_hash=hash,
        )

    async def test_workflow_99_put_then_get(self, fx: StoreFixture) -> None:
        info = self.workflow()
        await fx.store.put_workflow(info)
        assert await fx.store.get_workflow("wf1") == info

    async def test_workflow_100_get_unknown_is_empty(self, fx: StoreFixture) -> None:
        assert await fx.store.get_workflow("nope") is None

    async def test_workflow_101_list_returns_all(self, fx: StoreFixture) -> None:
        await fx.store.put_workflow(self.workflow(id="wf1"))
        await fx.store.put_workflow(self.workflow(id="wf2", hash="def456"))
        assert sorted(w.id for w in await fx.store.list_workflows()) == ["wf1", "wf2"]

    async def test_workflow_102_put_overwrites_same_id(self, fx: StoreFixture) -> None:
        await fx.store.put_workflow(self.workflow("1.0"))
        await fx.store.put_workflow(self.workflow("2.0"))
        found = await fx.store.get_workflow("wf1")
        assert found is not None
        assert found.meta.version == "2.0"
        assert len(await fx.store.list_workflows()) == 1

    async def test_flowdeck_workflow_versions_by_hash(self, fx: StoreFixture) -> None:
        v1 = self.workflow("1.0", hash="h1")
        v2 = self.workflow("2.0", hash="h2")
        await fx.store.put_workflow(v1)
        await fx.store.put_workflow(v2)
        assert await fx.store.get_workflow("wf1") == v2
        assert await fx.store.get_workflow("wf1", "h1") == v1
        assert await fx.store.get_workflow("wf1", "h3") is None
        assert list(await fx.store.list_workflow_versions("wf1")) == [v1, v2]
        assert list(await fx.store.list_workflow_versions("nope")) == []
        assert list(await fx.store.list_workflows()) == [v2]

    # ------------------------------------------------------------------------ the version's graph

    async def test_flowdeck_workflow_graph_round_trips_on_every_read(self, fx: StoreFixture) -> None:
        info = self.workflow().model_copy(update={"graph": GRAPH})
        await fx.store.put_workflow(info)
        assert (await fx.store.get_workflow("wf1")) == info
        found = await fx.store.get_workflow("wf1", "abc123")
        assert found is not None
        assert found.graph == GRAPH
        assert [w.graph for w in await fx.store.list_workflow_versions("wf1")] == [GRAPH]
        assert [w.graph for w in await fx.store.list_workflows()] == [GRAPH]

    async def test_flowdeck_workflow_graph_absent_reads_as_none(self, fx: StoreFixture) -> None:
        await fx.store.put_workflow(self.workflow())
        found = await fx.store.get_workflow("wf1")
        assert found is not None
        assert found.graph is None

    async def test_flowdeck_workflow_graph_kept_per_version(self, fx: StoreFixture) -> None:
        other = {**GRAPH, "nodes": GRAPH["nodes"][:1]}
        await fx.store.put_workflow(self.workflow("1.0", hash="h1").model_copy(update={"graph": GRAPH}))
        await fx.store.put_workflow(self.workflow("2.0", hash="h2").model_copy(update={"graph": other}))
        old, new = await fx.store.get_workflow("wf1", "h1"), await fx.store.get_workflow("wf1", "h2")
        assert old is not None
        assert new is not None
        assert (old.graph, new.graph) == (GRAPH, other)
