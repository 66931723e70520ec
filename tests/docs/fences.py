"""The fenced blocks of the docs pages and of README.md, and the rules every block keeps.

Every block names its language. `python` blocks are run, each as a script of its own; a `text` block marked
`<!-- output -->` right after one is what that script must print. `console` blocks are operator sessions:
each `$ python manage.py …` line is run and the lines under it are what it must print (`...` stands for any
text within a line; a line `...` alone for any number of lines; a last line `[exit N]` for a refusal, whose
stderr is then part of what it prints). A `python` or `sh` block marked `<!-- from PATH -->` is an excerpt
of that file of the repository, which a test (or CI) runs (the shop is a whole Django project, run by
tests/acceptance/test_shop.py): it must be the file's text, its parts in order (a line `# ...` stands for
lines left out; a part may sit deeper indented in the file, in a function's body). A `python` block marked
`<!-- startproject: append to FILE -->` is what the docs add to a fresh `startproject`'s FILE, applied by
tests/acceptance/test_wheel_project.py. An `sh` block marked `<!-- run by PATH -->` is run by that test or
CI script (tests/docs/test_examples.py runs the `manage.py` lines of those naming it, on a demo-seeded
database). `sh`, `json`, `yaml` and `text` blocks that are none of these and not output are illustrative
(commands for your own machines, request bodies, layouts) and must be marked `<!-- illustrative -->`, so no
runnable example slips in untested.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
DOCS = ROOT / "docs"
README = ROOT / "README.md"
SHOP_README = ROOT / "examples" / "shop" / "README.md"

RUN = frozenset({"python", "console"})
ILLUSTRATIVE = frozenset({"sh", "json", "yaml", "text"})
OUTPUT_MARK = "<!-- output -->"
ILLUSTRATIVE_MARK = "<!-- illustrative -->"
EXCERPT_MARK = re.compile(r"<!-- from (\S+) -->")
EXCERPTED = frozenset({"python", "sh"})
RUN_BY_MARK = re.compile(r"<!-- run by (\S+) -->")
# A python block a fresh `startproject` gets at the end of its FILE (settings.py, urls.py, asgi.py), as the
# docs tell a developer to add it: tests/acceptance/test_wheel_project.py applies them all, from README.md
# and docs/django.md, and the two pages show the same block for the same file.
STARTPROJECT_MARK = re.compile(r"<!-- startproject: append to (\S+) -->")
STARTPROJECT_PAGES = ("README.md", "docs/django.md")
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
        """The file a python or sh block is an excerpt of (None: not an excerpt)."""
        found = EXCERPT_MARK.fullmatch(self.mark)
        return ROOT / found.group(1) if found and self.language in EXCERPTED else None

    @property
    def run_by(self) -> Path | None:
        """The test or CI script that runs an sh block (None: not so marked)."""
        found = RUN_BY_MARK.fullmatch(self.mark)
        return ROOT / found.group(1) if found and self.language == "sh" else None

    @property
    def appended_to(self) -> str | None:
        """The startproject module a python block is added to (None: not such a block)."""
        found = STARTPROJECT_MARK.fullmatch(self.mark)
        return found.group(1) if found and self.language == "python" else None

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
    """The docs pages, README.md and the shop's README (their blocks keep the same rules)."""
    return [README, SHOP_README, *sorted(DOCS.rglob("*.md"))]


def blocks(path: Path, root: Path = DOCS) -> list[Block]:
    """The page's fenced blocks, in order. An unclosed fence is an error."""
    lines = path.read_text().splitlines()
    base = next((b for b in (root, ROOT) if path.is_relative_to(b)), path.parent)
    name = str(path.relative_to(base))
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
            if block.language != "python" or block.excerpt_of is not None or block.appended_to:
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


def startproject_snippets() -> dict[str, str]:
    """What the docs add to each module of a fresh `startproject`: {"settings.py": text, ...}. README.md
    and docs/django.md must agree where both show one."""
    found: dict[str, tuple[str, str]] = {}
    for page in STARTPROJECT_PAGES:
        for block in blocks(ROOT / page, ROOT):
            if block.appended_to is None:
                continue
            where, text = found.setdefault(block.appended_to, (block.where, block.text))
            assert text == block.text, f"{block.where} and {where} add different text to {block.appended_to}"
    return {name: text for name, (_, text) in found.items()}
