"""`versioned` as deployed before its migration: v1 alone."""

from __future__ import annotations

from tests.console.versioned_flows import V1

FLOWS = {"versioned": V1}
