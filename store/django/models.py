"""Flowdeck's tables."""

from __future__ import annotations
