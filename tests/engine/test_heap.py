"""A process's startup heap is frozen out of the collector's full passes; what comes later is not."""

from __future__ import annotations

import gc

from flowdeck.engine import heap


def _walked(thing: object) -> bool:
    """Whether the collector's generations (what a full pass walks) hold `thing`."""
    return any(candidate is thing for candidate in gc.get_objects())


def test_what_is_alive_at_startup_is_frozen_and_what_comes_later_is_collected_as_before() -> None:
    at_startup = {"flows": ["orders"]}
    dropped_at_startup = [[]]
    dropped_at_startup.append(dropped_at_startup)  # a cycle: only the collector frees it
    del dropped_at_startup
    try:
        frozen = heap.freeze_startup_heap()
        later = {"page": [1]}  # holds a container: tracked, as most objects are
        # Frozen objects freed since (by this process's other threads, say) leave the count: it only falls.
        assert frozen >= gc.get_freeze_count() > 0
        assert not _walked(at_startup)  # in the permanent generation: no pass walks it
        assert _walked(later)
        assert all(not (isinstance(o, list) and o and o[-1] is o) for o in gc.get_objects())  # freed first
    finally:
        gc.unfreeze()  # the test process goes on collecting as before
    assert _walked(at_startup)


def _young_passes(allocations: int) -> int:
    """How many collections run while `allocations` tracked objects are made and kept."""
    passes: list[int] = []

    def callback(phase: str, info: dict[str, int]) -> None:
        if phase == "stop":
            passes.append(info["generation"])

    gc.callbacks.append(callback)
    try:
        kept = [[] for _ in range(allocations)]
    finally:
        gc.callbacks.remove(callback)
    del kept
    return len(passes)


def test_a_worker_collects_its_young_objects_every_ten_thousand_allocations_not_every_seven_hundred() -> None:
    saved = gc.get_threshold()
    try:
        gc.set_threshold(700, 10, 10)
        gc.collect()
        assert _young_passes(5_000) >= 5  # CPython's default: a pass per 700
        heap.widen_young_generation()
        assert gc.get_threshold() == (heap.YOUNG_THRESHOLD, 10, 10)  # the older generations' as they were
        gc.collect()
        assert _young_passes(5_000) == 0
        heap.widen_young_generation(500)  # never narrower than it is
        assert gc.get_threshold()[0] == heap.YOUNG_THRESHOLD
        gc.set_threshold(0)  # a process that turned automatic collection off keeps it off
        heap.widen_young_generation()
        assert gc.get_threshold()[0] == 0
    finally:
        gc.set_threshold(*saved)
