"""A workflow's concurrency limits as its author declares them, and the key a start computes.

`Meta(concurrency=Concurrency(limit=20))`: at most 20 executions of the workflow running at once.
`Meta(concurrency=Concurrency(key="order.customer_id", per_key=1))`: at most one per customer, the key read
from the start's inputs (an input's name, then a path into its value as JSON: keys of objects, indexes of
lists). Both may be given. The key is computed once, at the start, from the inputs as they are recorded
(after their round trip through the serializer), and recorded with the execution, so the store decides
without running user code (`store.concurrency` says what holds a slot and how the claim decides).
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from flowdeck.engine.errors import FlowInputError
from flowdeck.store import concurrency
from flowdeck.store.fields import FieldData

__all__ = ["MAX_KEY", "Concurrency", "limits_for"]

MAX_KEY = 200  # characters of a computed key (it is a column, an index entry and a label on every page)


@dataclass(frozen=True)
class Concurrency:
    """At most `limit` executions of the workflow running (None: no such limit), and at most `per_key`
    running per value of `key` (a dotted path into the start's inputs: `"order.customer_id"`)."""

    limit: int | None = None
    key: str | None = None
    per_key: int = 1

    def __post_init__(self) -> None:
        for name in ("limit", "per_key"):
            value = getattr(self, name)
            if value is None and name == "limit":
                continue
            if (
                isinstance(value, bool)
                or not isinstance(value, int)
                or not 0 < value <= concurrency.MAX_CAPACITY
            ):
                raise ValueError(
                    f"Concurrency: {name} must be an integer from 1 to {concurrency.MAX_CAPACITY}"
                )
        if self.key is not None and (not isinstance(self.key, str) or not self.key.strip(".")):
            raise ValueError(
                "Concurrency: key must be a dotted path into the inputs, such as 'order.customer_id'"
            )
        if self.limit is None and self.key is None:
            raise ValueError("Concurrency: give a limit, a key, or both")

    @property
    def input_name(self) -> str | None:
        """The input the key is read from."""
        return None if self.key is None else self.key.split(".")[0]

    def describe(self) -> str:
        """In words, for the workflow's metadata and the Limits page
        (`20 running; 1 per order.customer_id`)."""
        parts = [] if self.limit is None else [f"{self.limit} running"]
        if self.key is not None:
            parts.append(f"{self.per_key} per {self.key}")
        return "; ".join(parts)


def limits_for(declared: Concurrency | None, fields: Mapping[str, FieldData]) -> concurrency.Limits | None:
    """The limits a start records, its key read from its encoded inputs; FlowInputError when the key's
    input is missing or holds nothing at that path."""
    if declared is None:
        return None
    key = None if declared.key is None else _key(declared.key, fields)
    return concurrency.Limits(limit=declared.limit or 0, key=key, per_key=declared.per_key if key else 0)


def _key(path: str, fields: Mapping[str, FieldData]) -> str:
    name, *steps = path.split(".")
    if name not in fields:
        raise FlowInputError(
            f"concurrency key {path!r}: the input {name!r} must be given at the start", name=name
        )
    value: Any = json.loads(fields[name].value)
    for step in steps:
        if isinstance(value, Mapping) and step in value:
            value = value[step]
        elif isinstance(value, list) and step.isdigit() and int(step) < len(value):
            value = value[int(step)]
        else:
            raise FlowInputError(f"concurrency key {path!r}: the input {name!r} has no {step!r}", name=name)
    if value is None or isinstance(value, Mapping | list):
        raise FlowInputError(
            f"concurrency key {path!r}: a text or a number expected, got {value!r}", name=name
        )
    text = value if isinstance(value, str) else json.dumps(value)
    if len(text) > MAX_KEY:
        raise FlowInputError(f"concurrency key {path!r}: longer than {MAX_KEY} characters", name=name)
    return text
