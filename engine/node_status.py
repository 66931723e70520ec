"""The status words a node is painted with: one vocabulary for progress, the graph and every diagram."""

from __future__ import annotations

import enum

__all__ = ["NodeStatus"]


class NodeStatus(enum.StrEnum):
    COMPLETED = "completed"
    RUNNING = "running"
    PENDING = "pending"
    WAITING = "waiting"
    SLEEPING = "sleeping"
    FAILED = "failed"
    COMPENSATED = "compensated"
    STOPPED = "stopped"
    WON = "won"  # a race's arm whose value the race took
    LOST = "lost"  # a race's arm that was refused or overtaken: neither failed nor completed
