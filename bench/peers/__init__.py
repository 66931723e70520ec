"""Peers measured beside Flowdeck in the same run."""

from __future__ import annotations
