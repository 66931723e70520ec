"""The rules the docs' examples are checked by: how expected output matches, and what a page may hold."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.docs.fences import blocks, exit_code, matches, sessions


@pytest.mark.parametrize(
    ("expected", "actual", "match"),
    [
        (["1 of 1"], ["1 of 1"], True),
        (["1 of 1"], ["1 of 2"], False),
        (["a  b"], ["a      b  "], True),  # a run of spaces matches any run; trailing spaces ignored
        (["a b"], ["ab"], False),
        (["demo  ...  x"], ["demo  2026-12-01 19:32  x"], True),
        (["x", "...", "z"], ["x", "1", "2", "z"], True),
        (["x", "...", "z"], ["x", "z"], True),
        (["x", "...", "z"], ["x", "y"], False),
        (["x"], ["x", "more"], False),
        (["a.c"], ["abc"], False),  # only `...` is a wildcard
    ],
)
def test_expected_output_matching(expected: list[str], actual: list[str], match: bool) -> None:
    assert matches(expected, actual) is match


def test_exit_code_line() -> None:
    assert exit_code(["CommandError: no", "[exit 2]"]) == (2, ["CommandError: no"])
    assert exit_code(["done"]) == (0, ["done"])


def test_blocks_marks_and_sessions(tmp_path: Path) -> None:
    page = tmp_path / "page.md"
    page.write_text(
        "# t\n\n<!-- illustrative -->\n```sh\nls\n```\n\n```console\n$ python manage.py flowdeck ls\n"
        "EXECUTION\n$ python manage.py flowdeck parked wf\n```\n"
    )
    shell, console = blocks(page)
    assert (shell.language, shell.mark, shell.text, shell.line) == ("sh", "<!-- illustrative -->", "ls\n", 4)
    assert (console.language, console.mark) == ("console", "")
    assert sessions(console) == [
        ("python manage.py flowdeck ls", ["EXECUTION"]),
        ("python manage.py flowdeck parked wf", []),
    ]
    page.write_text("```python\nprint(1)\n")
    with pytest.raises(AssertionError, match="never closed"):
        blocks(page)
