"""The real diagram tools, batched: Graphviz `dot`, and under Node bpmn-moddle, elkjs and Mermaid's parser.

The Node tools live in node_tools/ (test-only, not committed); `bash .ci/node-tools.sh` installs them. A
missing tool FAILS the test with that instruction: a diagram nobody checked is not a passing diagram.
"""

from __future__ import annotations

import atexit
import html
import json
import os
import re
import select
import shutil
import subprocess
import sysconfig
import tempfile
import time
import xml.etree.ElementTree as ET
from collections.abc import Sequence
from pathlib import Path
from typing import Any, NoReturn

import pytest

from flowdeck.engine.render.mermaid import JOINED

ROOT = Path(__file__).resolve().parents[2]
NODE_TOOLS = ROOT / "node_tools"
SCRIPTS = Path(__file__).resolve().parent / "node"
INSTALL_HINT = "run `bash .ci/node-tools.sh` from the repository root to install the Node diagram tools"


def _node_script(name: str) -> Path:
    if shutil.which("node") is None:
        pytest.fail(f"node is not installed (apt-get install -y nodejs npm), then {INSTALL_HINT}")
    for package in ("bpmn-moddle", "elkjs", "mermaid", "jsdom"):
        if not (NODE_TOOLS / "node_modules" / package / "package.json").exists():
            pytest.fail(f"node_tools/node_modules/{package} is missing: {INSTALL_HINT}")
    # The scripts run from inside node_tools/ so that their bare imports resolve to its node_modules.
    target = NODE_TOOLS / "validators"
    target.mkdir(exist_ok=True)
    for script in SCRIPTS.glob("*.mjs"):
        copy = target / script.name
        if not copy.exists() or copy.read_bytes() != script.read_bytes():
            copy.write_bytes(script.read_bytes())
    return target / f"{name}.mjs"


def _run_node(name: str, items: Sequence[str]) -> list[dict[str, Any]]:
    results = _server(name).ask(list(items))
    assert len(results) == len(items)
    return results


class _NodeServer:
    """One validator kept running (`--serve`) for the whole test process: it answers one batch per line.

    Loading Mermaid under jsdom takes a second or more of CPU, which every batch used to pay again."""

    def __init__(self, script: Path) -> None:
        self.script = script
        # A file, not a pipe: a chatty tool cannot block on a full pipe. It lives as long as the server.
        self.log = tempfile.TemporaryFile()  # noqa: SIM115
        self.proc = subprocess.Popen(
            ["node", str(script), "--serve"], stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=self.log
        )
        self.pending = b""

    def ask(self, items: list[str]) -> list[dict[str, Any]]:
        assert self.proc.stdin is not None
        try:
            self.proc.stdin.write(json.dumps(items).encode() + b"\n")
            self.proc.stdin.flush()
        except BrokenPipeError:
            self._crashed("exited before the batch was sent")
        return json.loads(self._line(deadline=time.monotonic() + 600))

    def _line(self, deadline: float) -> bytes:
        assert self.proc.stdout is not None
        fd = self.proc.stdout.fileno()
        while b"\n" not in self.pending:
            left = deadline - time.monotonic()
            if left <= 0 or not select.select([fd], [], [], left)[0]:
                self._crashed("gave no answer within 600 s")
            chunk = os.read(fd, 1 << 20)
            if not chunk:
                self._crashed("exited")
            self.pending += chunk
        line, _, self.pending = self.pending.partition(b"\n")
        return line

    def _crashed(self, what: str) -> NoReturn:
        _SERVERS.pop(self.script, None)
        if self.proc.poll() is None:
            self.proc.kill()
        self.proc.wait()
        self.log.seek(0)
        stderr = self.log.read().decode(errors="replace")
        self.close()
        pytest.fail(f"{self.script.name} {what} ({self.proc.returncode}): {stderr[-2000:]}")

    def close(self) -> None:
        if self.proc.poll() is None:
            self.proc.kill()
        self.proc.wait()
        for stream in (self.proc.stdin, self.proc.stdout, self.log):
            if stream is not None:
                stream.close()


_SERVERS: dict[Path, _NodeServer] = {}


