"""A recorded field value: written once, as JSON text, beside the name of its declared type."""

from __future__ import annotations

import json
from dataclasses import dataclass
from typing import Any


@dataclass(frozen=True)
class FieldData:
    """A recorded value: JSON text beside the name of its declared type. Written once, then it stands."""

    value: str
    tag: str

    @classmethod
    def of(cls, value: Any, tag: str) -> FieldData:
        """Encode a JSON-native value."""
        return cls(json.dumps(value, separators=(",", ":"), sort_keys=True), tag)

    def decode(self) -> Any:
        return json.loads(self.value)
