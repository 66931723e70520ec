"""Every example in docs/ and README.md is executed: each python block as a script of its own (its printed
output checked when the page shows it), each console block's commands and each `manage.py` line of the sh
blocks marked `<!-- run by tests/docs/test_examples.py -->` against a demo-seeded SQLite database; or it is
an excerpt of a file a test runs, or (python) added to a startproject by
tests/acceptance/test_wheel_project.py, or (sh) run by the test or CI script it names; every other block is
marked illustrative (tests/docs/fences.py has the rules)."""

from __future__ import annotations

import os
import shlex
import subprocess
import sys
import textwrap
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


THIS_TEST = Path(__file__).resolve()
RUN_HERE = [block for block in all_blocks() if block.run_by == THIS_TEST]


@pytest.mark.parametrize("block", all_blocks(), ids=lambda b: b.where)
def test_every_block_is_run_or_marked_illustrative(block: Block) -> None:
    assert block.language, f"{block.where}: a fenced block names its language"
    if block.language in RUN:
        assert block.mark != ILLUSTRATIVE_MARK, f"{block.where}: {block.language} blocks are always run"
        return
    if block.excerpt_of is not None or block.run_by is not None:
        return  # checked below: the file it is taken from, the test or script that runs it
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
        # the part as shown, or deeper indented (lines of a function's body shown from its left edge)
        found, width = next(
            ((f, len(i)) for i in ("", "    ", "        ") if (f := text.find(_indent(part, i), at)) >= 0),
            (-1, 0),
        )
        assert found >= 0, f"{block.where}: not in {source.relative_to(ROOT)} (in this order):\n{part}"
        at = found + len(_indent(part, " " * width))


def _indent(part: str, prefix: str) -> str:
    return textwrap.indent(part, prefix)[len(prefix) :]  # the first line is found where it begins


@pytest.mark.parametrize("block", [b for b in all_blocks() if b.run_by], ids=lambda b: b.where)
def test_a_block_run_by_a_test_names_one_that_runs_it(block: Block) -> None:
    runner = block.run_by
    assert runner is not None
    assert runner.is_file(), f"{block.where}: no file {runner.relative_to(ROOT)}"
    if runner == THIS_TEST:
        assert _manage_lines(block), f"{block.where}: no `python manage.py` line to run"
        return
    # a script that takes the block from the page, or holds its commands
    said = runner.read_text()
    commands = [line.split("  #")[0].strip() for line in block.text.splitlines() if line.strip()]
    assert block.page in said or all(c in said for c in commands), (
        f"{block.where}: {runner.relative_to(ROOT)} neither reads {block.page} nor runs {commands}"
    )


def _manage_lines(block: Block) -> list[list[str]]:
    """The block's `python manage.py` commands (a virtualenv's python too), as argv after manage.py."""
    found = []
    for line in block.text.splitlines():
        words = shlex.split(line, comments=True)
        if len(words) >= 2 and words[0].endswith("python") and words[1] == "manage.py":
            found.append(words[2:])
    return found


@pytest.mark.slow
def test_sh_blocks_run_here_run_on_the_demo_database(tmp_path: Path) -> None:
    assert RUN_HERE, "README.md's demo commands are run here"
    path = tmp_path / "readme.sqlite3"
    url = sqlite_url(path)
    ok(manage(url, "demo", "--no-serve", "--database", str(path)))
    for block in RUN_HERE:
        for argv in _manage_lines(block):
            result = manage(url, *argv)
            assert result.returncode == 0, f"{block.where}:\n{result.explain()}"


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
