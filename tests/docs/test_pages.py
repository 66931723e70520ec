"""The pages say what the code says: the stop codes with their advice, every CLI verb, every page in the
nav, the README's quick start pointing into the docs; and the examples are formatted."""

from __future__ import annotations

import re
import subprocess
import sys

import pytest
import yaml

from flowdeck.console.cli import FLOW_VERBS
from flowdeck.engine.errors import STOP_CODES
from tests.docs.fences import DOCS, ROOT, Block, all_blocks


def test_every_stop_code_is_on_the_failures_page_with_its_advice() -> None:
    page = (DOCS / "failures.md").read_text()
    for code, text in STOP_CODES.items():
        assert f"| `{code}` | {text} |" in page, f"failures.md lacks {code} as STOP_CODES says it"
    listed = set(re.findall(r"^\| `(F\d{4})` \|", page, re.MULTILINE))
    assert listed == set(STOP_CODES)


def test_every_cli_verb_is_on_the_operating_page() -> None:
    page = (DOCS / "operating.md").read_text()
    for verb in FLOW_VERBS:
        assert f"`flowdeck {verb}" in page, verb
    for command in ("`flowdeck_workers ", "`demo "):
        assert command in page


def test_every_page_is_in_the_nav_once() -> None:
    config = yaml.safe_load((ROOT / "mkdocs.yml").read_text())
    in_nav = [next(iter(entry.values())) for entry in config["nav"]]
    assert sorted(in_nav) == sorted(str(p.relative_to(DOCS)) for p in DOCS.rglob("*.md"))
    assert len(set(in_nav)) == len(in_nav)
    assert config["strict"] is True


def test_the_readme_quick_start_points_into_the_docs() -> None:
    readme = (ROOT / "README.md").read_text()
    quick_start = readme.split("## Try it", 1)[1].split("\n## ", 1)[0]
    assert "](docs/index.md)" in quick_start
    assert "](docs/getting-started.md)" in quick_start


@pytest.mark.parametrize(
    "block",
    [b for b in all_blocks() if b.language == "python" and b.excerpt_of is None],
    ids=lambda b: b.where,
)
def test_python_examples_are_formatted(block: Block) -> None:
    """ruff's format at 98 columns, so no example scrolls sideways on the site (an excerpt keeps its
    file's format, which the project's own ruff checks)."""
    done = subprocess.run(
        [sys.executable, "-m", "ruff", "format", "--line-length", "98", "--stdin-filename", "x.py", "-"],
        input=block.text,
        capture_output=True,
        text=True,
        check=True,
    )
    assert done.stdout == block.text, f"{block.where}: run ruff format --line-length 98 on it"
