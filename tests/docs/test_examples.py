"""Every example in docs/ is executed: each python block as a script of its own (its printed output checked
when the page shows it), each console block's commands against a demo-seeded SQLite database, and every
other block is marked illustrative (tests/docs/fences.py has the rules)."""

from __future__ import annotations

import os
import shlex
import subprocess
import sys
from pathlib import Path

import pytest

from tests.acceptance.support import manage, ok, sqlite_url
from tests.docs.fences import (
    ILLUSTRATIVE,
    ILLUSTRATIVE_MARK,
    OUTPUT_MARK,
    ROOT,
    RUN,
    Block,
    all_blocks,
    console_pages,
    excerpts,
    exit_code,
    matches,
    python_examples,
    sessions,
)

PYTHON_EXAMPLES = python_examples()
CONSOLE_PAGES = console_pages()
SCRIPT_TIMEOUT = 120


def test_the_docs_have_examples_of_both_kinds() -> None:
    assert len(PYTHON_EXAMPLES) >= 10
    assert {"getting-started.md", "operating.md"} <= set(CONSOLE_PAGES)


@pytest.mark.parametrize("block", all_blocks(), ids=lambda b: b.where)
def test_every_block_is_run_or_marked_illustrative(block: Block) -> None:
    assert block.language, f"{block.where}: a fenced block names its language"
    if block.language in RUN:
        assert block.mark != ILLUSTRATIVE_MARK, f"{block.where}: {block.language} blocks are always run"
        return
    assert block.language in ILLUSTRATIVE, (
        f"{block.where}: ```{block.language} is neither run ({sorted(RUN)}) nor illustrative"
    )
    assert block.mark in (ILLUSTRATIVE_MARK, OUTPUT_MARK), (
        f"{block.where}: a {block.language} block is not run: mark it {ILLUSTRATIVE_MARK}"
    )
    if block.mark == OUTPUT_MARK:
        shown = {output.where for _, output in PYTHON_EXAMPLES if output is not None}
        assert block.language == "text", f"{block.where}: an output block is ```text"
        assert block.where in shown, f"{block.where}: an output block follows a python block"


@pytest.mark.parametrize(("block", "output"), [pytest.param(b, o, id=b.where) for b, o in PYTHON_EXAMPLES])
def test_python_example_runs(block: Block, output: Block | None, tmp_path: Path) -> None:
    script = tmp_path / "example.py"
    script.write_text(block.text)
    env = {**os.environ, "PYTHONPATH": str(ROOT), "PYTHONWARNINGS": "error"}
    done = subprocess.run(
        [sys.executable, str(script)],
        cwd=tmp_path,
        env=env,
        capture_output=True,
        text=True,
        timeout=SCRIPT_TIMEOUT,
        check=False,
    )
    assert done.returncode == 0, f"{block.where} failed:\n{done.stdout}\n{done.stderr}"
    if output is not None:
        said = output.text
        assert done.stdout == said, f"{block.where} printed:\n{done.stdout}\nthe page says:\n{said}"


@pytest.mark.parametrize("block", excerpts(), ids=lambda b: b.where)
def test_an_excerpt_is_the_text_of_a_file_the_tests_run(block: Block) -> None:
    source = block.excerpt_of
    assert source is not None
    assert source.is_file(), f"{block.where}: no file {source.relative_to(ROOT)}"
    text, at = source.read_text(), 0
    for part in block.parts():
        found = text.find(part, at)
        assert found >= 0, f"{block.where}: not in {source.relative_to(ROOT)} (in this order):\n{part}"
        at = found + len(part)


@pytest.mark.slow
@pytest.mark.parametrize("page", sorted(CONSOLE_PAGES))
def test_console_session_runs(page: str, tmp_path: Path) -> None:
    path = tmp_path / "docs.sqlite3"
    url = sqlite_url(path)
    ok(manage(url, "demo", "--no-serve", "--database", str(path)))
    for block in CONSOLE_PAGES[page]:
        for command, expected in sessions(block):
            words = shlex.split(command)
            assert words[:2] == ["python", "manage.py"], f"{block.where}: `{command}` is not manage.py"
            code, expected = exit_code(expected)
            result = manage(url, *words[2:])
            assert result.returncode == code, f"{block.where}:\n{result.explain()}"
            printed = result.stdout + (result.stderr if code else "")
            assert matches(expected, printed.splitlines()), (
                f"{block.where}: `{command}` printed:\n{printed}\nthe page says:\n" + "\n".join(expected)
            )
