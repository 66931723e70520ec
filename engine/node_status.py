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
    ANSWERED = "answered"  # a person said what it did on a stopped execution: awaiting resume
    INTERRUPTED = "interrupted"  # under way when the execution was cancelled or ended: it never finished
