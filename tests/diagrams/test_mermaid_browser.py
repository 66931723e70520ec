"""Mermaid drawn for real in headless Chromium: every label shows its name as written, as text.

The parser tests prove the text is valid; this proves what a person sees in the console: entity codes
decoded, nothing from a name turned into markup.
"""

from __future__ import annotations

import html
import json
import re
import shutil
import subprocess
from pathlib import Path

import pytest
from hypothesis import HealthCheck, Phase, given, settings
from hypothesis import strategies as st

from flowdeck.engine.flow import Flow
from flowdeck.engine.render import render
from tests.diagrams import tools
from tests.diagrams.sample_flows import ALL
from tests.diagrams.strategies import flows
from tests.diagrams.test_hostile_names import _names
from tests.diagrams.test_tools_accept import cycled

pytestmark = pytest.mark.browser

_PAGE = """<!doctype html><html><head><meta charset="utf-8"></head><body><pre id="result"></pre>
<script src="%(mermaid)s"></script>
<script>
mermaid.initialize({startOnLoad: false, securityLevel: "strict"});
const texts = %(texts)s;
(async () => {
  const results = [];
  for (let i = 0; i < texts.length; i++) {
    try {
      const { svg } = await mermaid.render("d" + i, texts[i]);
      const holder = document.createElement("div");
      holder.innerHTML = svg;
      const lines = [];
      for (const p of holder.querySelectorAll("p")) {
        for (const part of p.innerHTML.split("<br>")) {
          const cell = document.createElement("div");
          cell.innerHTML = part;
          lines.push(cell.textContent);
        }
      }
      const markup = holder.querySelectorAll("foreignObject :is(b, i, script, img, a)").length;
      results.push({ ok: true, lines, markup });
    } catch (error) {
      results.push({ ok: false, error: String(error && error.message || error) });
    }
  }
  document.getElementById("result").textContent = JSON.stringify(results);
})();
</script></body></html>"""


def _chromium() -> str:
    for name in ("chromium", "chromium-browser"):
        found = shutil.which(name)
        if found:
            return found
    pytest.fail("Chromium is not installed: apt-get install -y chromium")


def draw(texts: list[str], tmp: Path) -> list[dict[str, object]]:
    script = tools.NODE_TOOLS / "node_modules" / "mermaid" / "dist" / "mermaid.min.js"
    if not script.exists():
        pytest.fail(f"{script} is missing: {tools.INSTALL_HINT}")
    page = tmp / "page.html"
    page.write_text(_PAGE % {"mermaid": script.as_uri(), "texts": json.dumps(texts)}, encoding="utf-8")
    args = [
        _chromium(),
        "--headless",
        "--no-sandbox",
        "--disable-gpu",
        "--disable-background-networking",
        "--disable-component-update",
        "--allow-file-access-from-files",
        "--virtual-time-budget=60000",
        "--dump-dom",
        page.as_uri(),
    ]
    proc = subprocess.run(args, capture_output=True, text=True, timeout=300, check=False)
    found = re.search(r'<pre id="result">(.*?)</pre>', proc.stdout, re.S)
    assert found is not None, proc.stderr[-2000:]
    assert found.group(1), proc.stderr[-2000:]
    return json.loads(html.unescape(found.group(1)))


def _check(cases: list[Flow], texts: list[str], tmp: Path) -> None:
    for flow, text, result in zip(cases, texts, draw(texts, tmp), strict=True):
        assert result["ok"], (flow.name, result, text)
        assert result["markup"] == 0, text
        # Mermaid draws a name's own line break either inside the text or as a <br>: accept both.
        shown = {tools.unjoined(line) for line in result["lines"]}
        names = {tools.unjoined(n) for n in _names(flow)}
        missing = {n for n in names if n not in shown and not set(n.split("\n")) <= shown}
        assert missing == set(), (missing, text)


def test_every_example_draws_with_its_names(tmp_path: Path) -> None:
    cases = [f for f in ALL.values() for _ in (0, 1)]
    texts = [render(f, "mermaid", cycled(f) if i % 2 else None) for i, f in enumerate(cases)]
    _check(cases, texts, tmp_path)


def test_names_holding_mermaids_placeholders_draw_as_written(tmp_path: Path) -> None:
    """Mermaid turns every `¶ß` and `ﬂ°` left in its drawing into `;` and `&`, coded or not."""
    cases = [Flow.init("f").input(name, int) for name in ("a¶ßb", "ﬂ°°65¶ß", "ﬂ°x", "¶ß+-.->EÙ", "\\n")]
    _check(cases, [render(f, "mermaid") for f in cases], tmp_path)


@settings(  # derandomized, as tests/diagrams/test_hostile_names.py's BATCH (a run's verdict is the code's)
    max_examples=2,
    derandomize=True,
    deadline=None,
    phases=(Phase.explicit, Phase.reuse, Phase.generate),
    suppress_health_check=[
        HealthCheck.too_slow,
        HealthCheck.data_too_large,
        HealthCheck.function_scoped_fixture,
    ],
)
@given(st.lists(flows(), min_size=10, max_size=10))
def test_hostile_names_draw_as_text(tmp_path: Path, batch: list[Flow]) -> None:
    texts = [render(f, "mermaid", cycled(f)) for f in batch]
    _check(batch, texts, tmp_path)
