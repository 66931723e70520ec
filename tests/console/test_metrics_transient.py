"""The metrics count the retries a transient exception caused (`flowdeck_transient_retries_total`) apart
from the node's own: the StepRetried events the engine writes for them say `transient`."""

from __future__ import annotations

from datetime import UTC, datetime

from flowdeck.console import metrics
from flowdeck.store import feed
from flowdeck.store.events import EventKind as K

AT = datetime(2030, 1, 1, tzinfo=UTC)


def _retried(event_id: int, node: str, **data: object) -> feed.FeedEvent:
    payload = {"step_name": node, "attempt": event_id, "delay": 0.05, **data}
    return feed.FeedEvent(event_id, "e1", "shop", event_id, K.STEP_RETRIED.value, AT, payload)


def _value(fold: metrics.Fold, name: str, **labels: str) -> float:
    return fold.registry.get_sample_value(name, labels) or 0.0


def test_retries_a_transient_exception_caused_are_counted_apart() -> None:
    fold = metrics.Fold()
    fold.fold(_retried(1, "reserve", transient=True))
    fold.fold(_retried(2, "reserve", transient=True))
    fold.fold(_retried(3, "reserve"))  # FlowRetry, or one of the node's retry_on
    assert _value(fold, "flowdeck_node_retries_total", workflow="shop", node="reserve") == 3
    assert _value(fold, "flowdeck_transient_retries_total", workflow="shop", node="reserve") == 2
