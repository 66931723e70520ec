"""Flowdeck benchmarks (not tests): `python -m bench [--quick] [--json PATH]`. See bench/README.md."""

from __future__ import annotations