def _server(name: str) -> _NodeServer:
    script = _node_script(name)  # every time: a missing tool fails the test even with a server running
    if script not in _SERVERS:
        _SERVERS[script] = _NodeServer(script)
    return _SERVERS[script]


@atexit.register
def _close_servers() -> None:
    for server in _SERVERS.values():
        server.close()


def mermaid(texts: Sequence[str]) -> list[dict[str, Any]]:
    """Mermaid's own parser: {ok, error?, labels} per text, labels as Mermaid read them."""
    return _run_node("mermaid", texts)


def bpmn(documents: Sequence[str]) -> list[dict[str, Any]]:
    """bpmn-moddle: {ok, warnings, missing, broken, names} per document."""
    return _run_node("bpmn", documents)


def elk(graphs: Sequence[str]) -> list[dict[str, Any]]:
    """elkjs layout: {ok, unplaced, labels} per ELK JSON text."""
    return _run_node("elk", graphs)


def _dot_program(name: str) -> str:
    if name == "dot":
        found = shutil.which("dot")
        if found is None:
            pytest.fail("Graphviz `dot` is not installed: apt-get install -y graphviz")
        return found
    candidate = Path(sysconfig.get_path("scripts")) / "graphviz-pure"
    if not candidate.exists():
        pytest.fail("graphviz-pure is not installed: pip install -e '.[dev]' (it is a project dependency)")
    return str(candidate)


# graphviz-pure estimates text width from built-in font metrics and says so for characters it lacks.
_BENIGN = re.compile(r"no value for width of non-ASCII character")


def dot(sources: Sequence[str], program: str = "dot") -> list[tuple[bool, str, str]]:
    """`dot -Tsvg` on each source: (accepted, svg, stderr). Graphviz warnings count as refusals, except
    graphviz-pure's note that it guessed a character's width."""
    binary = _dot_program(program)
    results = []
    for source in sources:
        proc = subprocess.run(
            [binary, "-Tsvg"], input=source.encode(), capture_output=True, timeout=120, check=False
        )
        stderr = proc.stderr.decode(errors="replace")
        complaints = [line for line in stderr.splitlines() if line.strip() and not _BENIGN.search(line)]
        results.append((proc.returncode == 0 and not complaints, proc.stdout.decode(), stderr))
    return results


# ------------------------------------------------------------------------------------------ decoding


def mermaid_label_lines(label: str) -> list[str]:
    """A label as Mermaid parsed it, back to the text lines the browser shows: Mermaid holds each entity code
    `#…;` as `ﬂ°°…¶ß` (`ﬂ°…¶ß` for a named one) and, before drawing, turns EVERY `ﬂ°°`, `ﬂ°` and `¶ß` back
    into `&#`, `&` and `;` (whether or not an entity made them), then the HTML is read, and what it drew
    passes that replacement once more (a coded `¶` before `ß` was drawn `;`)."""
    parts = _placeholders_read(label).split("<br>")
    return [unjoined(_placeholders_read(html.unescape(part))) for part in parts]


def _placeholders_read(text: str) -> str:
    return text.replace("ﬂ°°", "&#").replace("ﬂ°", "&").replace("¶ß", ";")


def unjoined(text: str) -> str:
    """Drop the word joiner the Mermaid renderer puts inside a `\\n` pair (engine/render/mermaid.py)."""
    for pair, joined in JOINED.items():
        text = text.replace(joined, pair)
    return text


_DOT_STRING = re.compile(r'"((?:[^"\\]|\\.)*)"', re.S)


def dot_strings(source: str) -> list[str]:
    """Every double-quoted string of a DOT source, unescaped (`\\n` is a line break)."""
    return [_dot_unescape(m.group(1)) for m in _DOT_STRING.finditer(source)]


def _dot_unescape(text: str) -> str:
    text = re.sub(r"\\(.)", lambda m: "\n" if m.group(1) == "n" else m.group(1), text, flags=re.S)
    return text.replace("&amp;", "&")


def svg_texts(svg: str) -> set[str]:
    """The text lines Graphviz drew in an SVG (its no-break spaces read back as spaces)."""
    root = ET.fromstring(svg.encode())
    return {(t.text or "").replace("\xa0", " ") for t in root.iter("{http://www.w3.org/2000/svg}text")}
