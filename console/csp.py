"""The console's Content-Security-Policy: the directives `flowdeck.console.security` sends on every response.

A project that mounts the console and sets no `FLOWDECK_CSP` of its own gets this one, so no console page
is ever served without a policy. The module imports nothing, so settings modules can import it.
"""

from __future__ import annotations

__all__ = ["CONSOLE_POLICY"]

# The Content-Security-Policy of every response (flowdeck.console.security adds ws:/wss: of the page's host to
# connect-src). No inline script, no eval. Styles allow 'unsafe-inline' (styles only): mermaid writes a
# <style> element and style attributes into each drawing, and parses them while it draws (DOMPurify).
CONSOLE_POLICY: dict[str, list[str]] = {
    "default-src": ["'self'"],
    "script-src": ["'self'"],
    "style-src": ["'self'", "'unsafe-inline'"],
    "img-src": ["'self'", "data:"],
    "font-src": ["'self'"],
    "connect-src": ["'self'"],
    "object-src": ["'none'"],
    "base-uri": ["'self'"],
    "form-action": ["'self'"],
    "frame-ancestors": ["'none'"],
}
