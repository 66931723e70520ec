"""`store.django.replica.ReplicaReads`: which calls go to the replica and which to the primary, on two real
(memory) stores standing for them. The fallback while the replica does not answer is tested for real, on a
stopped standby: tests/acceptance/test_replica_reads.py."""

from __future__ import annotations

import asyncio
from datetime import timedelta

from flowdeck.store.django.replica import READS, ReplicaReads
from flowdeck.store.heartbeats import Heartbeat
from flowdeck.store.memory import MemoryStore


def test_the_pages_reads_go_to_the_replica_and_everything_else_to_the_primary() -> None:
    primary, replica = MemoryStore(), MemoryStore()
    reads = ReplicaReads(replica, primary)

    async def main() -> tuple[list[str], list[str], list[str]]:
        await replica.record_heartbeat(Heartbeat(executor_id="on-the-replica"))
        await reads.record_heartbeat(Heartbeat(executor_id="written-through-it"))  # a write: the primary's
        listed = [beat.executor_id for beat in await reads.list_heartbeats(timedelta(minutes=1))]
        on_primary = [beat.executor_id for beat in await primary.list_heartbeats(timedelta(minutes=1))]
        on_replica = [beat.executor_id for beat in await replica.list_heartbeats(timedelta(minutes=1))]
        return listed, on_primary, on_replica

    listed, on_primary, on_replica = asyncio.run(main())
    assert listed == ["on-the-replica"]
    assert on_primary == ["written-through-it"]
    assert on_replica == ["on-the-replica"]
    assert reads.replica_answering


def test_the_live_feeds_reads_are_not_the_replicas() -> None:
    assert {"latest_event_id", "events_after", "event_ids_after", "wait_for_change"}.isdisjoint(READS)
    primary = MemoryStore()
    assert ReplicaReads(MemoryStore(), primary).latest_event_id == primary.latest_event_id
