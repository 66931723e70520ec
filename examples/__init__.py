"""Example flows: the order-fulfilment workflows of the README, the demo and the tests."""

from __future__ import annotations
