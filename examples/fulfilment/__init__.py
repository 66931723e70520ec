"""The order-fulfilment example as a Django app: flows served by discovery, services keeping a ledger."""

from __future__ import annotations
