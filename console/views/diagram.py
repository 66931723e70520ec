"""What a page drawing a diagram hands its template: the formats the switcher offers and the status
palette its one HTML legend is drawn from.

The palette is `engine.render.common.COLOURS` as it stands when the page is drawn, so a status added to it
reaches the legend (and the browser's colour-to-status lookup) without a template change.
"""

from __future__ import annotations

from typing import Any

from flowdeck.engine.render.common import COLOURS

__all__ = ["FORMATS", "context"]

# The switcher's order and words; the keys are the diagram routes' format names.
FORMATS: tuple[tuple[str, str], ...] = (
    ("mermaid", "Mermaid"),
    ("dot", "DOT/SVG"),
    ("bpmn", "BPMN"),
    ("elk", "ELK"),
)


def context() -> dict[str, Any]:
    """`diagram_formats` (format, label) pairs and `palette`: status → colour, in the palette's order."""
    return {
        "diagram_formats": FORMATS,
        "palette": {str(status): colour for status, colour in COLOURS.items()},
    }
