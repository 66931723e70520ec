"""The fulfilment versions no process serves any more, declared as any flows module declares its flows.

The demo (`FLOWDECK_DEMO_PREVIOUS_FLOWS` names this module) starts `demo-parked` under them, so the console
has a parked execution to show; this module is not an app's `flows.py` nor in `FLOWDECK_FLOW_MODULES`, so
no worker serves it.
"""

from __future__ import annotations

from examples.fulfilment import flows
from flowdeck.engine import Flow

__all__ = ["FLOWS"]

FLOWS: dict[str, list[Flow]] = {"fulfilment": [flows.fulfilment_v1]}
