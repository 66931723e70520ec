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
