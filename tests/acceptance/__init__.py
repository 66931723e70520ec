"""Acceptance tests: manage.py driven as subprocesses, as an operator or a deployment would."""

from __future__ import annotations
