"""What satisfies a wait row: a deadline (a sleep's) or a field coming to exist (an input's)."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from datetime import datetime
from typing import Any, TypeAlias


@dataclass(frozen=True)
class WakeAt:
    """A sleep's row: satisfied once the store's clock reaches `at`."""

    at: datetime


@dataclass(frozen=True)
class WakeOnField:
    """An input's row: satisfied once the field `name` exists."""

    name: str


Wake: TypeAlias = WakeAt | WakeOnField


def wake_to_json(wake: Wake) -> dict[str, Any]:
    if isinstance(wake, WakeAt):
        return {"type": "at", "at": wake.at.isoformat()}
    return {"type": "on_field", "name": wake.name}


def wake_from_json(data: Mapping[str, Any]) -> Wake:
    if data["type"] == "at":
        return WakeAt(datetime.fromisoformat(data["at"]))
    return WakeOnField(data["name"])
