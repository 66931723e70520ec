"""Fields: get_field, get_all_fields, and the write-once rule of record_progress."""

from __future__ import annotations

from flowdeck.store import spi
from flowdeck.store.conformance.case import ALREADY, K, R, StoreCase, field
from flowdeck.store.conformance.support import StoreFixture, seconds


class FieldCases(StoreCase):
    """Fields: written once per path, read back by name and tag, kept apart per execution."""

    # ------------------------------------------------------------------------ field operations

    async def test_fields_43_answered_mappings_support_ordinary_operations(self, fx: StoreFixture) -> None:
        await fx.mk_execution("e1")
        await fx.mk_field("e1", "a", 1)
        await fx.mk_field("e1", "b", "two", "str")
        await fx.mk_waits("e1", {"x": spi.WakeOnField("x"), "t": spi.WakeAt(fx.clock.now() + seconds(60))})
        fields = await fx.store.get_all_fields("e1")
        assert any(name == "a" for name in fields)
        assert [name for name, data in fields.items() if data.tag == "int"] == ["a"]
        assert all(isinstance(data, spi.FieldData) for data in fields.values())
        assert len(fields) == 2
        assert "b" in fields
        assert dict(fields) == {"a": field(1), "b": field("two", "str")}
        waits = (await fx.state("e1")).waits
        assert any(isinstance(w, spi.WakeAt) for w in waits.values())
        assert [p for p, w in waits.items() if isinstance(w, spi.WakeOnField)] == ["x"]
        assert all(p in {"x", "t"} for p in waits)
        assert len(waits) == 2
        assert sorted(waits) == ["t", "x"]

    async def test_fields_44_record_progress_then_get_field(self, fx: StoreFixture) -> None:
        await fx.mk_execution("e1")
        await fx.mk_field("e1", "greeting", "hello", "str")
        assert await fx.store.get_field("e1", "greeting") == field("hello", "str")
        assert (await fx.store.get_field("e1", "greeting")).decode() == "hello"  # type: ignore[union-attr]

    async def test_fields_45_get_field_absent_is_empty(self, fx: StoreFixture) -> None:
        await fx.mk_execution("e1")
        assert await fx.store.get_field("e1", "nope") is None

    async def test_fields_46_second_record_progress_on_present_path_already_recorded(
        self, fx: StoreFixture
    ) -> None:
        await fx.mk_execution("e1")
        handle = await fx.claim("e1")
        await handle.record_wait("gate", spi.WakeOnField("gate"), fx.input_waiting("e1", "gate"))
        assert await handle.record_progress("step1", field(1), fx.step_completed("e1", "step1")) == R
        before = await fx.history("e1")
        assert await handle.record_progress("step1", field(2), fx.step_completed("e1", "step1")) == ALREADY
        assert await fx.store.get_field("e1", "step1") == field(1)
        assert await fx.history("e1") == before
        assert dict((await fx.state("e1")).waits) == {"gate": spi.WakeOnField("gate")}

    async def test_fields_47_valueless_progress_lands_once_on_path_with_field(self, fx: StoreFixture) -> None:
        await fx.mk_execution("e1")
        await fx.mk_waits("e1", {"answer": spi.WakeOnField("answer")})
        await fx.deliver("e1", "answer", "yes")
        handle = await fx.claim("e1")
        assert await handle.record_progress("answer", None, fx.input_discharged("e1", "answer")) == R
        assert dict((await fx.state("e1")).waits) == {}
        assert await handle.record_progress("answer", None, fx.input_discharged("e1", "answer")) == ALREADY
        assert await fx.store.get_field("e1", "answer") == field("yes", "str")

    async def test_fields_48_get_all_fields_returns_every_field(self, fx: StoreFixture) -> None:
        await fx.mk_execution("e1")
        await fx.mk_field("e1", "a", 1)
        await fx.mk_field("e1", "b", 2)
        assert dict(await fx.store.get_all_fields("e1")) == {"a": field(1), "b": field(2)}

    async def test_fields_49_get_all_fields_unknown_execution_is_empty(self, fx: StoreFixture) -> None:
        assert dict(await fx.store.get_all_fields("nope")) == {}

    async def test_fields_50_executions_keep_separate_fields(self, fx: StoreFixture) -> None:
        await fx.mk_execution("e1")
        await fx.mk_execution("e2")
        await fx.mk_field("e1", "x", 10)
        await fx.mk_field("e2", "x", 20)
        assert await fx.store.get_field("e1", "x") == field(10)
        assert await fx.store.get_field("e2", "x") == field(20)

    async def test_cross_105_get_field_with_wrong_tag_is_empty(self, fx: StoreFixture) -> None:
        await fx.mk_execution("e1")
        await fx.mk_field("e1", "n", 7, "int")
        assert await fx.store.get_field("e1", "n", "str") is None
        assert await fx.store.get_field("e1", "n", "int") == field(7)

    async def test_flowdeck_create_with_seed_fields(self, fx: StoreFixture) -> None:
        await fx.mk_execution("e1", fields={"order": field({"id": 7}, "Order")})
        assert dict(await fx.store.get_all_fields("e1")) == {"order": field({"id": 7}, "Order")}
        [created] = await fx.history("e1")
        assert (created.kind, created.seq, created.execution_id) == (K.CREATED, 1, "e1")
