"""Flowdeck: a durable workflow engine for Python, with an operations console.

The short public surface: `from flowdeck import Flow, run_local, FlowError, ...` are the engine's public
names (those of `flowdeck.engine`, exported here too), and `flowdeck.client` is the application client
(`flowdeck.console.client`), imported on first use because it needs Django's settings.

The rest lives in the subpackages: `flowdeck.engine` (no Django), `flowdeck.store` (the store contract and its
backends), `flowdeck.console` (the Django app: API, pages, commands). This file is `public/__init__.py` in the
repository; setup.py maps the folders into the package.
"""

from __future__ import annotations

import importlib
from types import ModuleType

from flowdeck import engine as _engine
from flowdeck.engine import *  # noqa: F403  (the engine's __all__, re-exported once)

__all__ = [*_engine.__all__, "client"]  # noqa: F405  (client: the lazy module below)

_LAZY = {"client": "flowdeck.console.client"}


def __getattr__(name: str) -> ModuleType:
    # The client imports Django's settings: only a caller who uses it pays for that (and needs them).
    if name in _LAZY:
        module = importlib.import_module(_LAZY[name])
        globals()[name] = module
        return module
    raise AttributeError(f"module 'flowdeck' has no attribute {name!r}")
