"""The versions one engine serves: flow definitions keyed by `(workflow_id, structural_hash)`.

An execution belongs to the version it started under, so workers resolve a claimed row by its own pair and
new starts use the latest registration of an id. Nothing is ever evicted: serving an old and a new version
side by side during a migration is a steady state. Registration is in-process and synchronous; the engine
puts a version here BEFORE telling the store (`put_workflow` wakes pollers, which must then find it).
"""

from __future__ import annotations

import asyncio
from dataclasses import dataclass
from typing import TYPE_CHECKING

from flowdeck.engine.errors import FlowNotRegistered

if TYPE_CHECKING:
    from flowdeck.engine.flow import Flow

__all__ = ["Registry", "Version"]


@dataclass(frozen=True)
class Version:
    workflow_id: str
    hash: str
    flow: Flow


class Registry:
    def __init__(self) -> None:
        self._versions: dict[tuple[str, str], Version] = {}
        self._latest: dict[str, Version] = {}
        self._changed = asyncio.Event()

    def add(self, version: Version) -> None:
        """Serve `version`; it becomes what new starts of its workflow use."""
        self._versions[(version.workflow_id, version.hash)] = version
        self._latest[version.workflow_id] = version
        self._changed.set()
        self._changed = asyncio.Event()

    def resolve(self, workflow_id: str, hash: str) -> Version | None:
        return self._versions.get((workflow_id, hash))

    def latest(self, workflow_id: str) -> Version:
        try:
            return self._latest[workflow_id]
        except KeyError:
            raise FlowNotRegistered(workflow_id, self.ids()) from None

    def ids(self) -> list[str]:
        return sorted(self._latest)

    def served(self) -> frozenset[tuple[str, str]]:
        return frozenset(self._versions)

    def hashes(self, workflow_id: str) -> frozenset[str]:
        return frozenset(h for (wf, h) in self._versions if wf == workflow_id)

    def next_change(self) -> asyncio.Event:
        """The event the next registration sets; take it BEFORE reading `served` so none is missed."""
        return self._changed
