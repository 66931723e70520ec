"""DOT → SVG with Graphviz, on the server.

A system `dot` is preferred. Without one, the `graphviz-pure` wheel (a dot-compatible binary, a project
dependency) stands in, so a plain `pip install` is enough on a machine with no Graphviz package.
"""

from __future__ import annotations

import functools
import os
import shutil
import sysconfig
from pathlib import Path

import graphviz
from graphviz.backend import dot_command

__all__ = ["dot_binary", "from_dot"]


@functools.cache
def dot_binary() -> Path:
    """The layout program: `dot` on PATH, else the graphviz-pure binary installed beside this Python."""
    system = shutil.which("dot")
    if system:
        return Path(system)
    candidates = [shutil.which("graphviz-pure"), os.path.join(sysconfig.get_path("scripts"), "graphviz-pure")]
    for candidate in candidates:
        if candidate and os.access(candidate, os.X_OK):
            return Path(candidate)
    raise RuntimeError("no Graphviz layout program: install Graphviz (`dot`) or `pip install graphviz-pure`")


def from_dot(source: str) -> str:
    binary = dot_binary()
    # The graphviz package runs whatever DOT_BINARY names; point it at the program found above.
    if binary != dot_command.DOT_BINARY:
        dot_command.DOT_BINARY = binary
    return graphviz.pipe_string("dot", "svg", source, encoding="utf-8")
