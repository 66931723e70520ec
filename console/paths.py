"""Where the console's templates and browser assets live, for a project's settings to point at.

Flowdeck's own settings use them, and so does a developer's project that installs the console: its
`TEMPLATES` `DIRS` and its `STATICFILES_DIRS` list these folders. The module imports nothing of Django, so
a settings module can import it.
"""

from __future__ import annotations

from pathlib import Path

__all__ = ["STATIC_DIR", "TEMPLATES_DIR"]

_ROOT = Path(__file__).resolve().parent.parent

TEMPLATES_DIR = _ROOT / "templates"
"""The console's pages (`console/…`) and the vendored templates they include."""

STATIC_DIR = _ROOT / "static"
"""The console's scripts and styles (`console/…`) and the vendored browser assets (`vendor/…`)."""
