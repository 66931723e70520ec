"""Diagrams of a flow: `render(flow, format, progress=None)` in five formats, and `render_svg` (DOT → SVG).

Every format draws the same FlowGraph (engine/graph.py). Node names are user text: each format escapes
them its own way and uses generated ids for structure, so no name can inject syntax or markup.
"""

from __future__ import annotations

import sys
import types
from collections.abc import Callable
from typing import TYPE_CHECKING

from flowdeck.engine.graph import FlowGraph, build_graph
from flowdeck.engine.progress import Progress
from flowdeck.engine.render import bpmn, dot, elk, jsonfmt, mermaid, svg

if TYPE_CHECKING:
    from flowdeck.engine.flow import Flow

__all__ = ["FORMATS", "render", "render_svg"]

_RENDERERS: dict[str, Callable[[FlowGraph], str]] = {
    "mermaid": mermaid.render,
    "dot": dot.render,
    "bpmn": bpmn.render,
    "elk": elk.render,
    "json": jsonfmt.render,
}
FORMATS: tuple[str, ...] = tuple(_RENDERERS)


def render(flow: Flow, format: str, progress: Progress | None = None) -> str:
    """The flow drawn in `format` (mermaid, dot, bpmn, elk or json; any case), progress painted if given."""
    renderer = _RENDERERS.get(str(format).lower())
    if renderer is None:
        raise ValueError(f"unknown diagram format {format!r}; expected one of: {', '.join(FORMATS)}")
    return renderer(build_graph(flow, progress))


def render_svg(flow: Flow, progress: Progress | None = None) -> str:
    """The DOT drawing laid out as SVG by Graphviz (a system `dot`, else the pip-installed graphviz-pure)."""
    return svg.from_dot(render(flow, "dot", progress))


class _CallableModule(types.ModuleType):
    """`engine.render` is both this package (`render.FORMATS`, `render.render_svg`) and, as DESIGN.md's
    public `render(flow, format, progress=None)`, callable itself: `from engine import render` serves both
    spellings, and nothing has to shadow the package with the function."""

    def __call__(self, flow: Flow, format: str, progress: Progress | None = None) -> str:
        return render(flow, format, progress)


sys.modules[__name__].__class__ = _CallableModule
