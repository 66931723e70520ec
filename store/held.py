"""What every store's claim handle holds, whatever its backend: the row as claimed, the satisfied paths, the
token its writes present, and the cancel request as its latest accepted write saw it."""

from __future__ import annotations

from flowdeck.store import spi

__all__ = ["HeldClaim"]


class HeldClaim(spi.Claimed):
    """The accessors of `spi.Claimed`, kept once; a backend adds the verbs and refreshes the cancel request
    (`heard_cancel`) from each write it accepts."""

    def __init__(self, state: spi.ExecutionState, satisfied: frozenset[str], token: int) -> None:
        self._state = state
        self._satisfied = satisfied
        self._token = token
        self.heard_cancel(state.cancel_requested, state.cancel_reason)

    def heard_cancel(self, requested: bool, reason: str | None) -> None:
        """Record the cancel request as the row stood at this handle's latest accepted write."""
        self._cancel_requested, self._cancel_reason = bool(requested), reason or ""

    @property
    def state(self) -> spi.ExecutionState:
        return self._state

    @property
    def satisfied(self) -> frozenset[str]:
        return self._satisfied

    @property
    def cancel_requested(self) -> bool:
        return self._cancel_requested

    @property
    def cancel_reason(self) -> str:
        return self._cancel_reason
