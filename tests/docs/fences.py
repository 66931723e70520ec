"""The fenced blocks of the docs pages, and the rules every block keeps.

Every block names its language. `python` blocks are run, each as a script of its own; a `text` block marked
`<!-- output -->` right after one is what that script must print. `console` blocks are operator sessions:
each `$ python manage.py …` line is run and the lines under it are what it must print (`...` stands for any
text within a line; a line `...` alone for any number of lines; a last line `[exit N]` for a refusal, whose
stderr is then part of what it prints). A `python` block marked `<!-- from examples/PATH -->` is an excerpt
of that file, which a test of its own runs (the shop is a whole Django project, run by
tests/acceptance/test_shop.py): it must be the file's text, its parts in order (a line `# ...` stands for
lines left out). `sh`, `json` and `text` blocks that are
not output are illustrative (commands for your own machines, request bodies, layouts) and must be marked
`<!-- illustrative -->`, so no runnable example slips in untested.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
DOCS = ROOT / "docs"

RUN = frozenset({"python", "console"})
ILLUSTRATIVE = frozenset({"sh", "json", "text"})
OUTPUT_MARK = "<!-- output -->"
ILLUSTRATIVE_MARK = "<!-- illustrative -->"
EXCERPT_MARK = re.compile(r"<!-- from (examples/\S+) -->")
ELIDED = "# ..."
_FENCE = re.compile(r"^```(\S*)\s*$")


@dataclass(frozen=True)
class Block:
    page: str
    line: int  # 1-based line of the opening fence
    language: str
    mark: str  # the HTML comment on the last non-blank line before the fence, or ""
    text: str

    @property
    def where(self) -> str:
        return f"{self.page}:{self.line}"

    @property
    def excerpt_of(self) -> Path | None:
        """The file a python block is an excerpt of (None: the block runs as a script of its own)."""
        found = EXCERPT_MARK.fullmatch(self.mark)
        return ROOT / found.group(1) if found and self.language == "python" else None

    def parts(self) -> list[str]:
        """An excerpt's parts: the runs of lines between the `# ...` elisions."""
        chunks: list[list[str]] = [[]]
        for line in self.text.splitlines():
            if line.strip() == ELIDED:
                chunks.append([])
            else:
                chunks[-1].append(line)
        return ["\n".join(chunk).strip("\n") for chunk in chunks if "".join(chunk).strip()]


def pages() -> list[Path]:
    return sorted(DOCS.rglob("*.md"))


def blocks(path: Path, root: Path = DOCS) -> list[Block]:
    """The page's fenced blocks, in order. An unclosed fence is an error."""
    lines = path.read_text().splitlines()
    name = str(path.relative_to(root)) if path.is_relative_to(root) else path.name
    found: list[Block] = []
    index = 0
    while index < len(lines):
        opening = _FENCE.match(lines[index])
        if not opening:
            index += 1
            continue
        start = index
        index += 1
        body: list[str] = []
        while index < len(lines) and lines[index].rstrip() != "```":
            body.append(lines[index])
            index += 1
        if index == len(lines):
            raise AssertionError(f"{name}:{start + 1}: the fence is never closed")
        found.append(Block(name, start + 1, opening.group(1), _mark(lines, start), "\n".join(body) + "\n"))
        index += 1
    return found


def _mark(lines: list[str], fence: int) -> str:
    for line in reversed(lines[:fence]):
        if line.strip():
            stripped = line.strip()
            return stripped if stripped.startswith("<!--") and stripped.endswith("-->") else ""
    return ""


def all_blocks() -> list[Block]:
    return [block for path in pages() for block in blocks(path)]


def python_examples() -> list[tuple[Block, Block | None]]:
    """Every python block with the output block it must print (None: not checked, only run to its end)."""
    found: list[tuple[Block, Block | None]] = []
    for path in pages():
        page = blocks(path)
        for index, block in enumerate(page):
            if block.language != "python" or block.excerpt_of is not None:
                continue
            following = page[index + 1] if index + 1 < len(page) else None
            shown = following if following is not None and following.mark == OUTPUT_MARK else None
            found.append((block, shown))
    return found


def excerpts() -> list[Block]:
    """Every python block that is an excerpt of a file the tests run."""
    return [block for block in all_blocks() if block.excerpt_of is not None]


def console_pages() -> dict[str, list[Block]]:
    """The console blocks of each page, in page order (a page's sessions share one database)."""
    found: dict[str, list[Block]] = {}
    for block in all_blocks():
        if block.language == "console":
            found.setdefault(block.page, []).append(block)
    return found


def sessions(block: Block) -> list[tuple[str, list[str]]]:
    """A console block's commands (without `$ `) with the output lines expected under each."""
    steps: list[tuple[str, list[str]]] = []
    for line in block.text.splitlines():
        if line.startswith("$ "):
            steps.append((line[2:], []))
        elif not steps:
            raise AssertionError(f"{block.where}: a console block starts with a `$ ` command line")
        else:
            steps[-1][1].append(line)
    return steps


def exit_code(expected: list[str]) -> tuple[int, list[str]]:
    """A session's expected exit code: 0, or N when its output ends with a line `[exit N]` (the lines
    before it are then stdout and stderr together)."""
    if expected and (last := re.fullmatch(r"\[exit (\d+)\]", expected[-1].strip())):
        return int(last.group(1)), expected[:-1]
    return 0, expected


def _pattern(line: str) -> str:
    """One expected line as a regex: `...` is any text, a run of spaces is any run of spaces (tables)."""
    return ".*".join(re.sub(r"(?:\\ )+", " +", re.escape(part)) for part in line.split("..."))


def matches(expected: list[str], actual: list[str]) -> bool:
    """Line by line, trailing spaces ignored, a run of spaces matching any run; `...` within a line is any
    text, alone any lines."""
    patterns = [_pattern(line.rstrip()) for line in expected]
    if not patterns:
        return True
    regex = "".join("(?:.*\n)*?" if p == ".*" else p + "\n" for p in patterns)
    return re.fullmatch(regex, "".join(line.rstrip() + "\n" for line in actual)) is not None
